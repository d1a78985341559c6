"""Where a cluster on this machine keeps everything, and how its nodes are set up, started and
stopped: what `scripts/cluster --production` (bench/production_cluster.py) and
`scripts/rolling-restart` (bench/rolling_restart.py) share.

    layout = Layout.load(Path("var/cluster-production"))   # written by the cluster at start
    stop_node(layout, 2)                                   # SIGTERM, then wait until it exits
    start_node(layout, 2)                                  # as deploy/mps@.service starts it
    wait_ready(layout.node_url(2), within=120)

Ports, from the balancer's P: node K listens on P+K, its peer listener on P+10+K, its metrics
on P+20+K; the mail relay on P+30. Files, in the cluster's folder: production.env (the settings
every node shares: deploy/production.env.example filled in), nodeK.env (node K's own), secrets.env
(generated once), nodeK.pid and nodeK.log, nodeK/ (its data directory), objects/ (the documents
every node shares), mail/ (the relay's messages), balancer/ (its configuration, map and logs).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.error import URLError
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
READY = "/api/v1/health/ready"
# systemd's TimeoutStopSec in deploy/mps@.service: how long a node may take to drain.
STOP_WITHIN = 60.0
# The balancer's address as the nodes see it: it connects to them from loopback.
BALANCER_ADDRESS = "127.0.0.1"

__all__ = [
    "DEPLOY",
    "ROOT",
    "STOP_WITHIN",
    "Layout",
    "alive",
    "is_ready",
    "node_pid",
    "private_file",
    "render_env",
    "start_node",
    "stop_node",
    "wait_ready",
    "write_settings",
]


@dataclass(frozen=True)
class Layout:
    """Where everything of one local production cluster is: its folder, ports and URLs."""

    folder: Path
    nodes: int
    port: int
    database_url: str
    broker_url: str
    cluster_name: str
    python: str
    # "nginx" (deploy/nginx.conf) or "haproxy" (docs/haproxy.cfg).
    balancer_kind: str = "nginx"

    @property
    def url(self) -> str:
        """The balancer's URL: what clients use, and the nodes' public URL."""
        return f"http://127.0.0.1:{self.port}"

    def node_port(self, node: int) -> int:
        return self.port + node

    def peer_port(self, node: int) -> int:
        return self.port + 10 + node

    def metrics_port(self, node: int) -> int:
        return self.port + 20 + node

    @property
    def mail_port(self) -> int:
        return self.port + 30

    def node_url(self, node: int) -> str:
        return f"http://127.0.0.1:{self.node_port(node)}"

    def node_env(self, node: int) -> Path:
        return self.folder / f"node{node}.env"

    def pid_file(self, node: int) -> Path:
        return self.folder / f"node{node}.pid"

    def log(self, node: int) -> Path:
        return self.folder / f"node{node}.log"

    @property
    def production_env(self) -> Path:
        return self.folder / "production.env"

    @property
    def mail(self) -> Path:
        """The local relay's messages, one file each."""
        return self.folder / "mail"

    @property
    def balancer(self) -> Path:
        """The balancer's configuration, shard map, pid file and logs."""
        return self.folder / "balancer"

    def save(self) -> None:
        fields = {**asdict(self), "folder": str(self.folder)}
        written = self.folder / ".cluster.json"
        written.write_text(json.dumps(fields, indent=2) + "\n")
        # Renamed whole: scripts/rolling-restart may be reading it.
        written.rename(self.folder / "cluster.json")

    @classmethod
    def load(cls, folder: Path) -> Layout:
        """The layout `scripts/cluster --production` wrote into `folder` when it started."""
        fields = json.loads((folder / "cluster.json").read_text())
        return cls(**{**fields, "folder": Path(fields["folder"])})


# --- Settings ---------------------------------------------------------------------------------

SETTING = re.compile(r"^(?:# )?(MPS_[A-Z0-9_]+)=(.*)$")
# What a value may hold unquoted in a file read by both bash (`set -a; . file`) and systemd's
# EnvironmentFile=; anything else goes in double quotes, which both read the same way as long
# as the value holds none of " \ $ `.
PLAIN = re.compile(r"^[A-Za-z0-9_./:@,+=%-]*$")


def _quoted(name: str, value: str) -> str:
    if PLAIN.fullmatch(value):
        return value
    if re.search(r'["\\$`\n]', value):
        msg = f"{name}: a value with quotes, backslashes, $ or line breaks cannot be written"
        raise ValueError(msg)
    return f'"{value}"'


def render_env(example: str, values: dict[str, str]) -> str:
    """deploy/production.env.example with `values` filled in: each setting's line (or its
    commented-out default, "# MPS_…=") becomes `NAME=value`, every comment and every other
    setting stays as it is. A name the example does not have is refused, so the recipe cannot
    set what the runbook does not list."""
    left = dict(values)
    lines = []
    for line in example.splitlines():
        found = SETTING.match(line)
        if found and found.group(1) in left:
            name = found.group(1)
            lines.append(f"{name}={_quoted(name, left.pop(name))}")
        else:
            lines.append(line)
    if left:
        msg = f"not settings of deploy/production.env.example: {', '.join(sorted(left))}"
        raise ValueError(msg)
    return "\n".join(lines) + "\n"


def private_file(path: Path, text: str) -> None:
    """Write a file only its owner can read, never readable by others even for a moment."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as stream:
        stream.write(text)
    path.chmod(0o600)


def _secrets(folder: Path) -> dict[str, str]:
    """The cluster's secrets, generated the first time (as the example's comment says: 48
    random characters each) and read back ever after."""
    path = folder / "secrets.env"
    if not path.exists():
        session = secrets.token_urlsafe(48)
        made = {
            "MPS_SESSION_SECRET": session,
            "MPS_ENCRYPTION_KEY": secrets.token_urlsafe(48),
            "MPS_CLUSTER_SECRET": secrets.token_urlsafe(48),
            # Pinned now, to the secret the ids are made with, so the session secret can be
            # rotated later without giving customers new ids (operations.md, "Key rotation").
            "MPS_ID_KEY": session,
        }
        private_file(path, "".join(f"{name}={value}\n" for name, value in made.items()))
    pairs = (line.partition("=") for line in path.read_text().splitlines() if "=" in line)
    return {name: value for name, _, value in pairs}


def write_settings(layout: Layout, smtp_url: str, smtp_ca_file: str, grace: str | None) -> None:
    """production.env (shared) and nodeK.env (each node's own), as the runbook has them."""
    values = {
        # The balancer reaches the nodes on loopback here; on several machines, a private address.
        "MPS_HOST": "127.0.0.1",
        "MPS_DATABASE_URL": layout.database_url,
        "MPS_BROKER_URL": layout.broker_url,
        # One file system every node mounts (they share this machine's) instead of S3.
        "MPS_OBJECT_STORAGE_URL": f"file://{layout.folder / 'objects'}",
        **_secrets(layout.folder),
        "MPS_CLUSTER_NAME": layout.cluster_name,
        "MPS_PUBLIC_URL": layout.url,
        "MPS_TRUSTED_PROXIES": BALANCER_ADDRESS,
        "MPS_SMTP_URL": smtp_url,
        "MPS_SMTP_CA_FILE": smtp_ca_file,
    }
    if grace is not None:
        values["MPS_SHUTDOWN_GRACE"] = grace
    example = (DEPLOY / "production.env.example").read_text()
    private_file(layout.production_env, render_env(example, values))
    for node in range(1, layout.nodes + 1):
        data_dir = layout.folder / f"node{node}"
        data_dir.mkdir(mode=0o700, exist_ok=True)
        data_dir.chmod(0o700)
        own = {
            "MPS_NODE_ID": f"node{node}",
            "MPS_PORT": str(layout.node_port(node)),
            "MPS_PEER_PORT": str(layout.peer_port(node)),
            "MPS_METRICS_PORT": str(layout.metrics_port(node)),
            "MPS_DATA_DIR": str(data_dir),
        }
        private_file(layout.node_env(node), "".join(f"{k}={v}\n" for k, v in own.items()))


# --- The nodes --------------------------------------------------------------------------------


def start_node(layout: Layout, node: int) -> subprocess.Popen[bytes]:
    """Start node `node` as deploy/mps@.service does (EnvironmentFile= production.env, then the
    node's own file, in an environment holding nothing else), in a session of its own so that
    only the signals meant for it reach it; its pid goes to nodeK.pid."""
    with layout.log(node).open("ab") as log:
        process = subprocess.Popen(
            [
                "/usr/bin/env",
                "-i",
                f"PATH={os.environ.get('PATH', '/usr/bin:/bin')}",
                f"HOME={os.environ.get('HOME', '/')}",
                "LANG=C.UTF-8",
                "bash",
                "-c",
                'set -a; . "$1"; . "$2"; set +a; exec "$3" run.py',
                "mps-node",
                str(layout.production_env),
                str(layout.node_env(node)),
                layout.python,
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    layout.pid_file(node).write_text(f"{process.pid}\n")
    return process


def node_pid(layout: Layout, node: int) -> int | None:
    """The pid nodeK.pid names, when that process is a node (its command line runs run.py);
    None otherwise. A pid file outlives its process, and the kernel may since have given the
    pid to another, which a SIGTERM meant for the node must never reach."""
    try:
        pid = int(layout.pid_file(node).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _runs_node(pid) else None


def _runs_node(pid: int) -> bool:
    try:
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    # From start_node's first instant (bash -c '… exec "$3" run.py') to the node itself.
    return b"run.py" in command_line


def alive(pid: int) -> bool:
    """Whether process `pid` runs: it exists and has not exited (an exited child its parent
    has not reaped yet is a zombie, "Z")."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def is_ready(url: str) -> bool:
    try:
        # Loopback http only: the layout's own addresses.
        with urlopen(f"{url}{READY}", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)
    except (OSError, URLError):
        return False


def wait_ready(url: str, within: float, still: Callable[[], bool] = lambda: True) -> float:
    """Wait until `url` answers 200 on readiness; how long it took. Raises TimeoutError after
    `within` seconds, or RuntimeError as soon as `still()` says the node is gone."""
    started = time.monotonic()
    while not is_ready(url):
        if not still():
            msg = f"{url} exited before it was ready"
            raise RuntimeError(msg)
        if time.monotonic() - started > within:
            msg = f"{url} not ready within {within:g} s"
            raise TimeoutError(msg)
        time.sleep(0.1)
    return time.monotonic() - started


def stop_node(layout: Layout, node: int, within: float = STOP_WITHIN) -> int | None:
    """SIGTERM node `node` (once: a second would end its grace) and wait until it has exited;
    its pid, or None when it was not running. Killed after `within` seconds, as systemd would."""
    pid = node_pid(layout, node)
    if pid is None or not alive(pid):
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    return pid
