"""Structured logs: `MPS_LOG_FORMAT=json` writes one JSON object per line, redacted as text lines
are (mps.logs), and the access log's JSON and sampled variants (mps.http.access_log)."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import Mock
from urllib.error import HTTPError
from urllib.request import urlopen

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer, make_mocked_request

from mps.http.access_log import BatchedAccessLog, access_log_fraction
from mps.logs import JsonFormatter, RedactSecrets
from tests.served import JWT, logged_by_run_py
from tests.server import RunningServer, run_py


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of `text` that is a JSON object, decoded."""
    return [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]


# Application logs


def test_run_py_json_log_lines_parse_and_are_redacted() -> None:
    # given run.py's logging set up for JSON, when a record carrying a token is logged
    result = logged_by_run_py(
        f"logging.getLogger('probe').warning('verify with %s', '{JWT}', "
        f"extra={{'attempt': 2, 'header': 'Bearer {JWT}'}})",
        {"MPS_LOG_FORMAT": "json"},
    )

    # then its line is one JSON object, with the token redacted in the message and the fields
    records = [r for r in json_lines(result.stderr) if r["logger"] == "probe"]
    assert len(records) == 1, result.stderr
    record = records[0]
    assert record["level"] == "WARNING"
    assert record["message"] == "verify with [jwt]"
    assert record["attempt"] == 2
    assert record["header"] == "Bearer [redacted]"
    assert record["time"].endswith("Z") and len(record["time"]) == 24
    assert JWT not in result.stderr


def test_json_formatter_writes_exceptions_and_redacts_fields_that_are_not_text() -> None:
    # given a handler as run.py sets it up for JSON: the formatter behind the redaction filter
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger("tests.json_logs")
    logger.propagate = False
    logger.addHandler(handler)

    # when a failure is logged with a token in the exception and in a structured field
    try:
        try:
            raise ValueError(f"refused Bearer {JWT}")
        except ValueError:
            logger.exception("sign-in failed", extra={"request": {"token": JWT, "try": 1}})
    finally:
        logger.removeHandler(handler)

    # then
    line = stream.getvalue()
    assert line.count("\n") == 1
    record = orjson.loads(line)
    assert record["level"] == "ERROR"
    assert record["logger"] == "tests.json_logs"
    assert record["message"] == "sign-in failed"
    assert "ValueError: refused Bearer [redacted]" in record["exception"]
    assert isinstance(record["request"], str) and "'try': 1" in record["request"]
    assert JWT not in line


def test_run_py_refuses_an_unknown_log_format_or_access_log_setting(tmp_path: Path) -> None:
    for setting in ({"MPS_LOG_FORMAT": "xml"}, {"MPS_ACCESS_LOG": "sample:2"}):
        refused = run_py(
            cwd=tmp_path, env={"MPS_DATA_DIR": str(tmp_path / "var"), **setting}, timeout=30
        )
        assert refused.returncode == 2
        assert next(iter(setting)) in refused.stderr


# The access log


def test_access_log_setting_reads_on_off_and_a_sample_fraction() -> None:
    assert access_log_fraction("on") == 1
    assert access_log_fraction("OFF") == 0
    assert access_log_fraction("no") == 0
    assert access_log_fraction("sample:0.01") == 0.01
    assert access_log_fraction("sample:1") == 1
    for bad in ("sample:0", "sample:1.5", "sample:some", "sample:"):
        with pytest.raises(ValueError, match="sample"):
            access_log_fraction(bad)


async def test_json_access_lines_name_the_route_path_status_and_request_id(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given the app served with the JSON access log, into a stream of its own
    access_log = BatchedAccessLog.configured(as_json=True)
    access_log.stream = stream = io.StringIO()
    server = TestServer(make_app())
    await server.start_server(access_log_class=access_log)
    client: TestClient[Any, Any] = await aiohttp_client(server)

    # when a payment is asked for by id, with a query string, and without a credential
    response = await client.get("/api/v1/merchant/payments/pay_0123456789?token=abc")
    access_log.flush()

    # then the line holds the declared route, the path without its query, and the request id
    assert response.status == 401
    [line] = json_lines(stream.getvalue())
    assert line == {
        "time": line["time"],
        "logger": "access",
        "requestId": response.headers["X-Request-Id"],
        "peer": "127.0.0.1",
        "method": "GET",
        "route": "/api/v1/merchant/payments/{id}",
        "path": "/api/v1/merchant/payments/pay_0123456789",
        "status": 401,
        "size": line["size"],
        "ms": line["ms"],
    }
    assert line["size"] > 0
    assert 0 < line["ms"] < 10_000


async def test_sampled_access_log_writes_about_its_fraction_of_requests() -> None:
    # given an access log keeping a tenth of its lines
    access_log = BatchedAccessLog.configured(sample=0.1)
    access_log.stream = stream = io.StringIO()
    logger = access_log(logging.getLogger("tests.access"), "")
    request = make_mocked_request("GET", "/api/v1/health")
    response = Mock(status=200, body_length=12)

    # when 4,000 requests are answered
    for _ in range(4000):
        logger.log(request, response, 0.001)
    access_log.flush()

    # then about 400 are written (the binomial's standard deviation is 19)
    lines = stream.getvalue().splitlines()
    assert 300 <= len(lines) <= 500
    assert all(" GET /api/v1/health 200 12B " in line for line in lines)


def test_served_json_logs_are_one_object_per_line(tmp_path: Path) -> None:
    # given run.py serving with JSON logs
    env = {"MPS_LOG_FORMAT": "json"}
    with RunningServer(tmp_path, env=env) as server:
        # when a request fails and one succeeds
        with pytest.raises(HTTPError) as refused:
            urlopen(f"{server.base_url}/api/v1/auth/me?email=ann@example.com", timeout=10)
        refused.value.close()
        server.call("/api/v1/health")

    # then every line the server wrote is a JSON object: its start, and each access line
    lines = server.log_text().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert any(r["logger"] == "mps.bootstrap" and r["level"] == "INFO" for r in records)
    access = {r["path"]: r for r in records if r["logger"] == "access"}
    assert access["/api/v1/auth/me"]["status"] == 401
    assert access["/api/v1/auth/me"]["route"] == "/api/v1/auth/me"
    assert access["/api/v1/health"]["status"] == 200
    assert "ann@example.com" not in server.log_text()
