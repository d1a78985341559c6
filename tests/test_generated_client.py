"""A client generated from the OpenAPI document by a maintained generator (openapi-python-client)
works against the live service as it is: one `Payment` model, the request headers declared,
errors parsed as the `Error` schema."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import sign_up

GENERATOR = Path(sys.executable).parent / "openapi-python-client"


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "mps_client" or m.startswith("mps_client.")]:
            del sys.modules[name]


async def test_a_generated_client_creates_lists_and_gets_a_payment(
    client: TestClient[Any, Any], on_path: Path
) -> None:
    # given the document, as a signed-in member downloads it
    member = await sign_up(client)
    response = await client.get("/api/v1/developer/openapi.json", headers=member.headers)
    document = await response.json()
    (on_path / "openapi.json").write_bytes(orjson.dumps(document))
    # The generator's own formatting step is not what is tested.
    (on_path / "config.yml").write_text("post_hooks: []\n")

    # when a client is generated from it
    process = await asyncio.create_subprocess_exec(
        str(GENERATOR),
        "generate",
        "--path", str(on_path / "openapi.json"),
        "--meta", "none",
        "--output-path", str(on_path / "mps_client"),
        "--config", str(on_path / "config.yml"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await asyncio.wait_for(process.communicate(), 120))[0].decode()
    assert process.returncode == 0, output
    assert "Warning" not in output, output
    api = importlib.import_module("mps_client")
    models = importlib.import_module("mps_client.models")
    create = importlib.import_module("mps_client.api.payments.post_merchant_payments")
    listing = importlib.import_module("mps_client.api.payments.get_merchant_payments")
    read = importlib.import_module("mps_client.api.payments.get_merchant_payments_id")
    base = str(client.make_url("")).rstrip("/")

    # and used to create, list and get a payment
    async with api.AuthenticatedClient(base_url=base, token=member.token) as generated_client:
        body = models.PostMerchantPaymentsBody(
            amount_minor="1250", currency="usd", description="Two flat whites"
        )
        created = await create.asyncio(
            client=generated_client, body=body, idempotency_key="order-1001"
        )
        assert isinstance(created, models.Payment), created.to_dict()
        again = await create.asyncio_detailed(
            client=generated_client, body=body, idempotency_key="order-1001"
        )
        page = await listing.asyncio(client=generated_client, limit=10)
        got = await read.asyncio(id=created.id, client=generated_client)
        missing = await read.asyncio(id="pay_missing", client=generated_client)

    # then every answer is one of the named models, with the service's values
    assert isinstance(created, models.Payment), created
    assert created.status == models.PaymentStatus.PENDING
    assert created.amount_minor == "1250" and created.currency == "USD"
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.parsed.id == created.id
    assert isinstance(page, models.PaymentList)
    assert [p.id for p in page.data] == [created.id] and page.has_more is False
    assert all(isinstance(p, models.Payment) for p in page.data)
    assert isinstance(got, models.Payment) and got.description == "Two flat whites"
    assert isinstance(missing, models.Error) and missing.status_code == 404
