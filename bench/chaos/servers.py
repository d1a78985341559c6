"""The Postgres and RabbitMQ a run stands on: the shared ones, or, with --own-servers, a pair
the suite starts in a folder of its own so that restarting them touches nobody else."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
from pathlib import Path
from urllib.parse import urlsplit

from bench.chaos.options import Options
from tests.helpers import free_port


async def _run(*command: str, env: dict[str, str] | None = None, within: float = 90.0) -> str:
    """A command's output (stderr folded in); raises RuntimeError with its output if it fails
    or does not end within `within` seconds (then it is killed)."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    try:
        async with asyncio.timeout(within):
            out, _ = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        msg = f"{' '.join(command)} did not end within {within:.0f}s"
        raise RuntimeError(msg) from None
    text = out.decode(errors="replace")
    if process.returncode != 0:
        msg = f"{' '.join(command)} failed ({process.returncode}): {text.strip()[-500:]}"
        raise RuntimeError(msg)
    return text


class Servers:
    """The Postgres and RabbitMQ the cluster runs on: the shared ones (never restarted), or,
    with `own_servers`, ones started by `start` in `folder` and stopped by `stop`. The URLs
    name the servers in use once `start` returned."""

    def __init__(self, options: Options, folder: Path) -> None:
        self.pg_url = options.pg_url
        self.broker_url = options.broker_url
        self.own = options.own_servers
        self.folder = folder
        self.rabbit_node: str | None = None
        self._pg_data: Path | None = None
        self._pg_port = 0
        self._rabbit_env: dict[str, str] = {}

    @property
    def pg_port(self) -> int:
        return urlsplit(self.pg_url).port or 5432

    @property
    def broker_port(self) -> int:
        return urlsplit(self.broker_url).port or 5672

    async def start(self) -> None:
        if not self.own:
            return
        await self._start_postgres()
        await self._start_rabbitmq()

    async def _start_postgres(self) -> None:
        data = self.folder / "postgres"
        data.mkdir(parents=True)
        port = free_port()
        # Each server's folder belongs to the user it runs as (both refuse to run as root).
        self.folder.chmod(0o755)
        if _runas():
            shutil.chown(data, "postgres", "postgres")
        await _run(*_runas(), "initdb", "-D", str(data), "-A", "trust", "-U", "postgres")
        self._pg_data = data
        self._pg_port = port
        await self._pg_ctl("start")
        self.pg_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    async def _pg_ctl(self, action: str) -> None:
        assert self._pg_data is not None
        options = f"-p {self._pg_port} -k {self._pg_data} -c listen_addresses=127.0.0.1"
        args = ["-D", str(self._pg_data), "-w", "-t", "60", "-l", str(self._pg_data / "log")]
        if action != "stop":
            args += ["-o", options]
        else:
            args += ["-m", "fast"]
        await _run(*_runas(), "pg_ctl", action, *args)

    async def _start_rabbitmq(self) -> None:
        base = self.folder / "rabbitmq"
        base.mkdir(parents=True)
        port, dist = free_port(), free_port()
        self.rabbit_node = f"chaos{secrets.token_hex(3)}@localhost"
        (base / "enabled_plugins").write_text("[].\n")
        # The system's rabbitmq.conf names the shared server's port: ours names its own.
        (base / "rabbitmq.conf").write_text(f"listeners.tcp.local = 127.0.0.1:{port}\n")
        if os.geteuid() == 0:  # the wrapper runs the server as the rabbitmq user
            for path in [base, *base.iterdir()]:
                shutil.chown(path, "rabbitmq", "rabbitmq")
        self._rabbit_env = {
            "RABBITMQ_NODENAME": self.rabbit_node,
            "RABBITMQ_NODE_PORT": str(port),
            "RABBITMQ_DIST_PORT": str(dist),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(base / "pid"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        }
        await self._rabbit_up()
        self.broker_url = f"amqp://guest:guest@127.0.0.1:{port}/"

    async def _rabbit_up(self) -> None:
        await _run("rabbitmq-server", "-detached", env=self._rabbit_env)
        await self.rabbitmqctl(
            "wait", "--timeout", "120", self._rabbit_env["RABBITMQ_PID_FILE"], within=150
        )

    async def restart_postgres(self) -> str:
        await self._pg_ctl("stop")
        await self._pg_ctl("start")
        return "postgres restarted"

    async def restart_rabbitmq(self) -> str:
        await self.rabbitmqctl("stop", within=120)
        await self._rabbit_up()
        return "rabbitmq restarted"

    async def rabbitmqctl(self, *args: str, within: float = 90.0) -> str:
        """rabbitmqctl against the broker in use (ours by its node name, else the default)."""
        node = ["-n", self.rabbit_node] if self.rabbit_node else []
        return await _run("rabbitmqctl", *node, *args, within=within)

    async def stop(self) -> None:
        if self.rabbit_node is not None:
            with contextlib.suppress(RuntimeError):
                await self.rabbitmqctl("stop")
        if self._pg_data is not None:
            with contextlib.suppress(RuntimeError):
                await self._pg_ctl("stop")


def _runas() -> list[str]:
    """Postgres refuses to run as root: its commands run as the postgres user then."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
