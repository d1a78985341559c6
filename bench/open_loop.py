"""Open-loop load: requests sent at a fixed arrival rate, each timed from its intended send time.

    .venv/bin/python bench/open_loop.py --url http://127.0.0.1:8099/ --rate 2000 --duration 5

(bench/load.py --rate and --find-rate drive the service with it; alone, it GETs one URL, which
is how it is checked against bench/bare.py.)

Why not wrk: wrk is closed-loop. Each connection sends its next request only when the last one
is answered, so when the server stalls, wrk stalls with it and sends nothing; the requests that
would have arrived meanwhile are never sent, never timed, and the percentiles hide the stall
(coordinated omission). Here the schedule is fixed in advance: request n of a run is due at
start + n / rate, whatever happened before it, and its latency runs from that due time to the
end of its answer, as k6's constant-arrival-rate executor and wrk2 measure. A request that waits
for a connection, or behind a generator that fell behind, is charged that wait.

What was available: Debian packages wrk but neither wrk2 nor k6. A wrk Lua script can delay a
connection's next request but cannot send one while the connection waits for an answer, so it
cannot hold a rate through a stall. So a Python generator, made cheap enough not to be the
bottleneck, and checked each run:

- P worker processes (--processes, 2 by default: the machine has 2 cores), each on uvloop where
  it is installed, each sending rate / P a second on a schedule of its own, offset so the
  arrivals of all of them interleave evenly. A worker starts every request that is due as soon
  as its loop wakes (timers fire about a millisecond late at worst), each as a task of its own.
- A small HTTP/1.1 client over asyncio's Protocol (no aiohttp client: its cost per request would
  make the generator the limit well below the service's): prebuilt request bytes, keep-alive
  connections, one request at a time on each, answers read by Content-Length. A request takes
  an idle connection or opens a new one, up to --connections per worker, beyond which it waits
  for one (charged, as said).
- Each request's send lag (the time its task started minus its due time, before any wait for
  a connection, which is the server's doing) is recorded: its p99 shows whether the generator
  kept the schedule. bench/load.py also loads bench/bare.py at the same
  rate in the same run: a generator that holds the rate against the bare endpoint, with a
  small p99, is not what limits the service's figures.

A worker writes what it measured (JSON) to --out: latency and send lag of each request in
milliseconds, its status (0: the connection failed or closed; -1: no answer within --timeout
after the run), whether each 503 carried Retry-After, the ids in 201 answers, and its CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import orjson

ROOT = Path(__file__).resolve().parent.parent
# Connections a worker opens before the start, so the first requests do not all connect at once.
WARM_CONNECTIONS = 8
# Seconds from launching the workers to the common start: their imports and first connections.
START_DELAY = 1.5
STATUS_FAILED = 0
STATUS_TIMED_OUT = -1


# -- the plan a worker follows --------------------------------------------------------------


@dataclass
class Plan:
    """What every worker of a run sends: GET `path`, or creates (`tokens` rotated, a unique
    Idempotency-Key each, `body`)."""

    host: str
    port: int
    rate: float
    duration: float
    processes: int
    connections: int
    start_wall: float
    kind: str = "get"  # get | create
    path: str = "/"
    tokens: list[str] = field(default_factory=list)
    body: str = ""
    nonce: str = ""
    timeout: float = 10.0


def _requests(plan: Plan, index: int) -> Any:
    """The bytes of this worker's requests, one after another."""
    host = f"{plan.host}:{plan.port}"
    if plan.kind == "get":
        fixed = f"GET {plan.path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        while True:
            yield fixed
    body = plan.body.encode()
    n = 0
    while True:
        token = plan.tokens[n % len(plan.tokens)]
        head = (
            f"POST {plan.path} HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {token}\r\n"
            f"Idempotency-Key: {plan.nonce}-{index}-{n}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        yield head.encode() + body
        n += 1


# -- the client --------------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.answer: asyncio.Future[tuple[int, bytes, bytes]] | None = None
        self.need = -1
        self.head_end = 0
        self.alive = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, though they act as one.
        self.transport = cast("asyncio.Transport", transport)

    def send(self, data: bytes) -> asyncio.Future[tuple[int, bytes, bytes]]:
        assert self.transport is not None
        self.answer = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.answer

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.need < 0:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self._fail(ConnectionError("an answer without Content-Length"))
                return
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : stop if stop > 0 else len(head)])
            self.head_end = end + 4
            self.need = self.head_end + length
        if len(self.buffer) >= self.need:
            head = bytes(self.buffer[: self.head_end])
            body = bytes(self.buffer[self.head_end : self.need])
            del self.buffer[: self.need]
            self.need = -1
            if self.answer is not None and not self.answer.done():
                self.answer.set_result((int(head[9:12]), head, body))

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("closed by the server"))

    def _fail(self, exc: BaseException) -> None:
        self.alive = False
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(exc)
        if self.transport is not None:
            self.transport.close()


class _Pool:
    def __init__(self, host: str, port: int, cap: int) -> None:
        self.host, self.port, self.cap = host, port, cap
        self.idle: collections.deque[_Connection] = collections.deque()
        self.waiters: collections.deque[asyncio.Future[_Connection]] = collections.deque()
        self.open = 0
        self.most_open = 0

    async def _connect(self) -> _Connection:
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            _, conn = await asyncio.get_running_loop().create_connection(
                _Connection, self.host, self.port
            )
        except OSError:
            self.open -= 1
            raise
        return conn

    async def acquire(self) -> _Connection:
        while self.idle:
            conn = self.idle.popleft()
            if conn.alive:
                return conn
            self.open -= 1
        if self.open < self.cap:
            return await self._connect()
        waiter: asyncio.Future[_Connection] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return await waiter

    def release(self, conn: _Connection) -> None:
        if not conn.alive:
            self.open -= 1
            if self.waiters:
                # The place of the dead connection goes to the next waiter, as a new one.
                waiter = self.waiters.popleft()
                task = asyncio.ensure_future(self._connect())
                task.add_done_callback(lambda t: _hand_over(waiter, t))
            return
        if self.waiters:
            self.waiters.popleft().set_result(conn)
        else:
            self.idle.append(conn)

    async def warm(self, count: int) -> None:
        for conn in await asyncio.gather(*(self._connect() for _ in range(count))):
            self.idle.append(conn)


def _hand_over(waiter: asyncio.Future[_Connection], task: asyncio.Future[_Connection]) -> None:
    if task.exception() is not None:
        waiter.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        waiter.set_result(task.result())


# -- a worker ----------------------------------------------------------------------------------


@dataclass
class _Record:
    latency_ms: list[float] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    retry_after_503: int = 0
    errors: collections.Counter[str] = field(default_factory=collections.Counter)


async def _worker(plan: Plan, index: int) -> dict[str, Any]:
    pool = _Pool(plan.host, plan.port, plan.connections)
    await pool.warm(min(WARM_CONNECTIONS, plan.connections))
    record = _Record()
    requests = _requests(plan, index)
    pending: set[asyncio.Task[None]] = set()
    perf = time.perf_counter
    # The common start, on this process's performance counter.
    start = perf() + (plan.start_wall - time.time())
    interval = plan.processes / plan.rate
    first = index / plan.rate
    count = max(0, int((plan.duration - first) / interval + 1 - 1e-9))

    async def one(due: float, data: bytes) -> None:
        # The generator's own lateness: a wait for a connection is the server's doing, and
        # counts in the latency only.
        started = perf()
        try:
            conn = await pool.acquire()
        except OSError as exc:
            record.errors[type(exc).__name__] += 1
            record.latency_ms.append((perf() - due) * 1000)
            record.lag_ms.append((started - due) * 1000)
            record.status.append(STATUS_FAILED)
            return
        try:
            status, head, body = await conn.send(data)
        except (OSError, ConnectionError) as exc:
            record.errors[type(exc).__name__] += 1
            status, head, body = STATUS_FAILED, b"", b""
        done = perf()
        pool.release(conn)
        record.latency_ms.append((done - due) * 1000)
        record.lag_ms.append((started - due) * 1000)
        record.status.append(status)
        if status == 503 and b"\r\nretry-after:" in head.lower():
            record.retry_after_503 += 1
        elif status == 201 and plan.kind == "create":
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record.ids.append(orjson.loads(body)["id"])

    n = 0
    while n < count:
        due = start + first + n * interval
        wait = due - perf()
        if wait > 0:
            await asyncio.sleep(wait)
        now = perf()
        # Everything due by now starts now: a late wake-up is charged to those requests.
        while n < count and start + first + n * interval <= now:
            task = asyncio.create_task(one(start + first + n * interval, next(requests)))
            pending.add(task)
            task.add_done_callback(pending.discard)
            n += 1
    timed_out = 0
    if pending:
        _done, late = await asyncio.wait(pending, timeout=plan.timeout)
        timed_out = len(late)
        for task in late:
            task.cancel()
    for conn in pool.idle:
        if conn.transport is not None:
            conn.transport.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "sent": count,
        "latencyMs": record.latency_ms,
        "lagMs": record.lag_ms,
        "status": record.status + [STATUS_TIMED_OUT] * timed_out,
        "ids": record.ids,
        "retryAfter503": record.retry_after_503,
        "errors": dict(record.errors),
        "cpuSeconds": usage.ru_utime + usage.ru_stime,
        "mostConnections": pool.most_open,
    }


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _worker_main(plan_file: Path, index: int, out: Path) -> None:
    plan = Plan(**json.loads(plan_file.read_text()))
    loop = _new_loop()
    try:
        result = loop.run_until_complete(_worker(plan, index))
    finally:
        loop.close()
    out.write_bytes(orjson.dumps(result))


# -- a run: the workers, and what they measured together ------------------------------------


def _percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of sorted `values` (0.0 when there are none)."""
    if not values:
        return 0.0
    rank = max(1, int(share * len(values) + 0.999999))
    return values[min(rank, len(values)) - 1]


@dataclass
class OpenLoopResult:
    rate: float
    duration: float
    sent: int = 0
    answered: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    # Sorted latencies (ms, from the due time): every request, the 2xx, the 503s.
    all_ms: list[float] = field(default_factory=list)
    ok_ms: list[float] = field(default_factory=list)
    shed_ms: list[float] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)
    retry_after_503: int = 0
    ids: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    generator_cpu: float = 0.0
    most_connections: int = 0
    # The server's CPU seconds over the run, where its caller can read them.
    server_cpu: float = 0.0

    def p(self, which: str, share: float) -> float:
        values: list[float] = getattr(self, f"{which}_ms")
        return _percentile(values, share)

    @property
    def shed(self) -> int:
        return self.statuses.get(503, 0)

    @property
    def ok(self) -> int:
        return sum(n for status, n in self.statuses.items() if 200 <= status < 300)

    @property
    def failed(self) -> int:
        """Answers that are neither a success nor a 503, connections that failed, time-outs."""
        return self.sent - self.ok - self.shed

    def held(self, p99_ms: float, lag_ms: float) -> bool:
        """Every request answered with a success, the p99 within `p99_ms`, the schedule kept
        (send lag p99 within `lag_ms`)."""
        return (
            self.sent > 0
            and self.ok == self.sent
            and self.p("all", 0.99) <= p99_ms
            and self.p("lag", 0.99) <= lag_ms
        )

    def lines(self) -> list[str]:
        share = self.shed / self.sent if self.sent else 0.0
        out = [
            f"sent {self.sent:,} at {self.rate:,.0f}/s over {self.duration:g} s; "
            f"answered {self.answered:,}; by status: "
            + ", ".join(f"{s}: {n:,}" for s, n in sorted(self.statuses.items())),
            f"all      p50 {self.p('all', 0.5):8.2f}  p99 {self.p('all', 0.99):8.2f}  "
            f"max {self.p('all', 1.0):8.2f} ms (from the due time)",
        ]
        if self.shed:
            out += [
                f"accepted p50 {self.p('ok', 0.5):8.2f}  p99 {self.p('ok', 0.99):8.2f}  "
                f"max {self.p('ok', 1.0):8.2f} ms ({self.ok:,})",
                f"503      p50 {self.p('shed', 0.5):8.2f}  p99 {self.p('shed', 0.99):8.2f}  "
                f"max {self.p('shed', 1.0):8.2f} ms ({self.shed:,}, {share:.0%}; "
                f"with Retry-After: {self.retry_after_503:,})",
            ]
        out.append(
            f"generator: send lag p99 {self.p('lag', 0.99):.2f} ms, max "
            f"{self.p('lag', 1.0):.2f} ms; CPU {self.generator_cpu:.1f} s "
            f"({self.generator_cpu / max(self.duration, 1e-9):.0%} of a core); "
            f"most connections {self.most_connections}"
            + (f"; errors {self.errors}" if self.errors else "")
        )
        return out


def run(plan: Plan, out: Path, label: str) -> OpenLoopResult:
    """Run `plan` on its worker processes (blocking: call it in a thread from async code)."""
    out.mkdir(parents=True, exist_ok=True)
    plan.start_wall = time.time() + START_DELAY
    plan_file = out / f"{label}.plan.json"
    plan_file.write_text(json.dumps(plan.__dict__))
    files = [out / f"{label}.w{index}.json" for index in range(plan.processes)]
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", str(plan_file), str(index), str(path)],
            cwd=ROOT,
        )
        for index, path in enumerate(files)
    ]
    for worker in workers:
        if worker.wait() != 0:
            msg = f"an open-loop worker exited with {worker.returncode} (see above)"
            raise SystemExit(msg)
    result = OpenLoopResult(plan.rate, plan.duration)
    statuses: collections.Counter[int] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    for path in files:
        part = orjson.loads(path.read_bytes())
        result.sent += part["sent"]
        statuses.update(part["status"])
        for latency, status in zip(part["latencyMs"], part["status"], strict=False):
            result.all_ms.append(latency)
            if 200 <= status < 300:
                result.ok_ms.append(latency)
            elif status == 503:
                result.shed_ms.append(latency)
        result.lag_ms += part["lagMs"]
        result.ids += part["ids"]
        result.retry_after_503 += part["retryAfter503"]
        errors.update(part["errors"])
        result.generator_cpu += part["cpuSeconds"]
        result.most_connections += part["mostConnections"]
    # A request never answered is as slow as can be: last in every ordering.
    never = statuses.get(STATUS_TIMED_OUT, 0)
    result.all_ms += [float("inf")] * never
    for values in (result.all_ms, result.ok_ms, result.shed_ms, result.lag_ms):
        values.sort()
    result.statuses = dict(statuses)
    result.answered = result.sent - never - statuses.get(STATUS_FAILED, 0)
    result.errors = dict(errors)
    return result


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        _worker_main(Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--url", required=True, help="GET this URL, e.g. http://127.0.0.1:8099/")
    parser.add_argument("--rate", type=float, required=True, help="requests a second")
    parser.add_argument("--duration", type=float, default=5, help="seconds (5)")
    parser.add_argument("--processes", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--connections", type=int, default=256, help="per worker at most (256)")
    parser.add_argument("--out", type=Path, help="the workers' files (a temporary folder)")
    args = parser.parse_args()
    url = urlsplit(args.url)
    plan = Plan(
        host=url.hostname or "127.0.0.1",
        port=url.port or 80,
        rate=args.rate,
        duration=args.duration,
        processes=args.processes,
        connections=args.connections,
        start_wall=0.0,
        path=(url.path or "/") + (f"?{url.query}" if url.query else ""),
    )
    out = args.out or Path(tempfile.mkdtemp(prefix="open-loop-"))
    for line in run(plan, out, "run").lines():
        print(line)
    if not args.out:
        for path in out.iterdir():
            os.unlink(path)
        out.rmdir()


if __name__ == "__main__":
    main()
