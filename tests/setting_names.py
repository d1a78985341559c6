"""The settings the service reads from its environment, found in its source, for the tests that
keep the runbook and the example environment file in step with the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["ROOT", "settings_read_by", "settings_the_service_reads"]

ROOT = Path(__file__).resolve().parent.parent


def settings_read_by(source: Path) -> set[str]:
    """Every MPS_* name `source` passes to a call (env.get("MPS_…"), _secret_from_env(env,
    "MPS_…"), os.environ.get(…)): the settings it reads, not the ones its messages mention."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text("utf-8"))):
        if isinstance(node, ast.Call):
            for argument in node.args:
                value = argument.value if isinstance(argument, ast.Constant) else None
                if isinstance(value, str) and re.fullmatch(r"MPS_[A-Z0-9_]+", value):
                    names.add(value)
    return names


def settings_the_service_reads() -> set[str]:
    """The settings of mps/config/, run.py and the S3 object store (the ones `run.py --help`
    lists too), checked to hold the ones every node needs, so that a refactor hiding them from
    the scan cannot make a test pass vacuously."""
    package = ROOT / "mps"
    read = set().union(
        *(
            settings_read_by(source)
            for source in (
                *sorted((package / "config").glob("*.py")),
                ROOT / "run.py",
                package / "adapters" / "storage" / "s3.py",
            )
        )
    )
    assert {"MPS_DATABASE_URL", "MPS_SESSION_SECRET", "MPS_LOG_FORMAT", "MPS_S3_REGION"} <= read
    return read
