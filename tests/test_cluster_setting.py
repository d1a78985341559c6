"""MPS_CLUSTER says whether a process is a node of a cluster; it is never guessed from the
broker's URL. Off (the default) runs the process alone, owning every shard, on any broker; on
needs an AMQP broker and is refused without one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides, build_app
from mps.config import ConfigError, Settings, load_settings
from mps.domain.clock import utcnow
from mps.http.keys import SERVICES
from tests.cluster import delete_cluster_queues, new_cluster_name
from tests.server import run_py

AMQP = "amqp://guest:guest@127.0.0.1:5672/"


def _load(tmp_path: Path, **env: str) -> Settings:
    return load_settings([], {"MPS_DATA_DIR": str(tmp_path / "data"), **env})


def test_cluster_is_off_by_default_even_on_an_amqp_broker(tmp_path: Path) -> None:
    # when
    alone = _load(tmp_path)
    alone_on_amqp = _load(tmp_path, MPS_BROKER_URL=AMQP)

    # then
    assert (alone.cluster, alone.clustered) == (False, False)
    assert (alone_on_amqp.cluster, alone_on_amqp.clustered) == (False, False)


def test_cluster_on_with_an_amqp_broker_makes_a_cluster_node(tmp_path: Path) -> None:
    # when
    from_env = _load(tmp_path, MPS_CLUSTER="on", MPS_BROKER_URL=AMQP)
    from_option = load_settings(
        ["--cluster", "on", "--broker-url", "amqps://mq.example/"],
        {"MPS_DATA_DIR": str(tmp_path / "data")},
    )

    # then
    assert from_env.clustered
    assert from_option.clustered


@pytest.mark.parametrize("broker", ["", "memory://", "redis://mq.example/"])
def test_cluster_on_without_an_amqp_broker_is_refused(tmp_path: Path, broker: str) -> None:
    # when / then
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, MPS_CLUSTER="on", MPS_BROKER_URL=broker)

    assert "MPS_CLUSTER=on" in str(refused.value)
    assert "MPS_BROKER_URL=amqp://" in str(refused.value)


@pytest.mark.parametrize("value", ["yes", "1", "true", "ON"])
def test_cluster_is_on_or_off_and_nothing_else(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="MPS_CLUSTER must be on or off"):
        _load(tmp_path, MPS_CLUSTER=value, MPS_BROKER_URL=AMQP)


def test_settings_made_by_hand_refuse_a_cluster_without_an_amqp_broker() -> None:
    with pytest.raises(ConfigError, match="MPS_CLUSTER=on"):
        Settings(cluster=True, broker_url="memory://")


def test_settings_made_by_hand_without_the_setting_are_a_cluster_exactly_on_amqp() -> None:
    # Kept for tests that build Settings themselves; load_settings always decides.
    assert not Settings().clustered
    assert Settings(broker_url=AMQP).clustered
    assert not Settings(broker_url=AMQP, cluster=False).clustered


def test_run_py_refuses_a_cluster_without_an_amqp_broker_in_one_line(tmp_path: Path) -> None:
    # when
    refused = run_py(
        cwd=tmp_path, env={"MPS_DATA_DIR": str(tmp_path / "data"), "MPS_CLUSTER": "on"}
    )

    # then
    assert refused.returncode == 2
    assert "run.py: MPS_CLUSTER=on needs an AMQP broker" in refused.stderr
    assert "Traceback" not in refused.stderr


async def test_cluster_off_on_rabbitmq_runs_alone_owning_every_shard(
    aiohttp_client: Callable[..., Any], settings: Settings, amqp_url: str
) -> None:
    # given a process told it is alone, on a RabbitMQ broker
    name = new_cluster_name()
    alone = replace(settings, broker_url=amqp_url, cluster=False, cluster_name=name)

    # when it starts
    client: TestClient[Any, Any] = await aiohttp_client(build_app(alone, Overrides(clock=utcnow)))
    try:
        services = client.app[SERVICES]

        # then it is no cluster node, and owns every shard for good
        assert services.cluster is None
        assert not services.shards.clustered
        assert sorted(services.shards.owned) == list(range(settings.shard_count))
        response = await client.get("/api/v1/health/live")
        assert response.status == 200
    finally:
        await client.close()
        delete_cluster_queues(amqp_url, name)
