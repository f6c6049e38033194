"""``python -m specconform.harness.bench [OUT_DIR]``: the bench run (``specconform.harness.bench.runs.main``)."""

import sys

from .runs import main

raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else None))
