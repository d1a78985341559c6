"""`python -m bench.chaos`: see the package's docstring for what runs and what is checked."""

import sys

from bench.chaos.cli import main

sys.exit(main())
