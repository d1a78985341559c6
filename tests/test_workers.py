"""`run.py --workers N`: N cluster members on one host sharing its port (mps.workers), started,
restarted and stopped by the process run.py starts, on the real Postgres and RabbitMQ.

Each test runs a real supervisor with two workers. Requests go to the shared port over a new
connection each (the kernel picks a worker per connection), so a test sees both workers by
asking often enough; each worker's own account comes from its metrics port (MPS_METRICS_PORT
and the next one)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import IO, Any

import aiohttp
import pytest

from mps.config import ConfigError, load_settings
from mps.domain.shards import SHARD_COUNT
from mps.workers import plan_workers
from tests.cluster import delete_cluster_queues, new_cluster_name
from tests.helpers import eventually, free_port, free_ports, port_in_use
from tests.server import RUN_PY, run_py, server_environment

# The workers share what a cluster's nodes share: these tests run on Postgres.
on_postgres = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

API = "/api/v1"
AMOUNT = {"amountMinor": "2500", "currency": "USD", "description": "workers"}
# Asks over new connections until each worker has answered at least once: with two workers
# the chance that one of this many connections never reaches one is 2**-31.
ASKS = 32


class Workers:
    """`run.py --workers 2` on a port of its own, its output in `folder/server.log`."""

    def __init__(self, folder: Path, database_url: str, amqp_url: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.metrics_port = free_ports(2)
        self.amqp_url = amqp_url
        self.name = new_cluster_name()
        self.log_path = folder / "server.log"
        self.folder = folder
        self.env = server_environment(
            {
                "MPS_PORT": str(self.port),
                "MPS_DATA_DIR": str(folder / "var"),
                "MPS_DATABASE_URL": database_url,
                "MPS_BROKER_URL": f"{amqp_url}{'&' if '?' in amqp_url else '?'}heartbeat=2",
                "MPS_CLUSTER_NAME": self.name,
                "MPS_METRICS_PORT": str(self.metrics_port),
                "MPS_RATE_LIMIT_SCALE": "0",
                "MPS_ACCESS_LOG": "off",
            }
        )
        self._log: IO[bytes] | None = None
        self.process: subprocess.Popen[bytes] | None = None
        # Every worker seen, so that none outlives a test that failed to stop it.
        self.seen: set[int] = set()

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, str(RUN_PY), "--workers", "2"],
            cwd=self.folder,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def worker_pids(self) -> set[int]:
        """The supervisor's child processes now (Linux's /proc)."""
        found: set[int] = set()
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return found
        for task in tasks:
            try:
                children = Path(f"/proc/{self.pid}/task/{task}/children").read_text()
            except OSError:
                continue
            found.update(int(pid) for pid in children.split())
        self.seen |= found
        return found

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        """Kill whatever is left (the supervisor and its workers) and delete the queues."""
        if self.process is not None:
            # The supervisor first: alive, it would start a worker again in a killed one's place.
            workers = self.worker_pids() | self.seen
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(timeout=30)
            for pid in workers | self.seen:
                if _alive(pid):
                    _kill(pid)
        if self._log is not None:
            self._log.close()
        delete_cluster_queues(self.amqp_url, self.name)

    async def metrics(self, http: aiohttp.ClientSession, index: int) -> str | None:
        """Worker `index`'s (1 or 2) /metrics; None while it does not answer."""
        url = f"http://127.0.0.1:{self.metrics_port + index - 1}/metrics"
        try:
            async with http.get(url) as response:
                return await response.text() if response.status == 200 else None
        except aiohttp.ClientError:
            return None

    async def views(self, http: aiohttp.ClientSession) -> dict[str, list[int]]:
        """The shards each worker that answered on the shared port says it owns, by node id."""
        found: dict[str, list[int]] = {}
        for _ in range(ASKS):
            try:
                async with http.get(f"{self.base}{API}/health") as response:
                    node = (await response.json())["node"]
            except aiohttp.ClientError:
                continue
            found[node["id"]] = node.get("ownedShards", [])
        return found

    async def serving(self, http: aiohttp.ClientSession) -> dict[str, list[int]]:
        """The workers' shards once two workers answer and own every shard once between them,
        each some; empty before."""
        if len(self.worker_pids()) != 2:
            return {}
        views = await self.views(http)
        every = sorted(shard for shards in views.values() for shard in shards)
        if len(views) == 2 and every == list(range(SHARD_COUNT)) and all(views.values()):
            return views
        return {}


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone but for its parent's wait.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _count(metrics: str, method: str, route: str, status: str) -> float:
    """mps_http_requests_total for one route, method and status (0 when absent)."""
    pattern = re.compile(r"^mps_http_requests_total\{(?P<labels>.*)\} (?P<value>\S+)$", re.M)
    total = 0.0
    for match in pattern.finditer(metrics):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        labels.pop("node", None)  # every series carries the node's id (mps.metrics)
        if labels == {"route": route, "method": method, "status": status}:
            total += float(match["value"])
    return total


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # A new connection per request, so that the kernel picks a worker for each.
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


@pytest.fixture
def workers(tmp_path: Path, empty_database_url: str, amqp_url: str) -> Iterator[Workers]:
    running = Workers(tmp_path, empty_database_url, amqp_url)
    try:
        yield running
    finally:
        running.close()


async def _started(workers: Workers, http: aiohttp.ClientSession) -> dict[str, list[int]]:
    workers.start()
    return await eventually(
        lambda: workers.serving(http), within=60, every=0.2, what="two workers owning the shards"
    )


async def _sign_up(http: aiohttp.ClientSession, base: str, email: str) -> dict[str, str]:
    """A company signed up through the shared port; its session's headers. The code is in the
    dev mailbox of the worker that sent it, which a new connection reaches sooner or later."""
    async with http.post(
        f"{base}{API}/auth/signup", json={"companyName": "Workers Ltd", "email": email}
    ) as response:
        assert response.status == 201, await response.text()
        login_id = (await response.json())["loginId"]

    async def code() -> str | None:
        async with http.get(f"{base}{API}/dev/mailbox", params={"to": email}) as response:
            mail = (await response.json())["data"]
        return str(mail[0]["otp"]) if mail else None

    otp = await eventually(code, within=20, what="the sign-up code in a worker's mailbox")
    async with http.post(
        f"{base}{API}/auth/otp/verify", json={"loginId": login_id, "code": otp}
    ) as response:
        assert response.status == 200, await response.text()
        token = (await response.json())["sessionToken"]
    return {"Authorization": f"Bearer {token}"}


async def _serving_a_company(
    workers: Workers, http: aiohttp.ClientSession, email: str
) -> dict[str, str]:
    """The workers started and owning the shards, and a company signed up through them; its
    session's headers."""
    await _started(workers, http)
    return await _sign_up(http, workers.base, email)


async def _creates(
    http: aiohttp.ClientSession, base: str, headers: dict[str, str], keys: str, count: int
) -> list[int]:
    """`count` creates sent one after another to the service at `base`, each under a key of its
    own (`keys`-0, `keys`-1…); the status each was answered."""
    statuses = []
    for number in range(count):
        async with http.post(
            f"{base}{API}/merchant/payments",
            json=AMOUNT,
            headers={**headers, "Idempotency-Key": f"{keys}-{number}"},
        ) as response:
            statuses.append(response.status)
    return statuses


async def _created(
    http: aiohttp.ClientSession, base: str, headers: dict[str, str], key: str
) -> dict[str, Any]:
    """A payment created under `key` through the service at `base`, which must answer 201."""
    async with http.post(
        f"{base}{API}/merchant/payments",
        json=AMOUNT,
        headers={**headers, "Idempotency-Key": key},
    ) as response:
        assert response.status == 201, await response.text()
        payment: dict[str, Any] = await response.json()
        return payment


async def _running(
    workers: Workers, http: aiohttp.ClientSession
) -> tuple[subprocess.Popen[bytes], set[int]]:
    """The supervisor and its workers' pids, once the workers own the shards between them."""
    await _started(workers, http)
    assert workers.process is not None
    return workers.process, workers.worker_pids()


def _any_alive(pids: set[int]) -> bool:
    return any(_alive(pid) for pid in pids)


async def _served_by_each(
    workers: Workers, http: aiohttp.ClientSession, method: str, route: str, status: str
) -> list[float]:
    counts = []
    for index in (1, 2):
        metrics = await workers.metrics(http, index)
        assert metrics is not None, f"worker {index}'s metrics port does not answer"
        counts.append(_count(metrics, method, route, status))
    return counts


@on_postgres
async def test_two_workers_share_the_port_and_each_owns_shards(
    workers: Workers, http: aiohttp.ClientSession
) -> None:
    # when
    views = await _started(workers, http)

    # then: two nodes named for the workers, the shards split between them
    assert sorted(name.rsplit("-", 1)[1] for name in views) == ["w1", "w2"]
    assert not set(views[min(views)]) & set(views[max(views)])
    assert len(workers.worker_pids()) == 2
    assert "workers: worker 2 started" in workers.log_text()


@on_postgres
async def test_a_create_on_the_shared_port_is_served_whichever_worker_accepts_it(
    workers: Workers, http: aiohttp.ClientSession
) -> None:
    # given
    headers = await _serving_a_company(workers, http, "creates@workers.example")
    route = f"{API}/merchant/payments"
    before = await _served_by_each(workers, http, "POST", route, "201")

    # when: creates over new connections, which the kernel spreads over both workers
    statuses = await _creates(http, workers.base, headers, "workers-create", ASKS)

    # then: every create succeeded, and each worker answered some of them itself (the one
    # that does not own the company's shard passed its creates to the one that does)
    assert statuses == [201] * ASKS
    after = await _served_by_each(workers, http, "POST", route, "201")
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)


@on_postgres
async def test_a_payment_created_through_one_worker_is_read_through_the_other(
    workers: Workers, http: aiohttp.ClientSession
) -> None:
    # given
    headers = await _serving_a_company(workers, http, "reads@workers.example")
    created = await _created(http, workers.base, headers, "workers-read-1")
    route = f"{API}/merchant/payments/{{id}}"
    before = await _served_by_each(workers, http, "GET", route, "200")

    # when
    read = []
    for _ in range(ASKS):
        async with http.get(
            f"{workers.base}{API}/merchant/payments/{created['id']}", headers=headers
        ) as response:
            assert response.status == 200, await response.text()
            read.append(await response.json())

    # then: both workers answered, with the same payment
    after = await _served_by_each(workers, http, "GET", route, "200")
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)
    assert {(p["id"], p["amountMinor"], p["status"]) for p in read} == {
        (created["id"], "2500", "PENDING")
    }


@on_postgres
async def test_a_killed_worker_is_started_again_and_takes_its_share_back(
    workers: Workers, http: aiohttp.ClientSession
) -> None:
    # given
    await _started(workers, http)
    first = workers.worker_pids()
    victim = min(first)

    # when
    os.kill(victim, signal.SIGKILL)

    # then: a new worker in its place, and the two own every shard again, each some
    async def replaced() -> set[int]:
        pids = workers.worker_pids()
        return pids if len(pids) == 2 and victim not in pids else set()

    now = await eventually(replaced, within=30, what="a worker started in the killed one's place")
    assert len(now & first) == 1
    await eventually(
        lambda: workers.serving(http), within=60, every=0.2, what="the shards shared again"
    )
    assert re.search(
        r"worker \d \(pid \d+\) ended unexpectedly \(signal SIGKILL\)", workers.log_text()
    )
    headers = await _sign_up(http, workers.base, "restart@workers.example")
    await _created(http, workers.base, headers, "workers-after-restart")


@on_postgres
async def test_sigterm_stops_the_supervisor_and_both_workers_cleanly(
    workers: Workers, http: aiohttp.ClientSession
) -> None:
    # given
    supervisor, pids = await _running(workers, http)

    # when
    supervisor.send_signal(signal.SIGTERM)
    status = await asyncio.to_thread(supervisor.wait, 60)

    # then: each worker handed its shards over and ended; the supervisor says so and exits 0
    assert status == 0, workers.log_text()[-3000:]
    assert not _any_alive(pids)
    log = workers.log_text()
    assert "workers: SIGTERM, stopping every worker" in log
    assert "workers: all stopped" in log
    for index in (1, 2):
        assert re.search(
            rf"\[worker {index}\] mps\.cluster\.node: node \S+-w{index} handed over", log
        )
    assert "Traceback" not in log


@on_postgres
async def test_workers_end_when_their_supervisor_is_killed_outright(
    workers: Workers, http: aiohttp.ClientSession
) -> None:
    # given
    supervisor, pids = await _running(workers, http)

    # when: no signal to pass on, no chance to stop them
    supervisor.kill()
    supervisor.wait(timeout=30)

    # then: the kernel told each worker (SIGTERM), and each ended rather than serve on alone
    async def ended() -> bool:
        return not _any_alive(pids)

    await eventually(ended, within=60, every=0.2, what="the orphaned workers ending")


@on_postgres
def test_a_worker_refusing_its_settings_stops_every_worker_instead_of_restarting(
    tmp_path: Path, empty_database_url: str, amqp_url: str
) -> None:
    # when: a setting only the serving process reads, so every worker refuses it
    refused = _run_workers(tmp_path, empty_database_url, amqp_url, MPS_ACCESS_LOG="sample:2")

    # then
    _assert_stopped_for_a_setting(refused)
    assert "MPS_ACCESS_LOG" in refused.stderr


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_py(*args, cwd=tmp_path, env={"MPS_DATA_DIR": str(tmp_path / "var"), **env})


def _run_workers(
    tmp_path: Path, database_url: str, amqp_url: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`run.py --workers 2` on a free port and a cluster name of its own, whose queues are
    deleted once it has ended; `env` adds to or overrides those settings."""
    name = new_cluster_name()
    try:
        return _run(
            tmp_path,
            "--workers",
            "2",
            **{
                "MPS_PORT": str(free_port()),
                "MPS_DATABASE_URL": database_url,
                "MPS_BROKER_URL": amqp_url,
                "MPS_CLUSTER_NAME": name,
                **env,
            },
        )
    finally:
        delete_cluster_queues(amqp_url, name)


def _assert_stopped_for_a_setting(refused: subprocess.CompletedProcess[str]) -> None:
    """The supervisor stopped every worker with a setting's exit status, rather than start the
    one that refused again and again."""
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "refused its settings" in refused.stderr
    assert "starting it again" not in refused.stderr
    assert "Traceback" not in refused.stderr


def _worker_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """The settings of workers on Postgres and RabbitMQ (neither is reached), plus `settings`."""
    return {
        "MPS_DATA_DIR": str(tmp_path / "var"),
        "MPS_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/mps",
        "MPS_BROKER_URL": "amqp://127.0.0.1/",
        **settings,
    }


def test_workers_on_the_embedded_sqlite_database_are_refused_saying_why(tmp_path: Path) -> None:
    # when
    by_option = _run(tmp_path, "--workers", "2")
    by_variable = _run(tmp_path, MPS_WORKERS="2", MPS_BROKER_URL="amqp://127.0.0.1:5672/")

    # then
    for refused in (by_option, by_variable):
        assert refused.returncode == 2
        assert "MPS_WORKERS=2 needs PostgreSQL" in refused.stderr
        assert "SQLite file has one writer" in refused.stderr
        assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("value", ["0", "two", "-1", "1025", "²"])
def test_a_number_of_workers_that_is_not_one_to_1024_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="MPS_WORKERS must be a whole number from 1 to 1024"):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path / "var"), "MPS_WORKERS": value})


def test_workers_refuse_a_cluster_said_off_and_a_broker_that_is_not_amqp(tmp_path: Path) -> None:
    env = {
        "MPS_DATA_DIR": str(tmp_path / "var"),
        "MPS_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/mps",
        "MPS_WORKERS": "2",
    }

    with pytest.raises(ConfigError, match="leave MPS_CLUSTER unset or on"):
        load_settings(["--cluster", "off"], {**env, "MPS_BROKER_URL": "amqp://127.0.0.1/"})
    with pytest.raises(ConfigError, match="MPS_WORKERS=2 needs RabbitMQ"):
        load_settings([], env)


def test_workers_are_one_cluster_of_named_nodes_with_ports_of_their_own(tmp_path: Path) -> None:
    # given
    env = _worker_env(tmp_path, MPS_PEER_PORT="9100", MPS_METRICS_PORT="9200")
    settings = load_settings(["--workers", "3", "--node-id", "edge"], env)

    # when
    planned = plan_workers(settings, ["run.py"], ["--workers", "3", "--node-id", "edge"], env)

    # then: the options each worker is given come last, so they win over the same ones before
    workers = [load_settings(w.command[1:], w.env) for w in planned]
    assert settings.clustered and settings.workers == 3
    assert [(w.node_id, w.workers, w.clustered) for w in workers] == [
        (f"edge-w{i}", 1, True) for i in (1, 2, 3)
    ]
    assert [(w.peer_port, w.metrics_port) for w in workers] == [
        (9100, 9200),
        (9101, 9201),
        (9102, 9202),
    ]
    # one cluster secret, generated for the run, the same for every worker
    assert len({w.peer_secret for w in workers}) == 1
    assert len(planned[0].env["MPS_CLUSTER_SECRET"]) >= 32


def test_workers_whose_ports_would_overlap_are_refused(tmp_path: Path) -> None:
    env = _worker_env(tmp_path, MPS_PEER_PORT="9100", MPS_METRICS_PORT="9101")
    settings = load_settings(["--workers", "2"], env)

    with pytest.raises(ConfigError, match="MPS_PEER_PORT and MPS_METRICS_PORT overlap"):
        plan_workers(settings, ["run.py"], [], env)


@on_postgres
def test_workers_on_a_port_in_use_are_one_clear_line_and_no_worker_starts(
    tmp_path: Path, empty_database_url: str, amqp_url: str
) -> None:
    with port_in_use() as port:
        refused = _run_workers(tmp_path, empty_database_url, amqp_url, MPS_PORT=str(port))

    assert refused.returncode == 1
    assert f"run.py: cannot listen on 127.0.0.1:{port}" in refused.stderr
    assert "worker 1 started" not in refused.stderr
    assert "Traceback" not in refused.stderr


@on_postgres
@pytest.mark.parametrize(
    ("setting", "refusal"),
    [
        ("MPS_METRICS_PORT", "cannot listen for metrics on 127.0.0.1:{port}"),
        ("MPS_WORKER_PORT", "cannot listen on 127.0.0.1:{port} (MPS_WORKER_PORT)"),
    ],
    ids=["metrics-port", "own-port"],
)
def test_a_worker_whose_metrics_or_own_port_is_taken_stops_every_worker_instead_of_restarting(
    tmp_path: Path, empty_database_url: str, amqp_url: str, setting: str, refusal: str
) -> None:
    with port_in_use() as port:
        # when: worker 1's port is in use
        refused = _run_workers(tmp_path, empty_database_url, amqp_url, **{setting: str(port)})

    # then: one clear line, and a setting's exit status rather than a restart loop
    _assert_stopped_for_a_setting(refused)
    assert refusal.format(port=port) in refused.stderr
