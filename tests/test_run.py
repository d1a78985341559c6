"""`run.py` with no arguments serves the development mode (decisions 18)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

import orjson

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parent.parent


def test_run_py_serves_development_mode_and_refuses_bad_production(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "MPS_PORT": str(port), "MPS_DATA_DIR": str(tmp_path / "var")}
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        body = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and body is None:
            try:
                with urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=2) as response:
                    body = orjson.loads(response.read())
            except OSError:
                time.sleep(0.2)
        assert body is not None, "server did not answer"
        assert body["status"] == "up"
        assert (tmp_path / "var" / "mps.db").exists()
    finally:
        server.terminate()
        server.wait(timeout=10)

    refused = subprocess.run(
        [sys.executable, str(ROOT / "run.py"), "--mode", "production"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert refused.returncode == 2
    assert "MPS_DATABASE_URL" in refused.stderr
