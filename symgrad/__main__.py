"""python -m symgrad: the command line (extras/cli.py)."""
import sys

from .extras.cli import main

sys.exit(main())
