"""Actor runtime benchmark: ask round-trip latency and memory per virtual actor.

Latency: one caller on the event loop asks an echo actor, sequentially, `--asks` times after a
warmup; each ask is timed with `time.perf_counter_ns` and the median and p99 are printed in
microseconds. Four actors are compared:

* our runtime: an `AsyncioActor` asked with `mps.actors.runtime.ask`;
* a plain asyncio.Queue actor: a task reading `(message, future)` tuples and setting the future;
* pykka's `ThreadingActor` asked with `loop.run_in_executor(None, ref.ask, message)`, the
  stock blocking pykka ask moved to the loop's default thread pool;
* pykka's `ThreadingActor` told `(message, asyncio.Future)` and replying through
  `loop.call_soon_threadsafe`, a bridge that skips the thread pool.

Memory: an `ActorDirectory` (capacity and idle time large enough that nothing is evicted)
activates `--actors` keys by asking each once; `close()` then passivates them all; then as many
fresh keys are activated and passivated again. After each step, and after `gc.collect()`, memory
is compared with the state before the directory existed and divided by `--actors`. Two probes,
each in its own freshly spawned interpreter so neither disturbs the other:

* rss: resident set size (VmRSS from /proc/self/status). CPython's allocator keeps freed arenas,
  so after passivation this is an upper bound on what is really still held;
* tracemalloc: the current size of live Python allocations, which is exact.

The second cycle tells a leak (growing with every activation) from the capacity that dicts and
sets keep after their peak size. The count of actor objects still reachable is printed as well.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykka

from mps.actors.directory import ActorDirectory
from mps.actors.runtime import AsyncioActor, ask, stop

WARMUP_ASKS = 2_000

AskOnce = Callable[[int], Awaitable[Any]]
Reply = asyncio.Future[Any]


@dataclass(frozen=True)
class Latency:
    median_us: float
    p99_us: float


@dataclass(frozen=True)
class Footprint:
    """Bytes per actor relative to before the directory existed, and actor objects left."""

    active: float
    passivated: float
    passivated_again: float
    survivors: int


# Latency ------------------------------------------------------------------------------------


class Echo(AsyncioActor):
    async def receive(self, message: Any) -> Any:
        return message


class ThreadEcho(pykka.ThreadingActor):
    def on_receive(self, message: Any) -> Any:
        return message


class BridgedThreadEcho(pykka.ThreadingActor):
    """Replies by setting an asyncio future on its loop's thread instead of a pykka future."""

    def on_receive(self, message: tuple[Any, Reply]) -> None:
        payload, reply = message
        reply.get_loop().call_soon_threadsafe(reply.set_result, payload)


async def time_asks(ask_once: AskOnce, asks: int) -> Latency:
    for i in range(WARMUP_ASKS):
        await ask_once(i)
    clock = time.perf_counter_ns
    samples: list[int] = []
    for i in range(asks):
        start = clock()
        await ask_once(i)
        samples.append(clock() - start)
    p99 = statistics.quantiles(samples, n=100)[98]
    return Latency(statistics.median(samples) / 1000, p99 / 1000)


async def runtime_latency(asks: int) -> Latency:
    ref = Echo.start()
    try:
        return await time_asks(lambda i: ask(ref, i), asks)
    finally:
        await stop(ref)


async def queue_actor(inbox: asyncio.Queue[tuple[Any, Reply]]) -> None:
    while True:
        message, reply = await inbox.get()
        reply.set_result(message)


async def queue_latency(asks: int) -> Latency:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[Any, Reply]] = asyncio.Queue()
    task = loop.create_task(queue_actor(inbox))

    async def ask_once(message: int) -> Any:
        reply = loop.create_future()
        inbox.put_nowait((message, reply))
        return await reply

    try:
        return await time_asks(ask_once, asks)
    finally:
        task.cancel()


async def pykka_executor_latency(asks: int) -> Latency:
    loop = asyncio.get_running_loop()
    ref = ThreadEcho.start()
    try:
        return await time_asks(lambda i: loop.run_in_executor(None, ref.ask, i), asks)
    finally:
        await loop.run_in_executor(None, ref.stop)


async def pykka_bridge_latency(asks: int) -> Latency:
    loop = asyncio.get_running_loop()
    ref = BridgedThreadEcho.start()

    async def ask_once(message: int) -> Any:
        reply = loop.create_future()
        ref.tell((message, reply))
        return await reply

    try:
        return await time_asks(ask_once, asks)
    finally:
        await loop.run_in_executor(None, ref.stop)


# Memory -------------------------------------------------------------------------------------


class Idle(AsyncioActor):
    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    async def receive(self, message: Any) -> Any:
        return message


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    msg = "no VmRSS line in /proc/self/status"
    raise RuntimeError(msg)


def traced_bytes() -> int:
    return tracemalloc.get_traced_memory()[0]


PROBES: dict[str, Callable[[], int]] = {"rss": rss_bytes, "tracemalloc": traced_bytes}


def settled(probe: Callable[[], int]) -> int:
    gc.collect()
    return probe()


async def activate(directory: ActorDirectory[str, Idle], prefix: str, actors: int) -> None:
    for i in range(actors):
        await directory.ask(f"{prefix}-{i}", "ping")
    assert len(directory) == actors, "an actor was evicted"


async def passivate_all(directory: ActorDirectory[str, Idle]) -> None:
    await directory.close()
    # The loop's handle that resumed us still holds gather()'s future and, through it, every
    # stopping task until this callback returns; yield once so that they are released.
    await asyncio.sleep(0)
    assert len(directory) == 0, "an actor is still active"


async def footprint(actors: int, probe: Callable[[], int]) -> Footprint:
    """Activate, passivate, then do both again with fresh keys, measuring after each step."""
    before = settled(probe)
    directory: ActorDirectory[str, Idle] = ActorDirectory(
        "bench", Idle, capacity=actors, idle_after=3600.0
    )
    await activate(directory, "first", actors)
    active = settled(probe) - before
    await passivate_all(directory)
    passivated = settled(probe) - before
    await activate(directory, "second", actors)
    await passivate_all(directory)
    passivated_again = settled(probe) - before
    survivors = sum(isinstance(obj, Idle) for obj in gc.get_objects())
    return Footprint(active / actors, passivated / actors, passivated_again / actors, survivors)


def footprint_with(probe: str, actors: int) -> Footprint:
    """Entry point of the child process: one probe, measured from a fresh interpreter."""
    if probe == "tracemalloc":
        tracemalloc.start()
    return asyncio.run(footprint(actors, PROBES[probe]))


def footprint_in_fresh_process(probe: str, actors: int) -> Footprint:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(footprint_with, probe, actors).result()


# Report -------------------------------------------------------------------------------------


async def report_latency(asks: int) -> None:
    print(f"ask round trip, {asks} sequential asks after {WARMUP_ASKS} warmup (microseconds)")
    print(f"  {'actor':<50} {'median':>8} {'p99':>8}")
    cases: list[tuple[str, Callable[[int], Awaitable[Latency]]]] = [
        ("mps AsyncioActor, await ask(ref, msg)", runtime_latency),
        ("asyncio.Queue task + asyncio.Future", queue_latency),
        ("pykka ThreadingActor, run_in_executor(ref.ask)", pykka_executor_latency),
        ("pykka ThreadingActor, tell + call_soon_threadsafe", pykka_bridge_latency),
    ]
    for name, run in cases:
        latency = await run(asks)
        print(f"  {name:<50} {latency.median_us:>8.1f} {latency.p99_us:>8.1f}")


def report_memory(actors: int) -> None:
    print(f"\nmemory, {actors} actors in one ActorDirectory (bytes per actor; fresh process each)")
    print(f"  {'probe':<12} {'active':>8} {'passivated':>11} {'2nd cycle':>10} {'alive':>6}")
    for probe in PROBES:
        f = footprint_in_fresh_process(probe, actors)
        print(
            f"  {probe:<12} {f.active:>8.0f} {f.passivated:>11.0f} "
            f"{f.passivated_again:>10.0f} {f.survivors:>6}"
        )
    print("  active: all activated; passivated: after directory.close();")
    print("  2nd cycle: after activating and closing as many fresh keys again;")
    print("  alive: actor objects left after both cycles (gc.get_objects)")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=100_000, help="virtual actors to activate")
    parser.add_argument("--asks", type=int, default=20_000, help="timed asks per actor kind")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    asyncio.run(report_latency(args.asks))
    report_memory(args.actors)


if __name__ == "__main__":
    main()
