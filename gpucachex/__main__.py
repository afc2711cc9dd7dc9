"""`python -m gpucachex` runs the command line."""
import sys

from gpucachex.cli import main

sys.exit(main())
