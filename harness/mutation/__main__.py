"""``python -m specconform.harness.mutation``: see ``specconform.harness.mutation.cli``."""

import sys

from specconform.harness.mutation.cli import main

sys.exit(main())
