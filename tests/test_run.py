"""`run.py` with no arguments serves the development mode (decisions 18)."""

from __future__ import annotations

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
