"""Server modes and start-up configuration (decisions 1, 18)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from mps.bootstrap import build_app
from mps.config import ConfigError, load_settings
from tests.helpers import production_env, sign_up


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


@pytest.mark.parametrize("value", ["-1", "fast", "nan", "inf"])
def test_rate_limit_scale_must_be_a_number_zero_or_more(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="MPS_RATE_LIMIT_SCALE"):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), "MPS_RATE_LIMIT_SCALE": value})


def test_webhook_concurrency_per_endpoint_comes_from_the_environment(tmp_path: Path) -> None:
    env = {"MPS_DATA_DIR": str(tmp_path), "MPS_WEBHOOK_CONCURRENCY": "4"}

    assert load_settings([], {"MPS_DATA_DIR": str(tmp_path)}).webhook_concurrency == 16
    assert load_settings([], env).webhook_concurrency == 4


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "many", "257"])
def test_webhook_concurrency_must_be_a_whole_number_from_1_to_256(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(ConfigError, match="MPS_WEBHOOK_CONCURRENCY"):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), "MPS_WEBHOOK_CONCURRENCY": value})


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


async def test_database_files_are_owner_only_when_the_server_has_written(
    tmp_path: Path, common_umask: None, aiohttp_client: Callable[..., Any]
) -> None:
    # given the development server on its default SQLite file
    data_dir = tmp_path / "var"
    settings = load_settings([], {"MPS_DATA_DIR": str(data_dir)})
    client: TestClient[Any, Any] = await aiohttp_client(build_app(settings))

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
    data_dir = tmp_path / "var"
    settings = load_settings([], {"MPS_DATA_DIR": str(data_dir)})
    client: TestClient[Any, Any] = await aiohttp_client(build_app(settings))
    await sign_up(client)
    await client.close()
    for path in data_dir.iterdir():
        path.chmod(0o644)

    # when the server starts again
    settings = load_settings([], {"MPS_DATA_DIR": str(data_dir)})
    client = await aiohttp_client(build_app(settings))
    await sign_up(client, "second@example.com")

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
