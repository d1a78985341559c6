"""`run.py` in a subprocess, for the tests that need the real entry point (its settings, logging,
signals, a crash): one way to start it, wait for it, talk to it and stop it.

    with RunningServer(tmp_path) as server:
        signup = server.call("/api/v1/auth/signup", {"companyName": "Acme", "email": "a@b.co"})
    assert "dev mail msg_" in server.log_text()

The server gets this process's environment without its `MPS_` variables (so a developer's own
settings never point a test at their database), the port and data directory as `MPS_PORT` and
`MPS_DATA_DIR` (so `args` may be empty, as in "run.py with no arguments"), and whatever `env`
adds. Its working directory is the test's folder, so nothing it writes lands in the checkout.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Self
from urllib.request import Request, urlopen

import orjson
import pytest

from tests.helpers import free_port

__all__ = [
    "RUN_PY",
    "RunningServer",
    "release_before",
    "run_py",
    "server_environment",
    "sockets_held",
    "started",
    "tcp_sockets",
]

RUN_PY = Path(__file__).resolve().parent.parent / "run.py"


def server_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its `MPS_` variables, plus `extra`."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MPS_")}
    return {**inherited, **(extra or {})}


def run_py(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`run.py args…` run to its end with `server_environment(env)`; what it printed, as text."""
    return subprocess.run(
        [sys.executable, str(RUN_PY), *args],
        cwd=cwd,
        env=server_environment(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def release_before(folder: Path, path: str, *, added: bool = False) -> Path:
    """The project as it was just before the newest commit that changed `path` (with `added`,
    the first commit that added it), unpacked in `folder`: a previous release, which
    `RunningServer(run_py=folder / "run.py")` runs with this venv. Skips the test when the
    checkout has no history to take it from."""
    root = RUN_PY.parent
    git = shutil.which("git")
    if git is None or not (root / ".git").exists():
        pytest.skip("the previous release is taken from the project's git history")
    log = [git, "log", "--diff-filter=A", "--format=%H"] if added else [git, "log", "--format=%H"]
    commits = subprocess.run(
        [*log, "--", path], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    if not commits:
        pytest.skip(f"{path} is not in the project's history yet (not committed)")
    archive = subprocess.run(
        [git, "archive", "--format=tar", f"{commits[-1] if added else commits[0]}^"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(
            f"the commit before the one that changed {path} is not in this clone (shallow?)"
        )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def tcp_sockets(port: int, *, listening: bool) -> set[str]:
    """The TCP sockets listening on `port`, or (not `listening`) established to a remote
    `port`, as a process's descriptors name them ("socket:[inode]", Linux's /proc)."""
    # /proc/net/tcp's columns: 1 the local address, 2 the remote one, 3 the state, 9 the inode.
    column, wanted = (1, "0A") if listening else (2, "01")  # 0A: LISTEN, 01: ESTABLISHED
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == wanted and int(fields[column].rsplit(":", 1)[1], 16) == port:
                found.add(f"socket:[{fields[9]}]")
    return found


def sockets_held(pid: int, sockets: set[str]) -> int:
    """How many of `sockets` (`tcp_sockets`) process `pid` holds a descriptor of."""
    count = 0
    for descriptor in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{descriptor}") in sockets:
                count += 1
        except OSError:
            continue
    return count


def started(process: subprocess.Popen[bytes], ready: Callable[[], bool], deadline: float) -> bool:
    """Wait until the server `process` is `ready()`; False as soon as it has exited instead, or
    once `time.monotonic()` passes `deadline`."""
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _listens_on(pid: int, port: int) -> bool:
    """Whether process `pid` holds the socket listening on loopback `port`: an answer on the
    port proves nothing when another process took it first."""
    try:
        return sockets_held(pid, tcp_sockets(port, listening=True)) > 0
    except OSError:
        return False


class RunningServer:
    """`run.py args…` on a free loopback port (or `port`, to restart on the same one), with
    its data in `folder/var` and its whole output appended to `folder/server.log`.

    As a context manager it is started on entry and stopped on exit; `start` returns only once
    `/api/v1/health/live` answers and this process holds the port, and fails with the log's end
    if the process exits or does not answer within `ready_within` seconds.
    """

    def __init__(
        self,
        folder: Path,
        *args: str,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        ready_within: float = 20.0,
        run_py: Path = RUN_PY,
    ) -> None:
        self.folder = folder
        self.args = args
        # Another release's run.py (`release_before`) runs with this venv too.
        self.run_py = run_py
        self.port = port if port is not None else free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.data_dir = folder / "var"
        self.log_path = folder / "server.log"
        self._env = server_environment(
            {"MPS_PORT": str(self.port), "MPS_DATA_DIR": str(self.data_dir), **(env or {})}
        )
        self._ready_within = ready_within
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._launched_at = 0.0

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self._process is not None, "the server was not started"
        return self._process

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self) -> Self:
        self.launch()
        return self.wait_ready()

    def launch(self) -> None:
        """Start the process and return at once; `wait_ready` waits for it to serve. Apart,
        so that several servers (a cluster's nodes) start side by side."""
        self._log = self.log_path.open("ab")
        try:
            self._process = subprocess.Popen(
                [sys.executable, str(self.run_py), *self.args],
                cwd=self.folder,
                env=self._env,
                stdout=self._log,
                stderr=subprocess.STDOUT,
            )
        except BaseException:
            self._log.close()
            raise
        self._launched_at = time.monotonic()

    def wait_ready(self) -> Self:
        """Return once the launched server answers and holds its port; kill it and fail with
        the log's end if it exits or has not done so `ready_within` seconds after launch."""
        deadline = self._launched_at + self._ready_within
        if not started(
            self.process,
            lambda: self._is_live() and _listens_on(self.process.pid, self.port),
            deadline,
        ):
            self.kill()
            msg = f"run.py did not start (exit {self.process.returncode}):\n{self._tail()}"
            raise AssertionError(msg)
        return self

    def _is_live(self) -> bool:
        try:
            with urlopen(f"{self.base_url}/api/v1/health/live", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def call(
        self, path: str, body: Any = None, *, token: str | None = None, method: str | None = None
    ) -> Any:
        """The decoded JSON answer to a request (a POST when there is a body, else a GET);
        an error status raises `urllib.error.HTTPError`."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = orjson.dumps(body) if body is not None else None
        request = Request(f"{self.base_url}{path}", data=data, method=method, headers=headers)
        with urlopen(request, timeout=10) as response:
            return orjson.loads(response.read())

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM, and SIGKILL if it has not ended within `grace` seconds; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self._reap()

    def kill(self) -> int:
        """SIGKILL at once, as a crash would: no shutdown, nothing flushed."""
        if self.process.poll() is None:
            self.process.kill()
        return self._reap()

    def _reap(self) -> int:
        status = self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
        return status

    def log_text(self) -> str:
        """Everything the server has written so far (both runs, after a restart)."""
        return self.log_path.read_text(errors="replace")

    def _tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
