"""What a chaos run is asked to do: its options and the kinds of fault it knows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FAULTS = ("kill", "stop", "pg", "broker", "pg-restart", "broker-restart")
DEFAULT_FAULTS = ("kill", "stop", "pg", "broker")
# Faults that restart a server: only on servers the suite started itself, since restarting the
# shared ones would pull them from under everyone else's tests.
OWN_SERVER_FAULTS = ("pg-restart", "broker-restart")
# The broker heartbeat of the nodes (seconds); a paused node loses its shards after about two.
HEARTBEAT = 2


@dataclass(frozen=True)
class Options:
    """One run's settings; the command line's defaults are these. `faults` may name only kinds
    in FAULTS (run_chaos refuses others) and keeps the restarts only with `own_servers`."""

    nodes: int = 3
    duration: float = 60.0
    seed: int = 1
    faults: tuple[str, ...] = DEFAULT_FAULTS
    workers: int = 6
    companies: int = 3
    # How long to wait, after the workload, for the cluster to balance, money to settle and
    # events to arrive, each.
    settle: float = 180.0
    pg_url: str = "postgresql://postgres@127.0.0.1:5432/mps_test"
    broker_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    out: Path | None = None
    own_servers: bool = False
    # Progress lines; None keeps quiet.
    say: Callable[[str], None] | None = print

    def progress(self, line: str) -> None:
        """Show one progress line through `say`; nothing when it is None."""
        if self.say is not None:
            self.say(line)
