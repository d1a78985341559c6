"""The chaos suite (bench/chaos/), short: real nodes on Postgres and RabbitMQ under a mixed
workload while nodes are killed and paused and their database and broker connections cut, then
every check of the suite. The full run (`python -m bench.chaos`), and what each check means, is
in the bench.chaos package's docstring; its figures are in bench/RESULTS.md.

No timing is asserted: the suite waits on facts (a node answering, the shards balanced, every
event arrived) with generous deadlines, so a loaded machine makes it slower, not red."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import DEFAULT_FAULTS, Options, run_chaos
from tests.conftest import AMQP_URL, PG_URL

pytestmark = [pytest.mark.postgres, pytest.mark.rabbitmq]


async def test_a_cluster_under_faults_keeps_every_write_key_refund_ledger_and_event(
    tmp_path: Path,
) -> None:
    # given three nodes under creates, checkouts, refund bursts, payouts and same-key retries
    options = Options(
        nodes=3,
        duration=15.0,
        seed=7,
        faults=DEFAULT_FAULTS,
        workers=4,
        companies=2,
        settle=120.0,
        pg_url=PG_URL,
        broker_url=AMQP_URL,
        out=tmp_path,
        say=None,
    )

    # when each kind of fault is injected at least once while the workload runs
    report = await run_chaos(options)

    # then every check held, and the run did what it says
    assert report.violations == [], report.summary()
    assert all(report.faults[kind] >= 1 for kind in DEFAULT_FAULTS), report.summary()
    assert report.acknowledged["create"] > 0 and report.acknowledged["refund"] > 0
    assert report.events_delivered > 0, report.summary()
