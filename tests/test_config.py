"""Server modes and start-up configuration (decisions 1, 18)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.bootstrap import build_app
from mps.cluster.timings import ClusterTimings
from mps.config import ConfigError, load_settings
from tests.cluster import OwnClusterNode
from tests.helpers import eventually, production_env, sign_up
from tests.setting_names import settings_the_service_reads


def test_no_arguments_means_development_on_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings([], {"MPS_DATA_DIR": str(tmp_path)})

    assert settings.mode == "development"
    assert settings.host == "127.0.0.1" and settings.port == 8080
    assert settings.database_url == f"sqlite:///{tmp_path / 'mps.db'}"
    assert settings.broker_url == "memory://"
    assert len(settings.session_secret) >= 32


def test_development_secrets_are_generated_once_and_kept(tmp_path: Path) -> None:
    first = load_settings([], {"MPS_DATA_DIR": str(tmp_path)})
    second = load_settings([], {"MPS_DATA_DIR": str(tmp_path)})

    assert first.session_secret == second.session_secret
    assert (tmp_path / "secrets.json").stat().st_mode & 0o777 == 0o600


def test_options_override_the_environment(tmp_path: Path) -> None:
    settings = load_settings(["--port", "9001", "--data-dir", str(tmp_path)], {"MPS_PORT": "9000"})

    assert settings.port == 9001
    assert settings.public_url == "http://127.0.0.1:9001"


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({}, "MPS_DATABASE_URL"),
        ({"MPS_DATABASE_URL": "sqlite:///x.db"}, "MPS_DATABASE_URL"),
        ({"MPS_DATABASE_URL": "postgresql://db/x"}, "MPS_BROKER_URL"),
        (
            {"MPS_DATABASE_URL": "postgresql://db/x", "MPS_BROKER_URL": "amqp://mq"},
            "MPS_SESSION_SECRET",
        ),
    ],
)
def test_production_refuses_to_start_without_its_dependencies(
    tmp_path: Path, env: dict[str, str], missing: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(["--mode", "production", "--data-dir", str(tmp_path)], env)

    assert missing in str(refused.value)
    assert not (tmp_path / "secrets.json").exists()


def test_production_starts_with_everything_explicit(tmp_path: Path) -> None:
    env = production_env(MPS_SMTP_URL="smtp://mail:587")

    settings = load_settings(["--data-dir", str(tmp_path)], env)

    assert settings.mode == "production"
    assert settings.session_secret == b"s" * 40


def test_short_secrets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_settings(["--data-dir", str(tmp_path)], {"MPS_SESSION_SECRET": "short"})


def test_rate_limit_scale_comes_from_the_option_or_the_environment(tmp_path: Path) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path), "MPS_RATE_LIMIT_SCALE": "0"}

    assert load_settings([], {"MPS_DATA_DIR": str(tmp_path)}).rate_limit_scale == 1
    assert load_settings([], env).rate_limit_scale == 0
    assert load_settings(["--rate-limit-scale", "10"], env).rate_limit_scale == 10


def test_webhook_concurrency_per_endpoint_comes_from_the_environment(tmp_path: Path) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path), "MPS_WEBHOOK_CONCURRENCY": "4"}

    assert load_settings([], {"MPS_DATA_DIR": str(tmp_path)}).webhook_concurrency == 16
    assert load_settings([], env).webhook_concurrency == 4


# Each numeric setting and values outside what it takes.
OUT_OF_RANGE = [
    # a number zero or more
    *(("MPS_RATE_LIMIT_SCALE", value) for value in ("-1", "fast", "nan", "inf")),
    # a whole number from 1 to 256
    *(("MPS_WEBHOOK_CONCURRENCY", value) for value in ("0", "-1", "2.5", "many", "257")),
    # a whole number from 0 to a million, in ASCII digits
    *(("MPS_MAX_IN_FLIGHT", value) for value in ("-1", "2.5", "many", "1000001", "١٢")),
]


@pytest.mark.parametrize(("variable", "value"), OUT_OF_RANGE)
def test_a_numeric_setting_outside_what_it_takes_is_refused_naming_it(
    tmp_path: Path, variable: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), variable: value})


@pytest.fixture
def common_umask() -> Iterator[None]:
    """The usual 022 umask, under which a file is world-readable (0644) unless made otherwise."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_dir_and_secrets_are_owner_only_when_created(
    tmp_path: Path, common_umask: None
) -> None:
    # given no data directory yet
    data_dir = tmp_path / "var" / "mps"

    # when the settings are loaded
    load_settings([], {"MPS_DATA_DIR": str(data_dir)})

    # then the directory and the secrets are the owner's only
    assert _mode(data_dir) == 0o700
    assert _mode(data_dir / "secrets.json") == 0o600


async def _development_server(
    aiohttp_client: Callable[..., Any], folder: Path
) -> tuple[TestClient[Any, Any], Path]:
    """A client of the development server, with the settings it would load, on its data
    directory in `folder` (the same one each time), and that directory."""
    data_dir = folder / "var"
    settings = load_settings([], {"MPS_DATA_DIR": str(data_dir)})
    client: TestClient[Any, Any] = await aiohttp_client(build_app(settings))
    return client, data_dir


async def test_database_files_are_owner_only_when_the_server_has_written(
    tmp_path: Path, common_umask: None, aiohttp_client: Callable[..., Any]
) -> None:
    # given the development server on its default SQLite file
    client, data_dir = await _development_server(aiohttp_client, tmp_path)

    # when it writes
    await sign_up(client)

    # then the database and its WAL and shared-memory files are the owner's only
    files = {p.name: _mode(p) for p in data_dir.iterdir()}
    assert {"mps.db", "mps.db-wal", "mps.db-shm", "secrets.json"} <= set(files)
    assert files == dict.fromkeys(files, 0o600), files


async def test_database_files_are_narrowed_to_the_owner_when_left_readable(
    tmp_path: Path, common_umask: None, aiohttp_client: Callable[..., Any]
) -> None:
    # given a data directory whose files an earlier version left world-readable
    first, data_dir = await _development_server(aiohttp_client, tmp_path)
    await sign_up(first)
    await first.close()
    for path in data_dir.iterdir():
        path.chmod(0o644)

    # when the server starts again
    again, _ = await _development_server(aiohttp_client, tmp_path)
    await sign_up(again, "second@example.com")

    # then every file is the owner's only again
    files = {p.name: _mode(p) for p in data_dir.iterdir()}
    assert "mps.db" in files
    assert files == dict.fromkeys(files, 0o600), files


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o720, 0o702, 0o1777])
def test_server_refuses_to_start_when_group_or_others_can_write_the_data_dir(
    tmp_path: Path, mode: int, capsys: pytest.CaptureFixture[str]
) -> None:
    import run

    # given a data directory others can write
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    data_dir.chmod(mode)

    # when the server is started on it
    with pytest.raises(ConfigError) as refused:
        load_settings([], {"MPS_DATA_DIR": str(data_dir)})
    status = run.main(["--data-dir", str(data_dir)])

    # then it refuses, saying which directory and what to do, and writes nothing there
    assert str(data_dir) in str(refused.value)
    assert "chmod 700" in str(refused.value)
    assert status == 2
    assert f"run.py: {refused.value}" in capsys.readouterr().err
    assert list(data_dir.iterdir()) == []


def test_a_data_dir_others_may_only_read_is_accepted_when_no_one_else_can_write(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    data_dir.chmod(0o755)

    settings = load_settings([], {"MPS_DATA_DIR": str(data_dir)})

    assert settings.data_dir == data_dir
    assert _mode(data_dir / "secrets.json") == 0o600


def test_server_refuses_a_sqlite_file_when_others_can_write_its_directory(tmp_path: Path) -> None:
    # given a database directory apart from the data directory, and others can write it
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {"MPS_DATA_DIR": str(tmp_path / "var"), "MPS_DATABASE_URL": f"sqlite:///{shared}/x.db"}

    # when / then
    with pytest.raises(ConfigError, match="shared"):
        load_settings([], env)


# The example environment file of a production node (deploy/production.env.example).

ENV_EXAMPLE = Path(__file__).resolve().parent.parent / "deploy" / "production.env.example"


def _example_lines() -> tuple[dict[str, str], set[str]]:
    """The example's settings given a value, and the names it shows commented out (optional
    settings, at their default)."""
    given: dict[str, str] = {}
    optional: set[str] = set()
    for line in ENV_EXAMPLE.read_text().splitlines():
        if match := re.fullmatch(r"(MPS_[A-Z0-9_]+)=(.*)", line):
            given[match[1]] = match[2].removeprefix('"').removesuffix('"')
        elif match := re.fullmatch(r"# (MPS_[A-Z0-9_]+)=.*", line):
            optional.add(match[1])
    return given, optional


def test_the_production_env_example_names_every_setting_the_service_reads_and_no_other() -> None:
    # given
    read = settings_the_service_reads()

    # when
    given, optional = _example_lines()

    # then: each setting once, with a comment line above it
    assert sorted(read - given.keys() - optional) == []
    assert sorted((given.keys() | optional) - read) == []
    assert not given.keys() & optional
    lines = ENV_EXAMPLE.read_text().splitlines()
    for index, line in enumerate(lines):
        if re.match(r"(# )?MPS_[A-Z0-9_]+=", line):
            assert lines[index - 1].startswith("#"), f"no comment above {line}"


def test_the_production_env_example_starts_production_once_its_secrets_are_filled_in(
    tmp_path: Path,
) -> None:
    # given: the example as a node would read it, with the values it leaves empty filled in
    given, _optional = _example_lines()
    empty = sorted(name for name, value in given.items() if not value)
    assert empty == ["MPS_CLUSTER_SECRET", "MPS_ENCRYPTION_KEY", "MPS_SESSION_SECRET"]
    env = {**given, **dict.fromkeys(empty, "x" * 48), "MPS_DATA_DIR": str(tmp_path / "var")}

    # when
    settings = load_settings([], env)

    # then
    assert settings.mode == "production"
    assert settings.clustered and settings.cluster_name == "mps"
    assert settings.database_url.startswith("postgresql://")
    assert settings.object_storage_url.startswith("s3://")
    assert settings.trusted_proxies and settings.shutdown_grace == 5.0
    assert settings.mail_from == "Payments <no-reply@example.com>"
    # and without its secrets it refuses to start, naming them
    with pytest.raises(ConfigError, match="MPS_SESSION_SECRET"):
        load_settings([], {**given, "MPS_DATA_DIR": str(tmp_path / "var")})


# A cluster node's timings (MPS_HEARTBEAT_INTERVAL, MPS_NODE_TIMEOUT, MPS_FORWARD_WITHIN).


def test_cluster_timings_default_to_the_tuning_a_node_made_without_settings_runs_with(
    tmp_path: Path,
) -> None:
    # given: production as its example file sets it, and development
    production = load_settings([], {**production_env(), "MPS_DATA_DIR": str(tmp_path / "p")})
    development = load_settings([], {"MPS_DATA_DIR": str(tmp_path / "d")})

    # then: the production tuning in both, the same as a node made by hand runs with
    for settings in (production, development):
        assert (settings.heartbeat_interval, settings.node_timeout, settings.forward_within) == (
            1.0,
            3.5,
            10.0,
        )
        assert ClusterTimings.from_settings(settings) == ClusterTimings()


def test_cluster_timings_come_from_the_environment(tmp_path: Path) -> None:
    env = {
        "MPS_DATA_DIR": str(tmp_path),
        "MPS_HEARTBEAT_INTERVAL": "0.5",
        "MPS_NODE_TIMEOUT": "2",
        "MPS_FORWARD_WITHIN": "6.5",
    }

    timings = ClusterTimings.from_settings(load_settings([], env))

    assert (timings.heartbeat, timings.node_timeout, timings.forward_within) == (0.5, 2.0, 6.5)
    # and what no setting names keeps its tuning
    assert timings.drain_within == ClusterTimings().drain_within


@pytest.mark.parametrize(
    "name", ["MPS_HEARTBEAT_INTERVAL", "MPS_NODE_TIMEOUT", "MPS_FORWARD_WITHIN"]
)
@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf", "3601"])
def test_a_cluster_timing_must_be_seconds_more_than_zero(
    tmp_path: Path, name: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=rf"^{name} must be seconds, more than 0"):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), name: value})


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"MPS_NODE_TIMEOUT": "1"}, r"MPS_NODE_TIMEOUT \(1 s\) must be longer than "),
        ({"MPS_HEARTBEAT_INTERVAL": "5"}, r"than MPS_HEARTBEAT_INTERVAL \(5 s\)"),
        ({"MPS_FORWARD_WITHIN": "3.5"}, r"MPS_FORWARD_WITHIN \(3.5 s\) must be longer than "),
        ({"MPS_NODE_TIMEOUT": "12"}, r"than MPS_NODE_TIMEOUT \(12 s\)"),
    ],
)
def test_a_node_timeout_must_outlast_a_heartbeat_and_a_passed_request_the_node_timeout(
    tmp_path: Path, given: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), **given})


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_cluster_node_runs_with_the_timings_its_settings_give(
    own_cluster_node: OwnClusterNode,
) -> None:
    # given: a node of a cluster of one, beating five times as often as by default
    async with own_cluster_node(heartbeat_interval=0.2, node_timeout=0.9, forward_within=2.5) as (
        _,
        node,
    ):
        # when: it hears its own heartbeats back through the broker
        heard: list[float] = []

        async def heard_six_beats() -> bool:
            if node.heard_self_at is not None and node.heard_self_at not in heard:
                heard.append(node.heard_self_at)
            return len(heard) >= 6

        await eventually(heard_six_beats, within=20, every=0.01, what="six heartbeats")

        # then: its waits are the settings', and five beats took well under the default's 5 s
        assert node.timings.heartbeat == 0.2
        assert node.membership.timeout == node.timings.node_timeout == 0.9
        assert node.timings.forward_within == 2.5
        assert heard[-1] - heard[0] < 5 * ClusterTimings().heartbeat / 2, heard
