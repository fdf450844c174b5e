"""`python -m shotbench` is the `shotbench` command (inside every build environment too)."""

import sys

from shotbench.cli import main

sys.exit(main())
