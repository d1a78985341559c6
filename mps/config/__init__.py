"""Settings from command-line options and environment variables (decisions 18).

Development (the default) runs on embedded SQLite with an in-process broker and generates its
secrets into the data directory. Production refuses to start unless Postgres, AMQP and both
secrets are given explicitly.

The package, by concern:

    settings.py       `Settings`, what a node runs with, and `ConfigError`, which refuses a start
    load.py           `load_settings`: options over variables, development's defaults, production's
                      demands
    checks.py         the rule each setting must pass, and the bounds they hold it to
    command_line.py   `run.py`'s options and the rest of what `run.py --help` prints
    data_dir.py       the data directory, the owner's only, and development's generated secrets
"""

from __future__ import annotations

# Of the bounds the checks hold settings to (mps.config.checks), only production's drain
# grace matters outside them: a deployment's stop timeout must outwait it.
from mps.config.checks import PRODUCTION_SHUTDOWN_GRACE
from mps.config.load import load_settings
from mps.config.settings import ConfigError, Network, Settings

__all__ = [
    "PRODUCTION_SHUTDOWN_GRACE",
    "ConfigError",
    "Network",
    "Settings",
    "load_settings",
]
