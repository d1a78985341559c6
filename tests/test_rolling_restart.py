"""The runbook's rolling restart, end to end and small: `scripts/cluster --production`'s cluster
(bench/production_cluster.py: production-mode nodes started as deploy/mps@.service starts them,
behind nginx running deploy/nginx.conf, sign-in codes through a mail relay) restarted node by
node by `scripts/rolling-restart` (bench/rolling_restart.py) while clients send keyed creates
and reads through the balancer. Two nodes and a one-second grace keep it short; the full drill
(three nodes, the production grace of 5 s) is recorded in bench/RESULTS.md.

Both run as the operator runs them, as processes: the cluster's own folder, a port range of its
own, a Postgres schema and a cluster name of its own, dropped and deleted afterwards.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.cluster_layout import Layout, is_ready
from tests.cluster import (
    delete_cluster_queues,
    drop_schema,
    new_cluster_name,
    require_reachable,
)
from tests.conftest import AMQP_URL, PG_URL
from tests.helpers import free_ports
from tests.test_balancer import require_nginx

ROOT = Path(__file__).resolve().parent.parent
NODES = 2
# The balancer's port P and the nodes' P+1…, peers P+11…, metrics P+21…, the relay P+30.
PORTS_TAKEN = 31


@pytest.fixture
def production_cluster(tmp_path: Path) -> Iterator[Layout]:
    require_nginx()
    require_reachable(5432, f"PostgreSQL at {PG_URL}")
    require_reachable(5672, f"RabbitMQ at {AMQP_URL}")
    schema = f"t_{secrets.token_hex(6)}"
    name = new_cluster_name()
    folder = tmp_path / "cluster"
    output = (tmp_path / "cluster.out").open("wb")
    supervisor = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "production_cluster.py"),
            str(NODES),
            "--folder",
            str(folder),
            "--port",
            str(free_ports(PORTS_TAKEN)),
            "--database-url",
            f"{PG_URL}?schema={schema}",
            "--broker-url",
            AMQP_URL,
            "--cluster-name",
            name,
        ],
        env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin", "MPS_SHUTDOWN_GRACE": "1"},
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not (folder / "cluster.json").exists() or not is_ready(Layout.load(folder).url):
            out = (tmp_path / "cluster.out").read_text(errors="replace")
            assert supervisor.poll() is None, f"the cluster did not start:\n{out}"
            assert time.monotonic() < deadline, f"the cluster was not ready:\n{out}"
            time.sleep(0.2)
        yield Layout.load(folder)
    finally:
        # Ctrl-C: every node gets one SIGTERM and drains, then nginx stops.
        supervisor.send_signal(signal.SIGINT)
        try:
            supervisor.wait(timeout=60)
        except subprocess.TimeoutExpired:
            supervisor.kill()
            supervisor.wait()
        output.close()
        delete_cluster_queues(AMQP_URL, name)
        drop_schema(schema)


def _drill(layout: Layout) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "rolling_restart.py"),
            "--folder",
            str(layout.folder),
            "--clients",
            "3",
            "--rate",
            "8",
            "--warmup",
            "1",
            "--cooldown",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_rolling_restart_behind_nginx_answers_every_request_and_stores_every_create_once(
    production_cluster: Layout,
) -> None:
    # when: each node in turn gets SIGTERM, exits, starts again and is ready, under load
    result = _drill(production_cluster)

    # then: every node was restarted, one after the other
    restarts = result["restarts"]
    assert [done["node"] for done in restarts] == list(range(1, NODES + 1))
    assert all(done["new_pid"] != done["old_pid"] for done in restarts)

    # and: no request reached the client as an error or a refused connection
    assert result["sent"] > 0
    assert result["connectionErrors"] == {}, result["failures"]
    assert all(200 <= int(status) < 300 for status in result["statuses"]), result["failures"]

    # and: every acknowledged create is stored exactly once
    stored = result["stored"]
    assert stored["acknowledged"] == result["creates"]
    assert stored["stored_once"] == stored["acknowledged"]
    assert stored["missing"] == []
    assert stored["twice"] == []
