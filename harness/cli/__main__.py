"""``python -m specconform.harness.cli``: the ``specconform`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
