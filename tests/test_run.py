"""`run.py` with no arguments serves the development mode (decisions 18)."""

from __future__ import annotations

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
