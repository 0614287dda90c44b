"""``python -m pieceworks``: the same command line as ``pieceworks``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
