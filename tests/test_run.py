"""`run.py` with no arguments serves the development mode (decisions 18)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers import port_in_use
from tests.server import RUN_PY, RunningServer, run_py
from tests.setting_names import settings_the_service_reads


def test_run_py_serves_development_mode_and_refuses_bad_production(tmp_path: Path) -> None:
    with RunningServer(tmp_path) as server:
        body = server.call("/api/v1/health")
        assert body["status"] == "up"
        assert (server.data_dir / "mps.db").exists()

    refused = run_py(
        "--mode", "production", cwd=tmp_path, env={"MPS_DATA_DIR": str(server.data_dir)}, timeout=30
    )
    assert refused.returncode == 2
    assert "MPS_DATABASE_URL" in refused.stderr


def test_a_port_in_use_is_one_clear_line_not_a_traceback(tmp_path: Path) -> None:
    with port_in_use() as port:
        refused = run_py(
            "--port", str(port), cwd=tmp_path, env={"MPS_DATA_DIR": str(tmp_path / "data")}
        )

    assert refused.returncode == 1
    assert f"run.py: cannot listen on 127.0.0.1:{port}" in refused.stderr
    assert "Traceback" not in refused.stderr
    # and nothing claimed to be listening before the error said it could not
    assert "listening on" not in refused.stderr


def test_run_py_help_names_every_setting_the_service_reads_and_both_subcommands() -> None:
    # given: the settings read by the configuration, run.py itself and the S3 object store
    read = settings_the_service_reads()
    # the scan finds the settings (a refactor that hid them from it would pass vacuously)
    assert {
        "MPS_DATABASE_URL",
        "MPS_SESSION_SECRET",
        "MPS_LOG_FORMAT",
        "MPS_SHUTDOWN_GRACE",
    } <= read

    # when
    shown = run_py("--help", timeout=30)

    # then
    assert shown.returncode == 0, shown.stderr
    missing = sorted(name for name in read if not re.search(rf"\b{name}\b", shown.stdout))
    assert missing == []
    assert "run.py reseal" in shown.stdout
    assert "run.py kyc pending" in shown.stdout
    assert "run.py kyc review" in shown.stdout
    # and every subcommand and the workers' option, in the help and in run.py's own docstring
    docstring = ast.get_docstring(ast.parse(RUN_PY.read_text("utf-8"))) or ""
    for usage in ("run.py migrate [--check]", "run.py reseal [--check]", "run.py kyc pending"):
        assert usage in shown.stdout
        assert usage in docstring
    assert re.search(r"^\s+--workers\b", shown.stdout, re.MULTILINE)
    assert "run.py --workers" in docstring
