"""``python -m harness.mutation``: see ``harness.mutation.cli``."""

import sys

from harness.mutation.cli import main

sys.exit(main())
