"""A mail relay for a cluster on this machine: SMTP over TLS (`smtps://`) on loopback that delivers
nothing and keeps every message as a file, so that a production node, which signs people in by
emailed code and sends only over verified TLS, can run here (bench/production_cluster.py).

    relay = MailRelay(folder, port)        # its certificate: relay.pem in `folder`, made once
    await relay.start()                    # MPS_SMTP_URL=smtps://127.0.0.1:<port>
                                           # MPS_SMTP_CA_FILE=<folder>/relay.pem

It speaks as much SMTP as the service's mailer (mps.adapters.mail, smtplib) uses: EHLO, MAIL,
RCPT, DATA, QUIT, no authentication. Each message is written beside the folder's others as
`<UTC time>-<n>.eml`, renamed into place whole. Runs on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench.cluster_layout import private_file

__all__ = ["MailRelay", "loopback_certificate"]


def loopback_certificate(common_name: str, valid_for: datetime.timedelta) -> tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1, its own authority, and its key (PKCS#8): both
    PEM, the key unencrypted."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + valid_for)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def _certificate(folder: Path) -> tuple[Path, Path]:
    """The relay's certificate and key, made once."""
    cert_path, key_path = folder / "relay.pem", folder / "relay-key.pem"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    certificate, key = loopback_certificate("mps local mail relay", datetime.timedelta(days=3650))
    private_file(key_path, key.decode())
    cert_path.write_bytes(certificate)
    return cert_path, key_path


class MailRelay:
    """SMTP over TLS (smtps://) on loopback, enough of it for the service's mailer: it accepts
    every message and keeps it as a file in `folder` (nothing is delivered)."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder = folder
        self.port = port
        self.cert, self.key = _certificate(folder)
        self._server: asyncio.Server | None = None
        self._count = 0

    async def start(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        self._server = await asyncio.start_server(
            self._session, "127.0.0.1", self.port, ssl=context
        )

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def say(line: str) -> None:
            writer.write(f"{line}\r\n".encode())
            await writer.drain()

        try:
            await say("220 127.0.0.1 mps local relay")
            while line := (await reader.readline()).decode("utf-8", "replace").rstrip("\r\n"):
                verb = line.split(" ", 1)[0].upper()
                if verb == "EHLO":
                    await say("250-127.0.0.1")
                    await say("250 8BITMIME")
                elif verb in ("HELO", "MAIL", "RCPT", "RSET", "NOOP"):
                    await say("250 OK")
                elif verb == "DATA":
                    await say("354 end with .")
                    self._keep(await _data(reader))
                    await say("250 kept")
                elif verb == "QUIT":
                    await say("221 bye")
                    break
                else:
                    await say("502 not here")
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()

    def _keep(self, message: bytes) -> None:
        self._count += 1
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%f")
        temporary = self.folder / f".{stamp}-{self._count}.eml"
        temporary.write_bytes(message)
        # Renamed whole, so a reader never sees half a message.
        temporary.rename(self.folder / f"{stamp}-{self._count}.eml")


async def _data(reader: asyncio.StreamReader) -> bytes:
    lines = []
    while (line := await reader.readline()) not in (b".\r\n", b".\n", b""):
        # A line the client started with a dot was sent with one more (RFC 5321, 4.5.2).
        lines.append(line[1:] if line.startswith(b"..") else line)
    return b"".join(lines)
