"""One request, one id, end to end (mps.http.forwarded, mps.http.passing, mps.http.access_log):
a request that reaches a node through a balancer and is passed to the owner of its company's
shard is logged by both nodes under the id the client gets in `X-Request-Id`, and both log the
client's own address, the one the balancer vouched for, never the balancer's or the asking
node's (and never none).

Two real run.py nodes writing JSON access lines, trusting 127.0.0.1, behind a real nginx that
appends the client's address to X-Forwarded-For; the client connects to nginx from an address of
its own on loopback (any 127.x.y.z is this machine).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from tests.cluster import LocalCluster, sign_up_on
from tests.conftest import REQUIRE_SERVICES
from tests.helpers import eventually, free_port
from tests.test_balancer import stop_nginx

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD"}
NGINX = "/usr/sbin/nginx"
CLIENT = "127.0.0.9"
NODE_ENV = {
    "MPS_ACCESS_LOG": "on",
    "MPS_LOG_FORMAT": "json",
    "MPS_TRUSTED_PROXIES": "127.0.0.1",
}

_CONFIG = """
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log off;
    upstream mps {{ server {upstream}; keepalive 4; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://mps;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }}
    }}
}}
"""


class Nginx:
    """A real nginx on a loopback port, passing everything to `upstream` ("host:port")."""

    def __init__(self, folder: Path, upstream: str) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.upstream = upstream
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Nginx:
        self.folder.mkdir(parents=True, exist_ok=True)
        conf = self.folder / "nginx.conf"
        conf.write_text(_CONFIG.format(upstream=self.upstream, port=self.port))
        directives = (
            f"daemon off; pid {self.folder / 'nginx.pid'}; "
            f"error_log {self.folder / 'error.log'} warn;"
        )
        self._process = subprocess.Popen(
            [NGINX, "-p", str(self.folder), "-c", str(conf), "-g", directives],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        stop_nginx(self._process)


@asynccontextmanager
async def client_at(address: str) -> AsyncIterator[aiohttp.ClientSession]:
    """A client whose connections come from `address`."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=30)
    ) as session:
        yield session


@pytest.fixture
def two_nodes(tmp_path: Path, empty_database_url: str, amqp_url: str) -> Iterator[LocalCluster]:
    if shutil.which(NGINX) is None:
        what = "nginx, the balancer of this test (scripts/services installs it)"
        # A run that requires its services fails rather than passing without this test.
        if REQUIRE_SERVICES:
            pytest.fail(f"{what}, is required by this test run and is not installed")
        pytest.skip(f"{what}, is not installed")
    with LocalCluster(tmp_path, 2, empty_database_url, amqp_url, env=NODE_ENV) as cluster:
        cluster.wait_balanced()
        yield cluster


def _access_lines(cluster: LocalCluster, index: int, request_id: str) -> list[dict[str, Any]]:
    """Node `index`'s access lines for `request_id`."""
    found = []
    for line in cluster.nodes[index].log_text().splitlines():
        if request_id not in line or not line.startswith("{"):
            continue
        entry = orjson.loads(line)
        if entry.get("logger") == "access" and entry.get("requestId") == request_id:
            found.append(entry)
    return found


async def test_a_request_passed_to_the_owner_is_logged_by_both_nodes_under_the_client_s_id(
    two_nodes: LocalCluster, tmp_path: Path
) -> None:
    # given a member of a company, and nginx in front of the node that does not own it
    async with client_at("127.0.0.1") as setup:
        member = await sign_up_on(setup, two_nodes.urls()[0], "ida@example.com")
    owner = two_nodes.owner_of(member.company)
    other = 1 - owner
    upstream = f"127.0.0.1:{two_nodes.nodes[other].port}"

    with Nginx(tmp_path / "nginx", upstream) as nginx:
        # when a client creates a payment through the balancer
        async def created() -> tuple[int, str, str] | None:
            try:
                async with (
                    client_at(CLIENT) as client,
                    client.post(
                        f"{nginx.url}{API}/merchant/payments", json=AMOUNT, headers=member.headers()
                    ) as r,
                ):
                    body = await r.json()
                    return r.status, r.headers["X-Request-Id"], body.get("requestId")
            except aiohttp.ClientConnectionError:
                return None  # nginx is not listening yet

        answer = await eventually(created, within=10.0, what="nginx")
        assert answer is not None
        status, header_id, body_id = answer

    # then the client got one id, in the header and the body
    assert status == 201
    assert header_id == body_id and header_id.startswith("req_")

    # and each node logged the request once under that id, with the client's own address
    def logged() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return _access_lines(two_nodes, other, header_id), _access_lines(
            two_nodes, owner, header_id
        )

    async def both_logged() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        lines = logged()
        return lines if all(lines) else None

    lines = await eventually(both_logged, within=10.0, what="both access lines")
    assert lines is not None
    asked, served = lines
    assert [(e["peer"], e["status"], e["method"]) for e in asked] == [(CLIENT, 201, "POST")]
    assert [(e["peer"], e["status"], e["method"]) for e in served] == [(CLIENT, 201, "POST")]
    assert served[0]["route"] == asked[0]["route"] == "/api/v1/merchant/payments"
