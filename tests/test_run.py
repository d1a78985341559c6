"""`run.py` with no arguments serves the development mode (decisions 18)."""

from __future__ import annotations

import ast
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.server import RUN_PY, RunningServer, server_environment


def test_run_py_serves_development_mode_and_refuses_bad_production(tmp_path: Path) -> None:
    with RunningServer(tmp_path) as server:
        body = server.call("/api/v1/health")
        assert body["status"] == "up"
        assert (server.data_dir / "mps.db").exists()

    refused = subprocess.run(
        [sys.executable, str(RUN_PY), "--mode", "production"],
        cwd=tmp_path,
        env=server_environment({"MPS_DATA_DIR": str(server.data_dir)}),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert refused.returncode == 2
    assert "MPS_DATABASE_URL" in refused.stderr


def test_a_port_in_use_is_one_clear_line_not_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = subprocess.run(
            [sys.executable, str(RUN_PY), "--port", str(port)],
            cwd=tmp_path,
            env=server_environment({"MPS_DATA_DIR": str(tmp_path / "data")}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    assert refused.returncode == 1
    assert f"run.py: cannot listen on 127.0.0.1:{port}" in refused.stderr
    assert "Traceback" not in refused.stderr
    # and nothing claimed to be listening before the error said it could not
    assert "listening on" not in refused.stderr


def _settings_read_by(source: Path) -> set[str]:
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


def test_run_py_help_names_every_setting_the_service_reads_and_both_subcommands() -> None:
    # given: the settings read by the configuration, run.py itself and the S3 object store
    package = RUN_PY.parent / "mps"
    read = set().union(
        *(
            _settings_read_by(source)
            for source in (
                package / "config.py",
                RUN_PY,
                package / "adapters" / "storage" / "s3.py",
            )
        )
    )
    # the scan finds the settings (a refactor that hid them from it would pass vacuously)
    assert {
        "MPS_DATABASE_URL",
        "MPS_SESSION_SECRET",
        "MPS_LOG_FORMAT",
        "MPS_SHUTDOWN_GRACE",
    } <= read

    # when
    shown = subprocess.run(
        [sys.executable, str(RUN_PY), "--help"],
        env=server_environment(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    # then
    assert shown.returncode == 0, shown.stderr
    missing = sorted(name for name in read if not re.search(rf"\b{name}\b", shown.stdout))
    assert missing == []
    assert "run.py reseal" in shown.stdout
    assert "run.py kyc pending" in shown.stdout
    assert "run.py kyc review" in shown.stdout
