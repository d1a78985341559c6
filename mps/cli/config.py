"""Where the command line keeps its credentials: one JSON file, readable by its owner only.

    {"url": "http://127.0.0.1:8080", "token": "eyJ…", "key": "sk_test_…"}

`token` is a dashboard session (`mps login --email`), `key` an API key (`mps login --key`);
either may be absent. Both belong to `url`: they are sent to that service only, so
`--url https://elsewhere` never hands them to another host, and logging in to another URL
forgets the credentials of the previous one.

The file is `$MPS_CLI_CONFIG`, else `~/.config/mps/cli.json`. It is written whole to a
temporary file created 0600 and renamed over the old one, so a reader never sees half a file
and the secret is never, even for a moment, in a file others can read.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from mps.cli.errors import UsageError

__all__ = [
    "DEFAULT_URL",
    "Credentials",
    "config_path",
    "forget",
    "load",
    "normalise_url",
    "remember",
    "resolve_url",
]

DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True, slots=True)
class Credentials:
    url: str
    token: str | None = None
    key: str | None = None

    def as_json(self) -> dict[str, str]:
        stored = {"url": self.url, "token": self.token, "key": self.key}
        return {name: value for name, value in stored.items() if value is not None}


def config_path() -> Path:
    configured = os.environ.get("MPS_CLI_CONFIG")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".config" / "mps" / "cli.json"


def normalise_url(url: str) -> str:
    """The base URL without a trailing slash, so `…:8080/` and `…:8080` name one service."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url must start with http:// or https:// (got {url!r})")
    return url


def resolve_url(option: str | None, stored: Credentials | None) -> str:
    """`--url`, else `$MPS_URL`, else the URL last logged in to, else the local default."""
    chosen = option or os.environ.get("MPS_URL") or (stored.url if stored else None)
    return normalise_url(chosen or DEFAULT_URL)


def load(path: Path | None = None) -> Credentials | None:
    path = path or config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        raise UsageError(f"{path} is not a credentials file of mps; remove it and log in again")
    return Credentials(
        data["url"],
        data.get("token") if isinstance(data.get("token"), str) else None,
        data.get("key") if isinstance(data.get("key"), str) else None,
    )


def remember(
    url: str, *, token: str | None = None, key: str | None = None, path: Path | None = None
) -> Path:
    """Store a session `token` or an API `key` for `url`, keeping the other credential of the
    same URL (a merchant may hold both: a session for webhooks, a test key for the sandbox)."""
    path = path or config_path()
    stored = load(path)
    if stored is None or stored.url != url:
        stored = Credentials(url)
    if token is not None:
        stored = replace(stored, token=token)
    if key is not None:
        stored = replace(stored, key=key)
    _write_private(path, orjson.dumps(stored.as_json(), option=orjson.OPT_INDENT_2) + b"\n")
    return path


def forget(path: Path | None = None) -> bool:
    """Remove the credentials file; whether there was one."""
    path = path or config_path()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _write_private(path: Path, content: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()  # left by a crash of an earlier run with the same pid
    # O_EXCL: never write into a file (or through a symlink) someone else prepared there.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
