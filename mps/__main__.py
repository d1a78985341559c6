"""`python -m mps`: the merchant's command line (mps.cli)."""

from mps.cli.main import main

raise SystemExit(main())
