"""The command line (`python -m bench.chaos`): options in, the report's summary out, exit
status 1 when a check found a violation. Its defaults are Options' own."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

from bench.chaos.options import DEFAULT_FAULTS, FAULTS, Options
from bench.chaos.suite import run_chaos


def _arguments(argv: list[str] | None) -> Options:
    # The package's docstring is the manual; its first paragraph is the summary shown here.
    # Imported when called, since the package imports this module while it is set up.
    import bench.chaos

    parser = argparse.ArgumentParser(
        prog="python -m bench.chaos", description=(bench.chaos.__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=Options.nodes)
    parser.add_argument(
        "--duration", type=float, default=Options.duration, help="seconds of workload"
    )
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument(
        "--faults",
        default=",".join(DEFAULT_FAULTS),
        help=f"comma-separated, of {', '.join(FAULTS)} (the restarts need --own-servers)",
    )
    parser.add_argument("--workers", type=int, default=Options.workers)
    parser.add_argument("--companies", type=int, default=Options.companies)
    parser.add_argument("--settle", type=float, default=Options.settle)
    parser.add_argument(
        "--own-servers",
        action="store_true",
        help="start a Postgres and a RabbitMQ of its own, so they can restart",
    )
    parser.add_argument("--pg-url", default=os.environ.get("MPS_TEST_DATABASE_URL", Options.pg_url))
    parser.add_argument(
        "--broker-url", default=os.environ.get("MPS_TEST_BROKER_URL", Options.broker_url)
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.nodes < 2:
        parser.error("--nodes must be 2 or more")
    return Options(
        nodes=args.nodes,
        duration=args.duration,
        seed=args.seed,
        faults=tuple(f.strip() for f in args.faults.split(",") if f.strip()),
        workers=args.workers,
        companies=args.companies,
        settle=args.settle,
        pg_url=args.pg_url,
        broker_url=args.broker_url,
        out=args.out,
        own_servers=args.own_servers,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the suite as the command line asks; the exit status: 1 on a violation, else 0."""
    options = _arguments(argv)
    print(f"chaos: seed {options.seed}, faults {','.join(options.faults)}", flush=True)
    report = asyncio.run(run_chaos(options))
    print(report.summary(), flush=True)
    return 1 if report.violations else 0
