"""python -m symgrad: the command line (extras/cli.py)."""
import sys

from .extras.cli import main

if __name__ == "__main__":  # imported (by a documentation tool, say), it runs nothing
    sys.exit(main())
