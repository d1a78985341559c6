"""Server modes and start-up configuration (decisions 1, 18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mps.config import ConfigError, load_settings


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
    env = {
        "MPS_MODE": "production",
        "MPS_DATABASE_URL": "postgresql://db/x",
        "MPS_BROKER_URL": "amqp://mq",
        "MPS_SESSION_SECRET": "s" * 40,
        "MPS_ENCRYPTION_KEY": "e" * 40,
        "MPS_SMTP_URL": "smtp://mail:587",
    }

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
