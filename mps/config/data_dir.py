"""The data directory and what lives in it: made the owner's only, and, in development, the
secrets generated on first start."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import orjson

from mps.config.settings import ConfigError

__all__ = ["development_secrets", "private_directory", "sqlite_directory"]


def private_directory(directory: Path) -> None:
    """Create `directory` for its owner only (0700), or refuse one that group or others can
    write: whoever can write there can replace the database or the secrets, or plant files
    beside them. One that group or others can only read is accepted; what is inside is 0600."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = directory.stat().st_mode
    except OSError as exc:
        msg = f"cannot use the data directory {directory}: {exc.strerror or exc}"
        raise ConfigError(msg) from exc
    if mode & 0o022:
        msg = (
            f"the data directory {directory} can be written by group or others "
            f"(mode {mode & 0o777:o}); make it the owner's only: chmod 700 {directory}"
        )
        raise ConfigError(msg)


def sqlite_directory(database_url: str) -> Path | None:
    """The directory of a `sqlite:///path` database file (None for anything else)."""
    if not database_url.startswith("sqlite://"):
        return None
    path = database_url.removeprefix("sqlite://").removeprefix("/")
    return Path(path).parent if path and path != ":memory:" else None


def development_secrets(data_dir: Path) -> dict[str, bytes]:
    """Secrets kept in the data dir, created on first start, so sessions survive restarts.

    The file is the owner's only (0600); one left readable by others is narrowed in place."""
    path = data_dir / "secrets.json"
    if path.exists():
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        stored = orjson.loads(path.read_bytes())
    else:
        stored = {
            "sessionSecret": secrets.token_urlsafe(48),
            "encryptionKey": base64.b64encode(secrets.token_bytes(32)).decode(),
        }
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(stored))
    return {
        "session": stored["sessionSecret"].encode(),
        "encryption": stored["encryptionKey"].encode(),
    }
