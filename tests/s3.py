"""A real S3-compatible server for the tests: moto's, on loopback, started once per session
(the `s3_endpoint` fixture in conftest), and a client of our own to look behind a store's back."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from aiobotocore.session import get_session
from moto.server import ThreadedMotoServer

__all__ = ["ACCESS_KEY", "SECRET_KEY", "new_bucket", "s3_admin", "s3_server"]

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key-0123456789"


@contextmanager
def s3_server() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@asynccontextmanager
async def s3_admin(endpoint: str) -> AsyncIterator[Any]:
    async with get_session().create_client(
        "s3",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    ) as client:
        yield client


async def new_bucket(endpoint: str) -> str:
    """A bucket of its own for one test."""
    bucket = f"test-{secrets.token_hex(6)}"
    async with s3_admin(endpoint) as admin:
        await admin.create_bucket(Bucket=bucket)
    return bucket
