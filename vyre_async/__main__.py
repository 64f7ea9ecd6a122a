"""``python -m vyre_async``: the ``vyre-async`` command line."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
