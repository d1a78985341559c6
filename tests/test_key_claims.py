"""Idempotency-Key claims asked for apart from a command (`ClaimKey`, mps.http.idempotency): a
claim taken is released whatever becomes of its request, a cancellation while the claim is
being answered included, and a release frees only its own request's claim."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from mps.actors.company import ClaimKey, ReleaseKey
from mps.bootstrap import Overrides
from mps.http.idempotency import Claim, new_claim, run_idempotent
from mps.http.versions import CURRENT
from mps.services import Services
from tests.conftest import Clock
from tests.helpers import sign_up
from tests.money import services

PATIENCE = 10.0


async def _free(svc: Services, company_id: str, key: str) -> bool:
    """Whether the company holds no claim on `key` (a probe's own claim, released at once)."""
    waiter = await svc.shards.ask_company(company_id, ClaimKey(key, "probe"))
    if waiter is not None:
        return False
    await svc.shards.tell_company(company_id, ReleaseKey(key, "probe"))
    return True


async def _eventually_free(svc: Services, company_id: str, key: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not await _free(svc, company_id, key):
        assert time.monotonic() < deadline, f"the key {key!r} is still held by a request gone"
        await asyncio.sleep(0.01)


@pytest.fixture
async def client(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application], clock: Clock
) -> TestClient[Any, Any]:
    app = make_app(Overrides(clock=clock))
    made: TestClient[Any, Any] = await aiohttp_client(app)
    return made


async def test_a_request_cancelled_while_its_claim_is_answered_leaves_the_key_free(
    client: TestClient[Any, Any],
) -> None:
    svc = services(client)
    member = await sign_up(client)
    started = asyncio.Event()

    async def run(_claim: Claim) -> web.StreamResponse:
        started.set()
        await asyncio.Event().wait()  # the handler never ends: only a cancellation stops it
        raise AssertionError

    # Cancelled at each point of the claim's way, from before it is sent to after it is held.
    for turns in range(8):
        key = f"leak-{turns}"
        claim = new_claim(svc, member.company_id, key, "print", f"req_{turns}", CURRENT)
        request = asyncio.ensure_future(run_idempotent(svc, member.company_id, claim, run))
        for _ in range(turns):
            await asyncio.sleep(0)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request

        # then the key is free again for the next request under it
        await _eventually_free(svc, member.company_id, key)


async def test_a_release_by_another_request_leaves_the_holders_claim_held(
    client: TestClient[Any, Any],
) -> None:
    svc = services(client)
    member = await sign_up(client)
    company = member.company_id

    # given a key claimed by one request
    assert await svc.shards.ask_company(company, ClaimKey("k", "first")) is None

    # when a request that never held it releases it (it gave up waiting)
    await svc.shards.tell_company(company, ReleaseKey("k", "second"))

    # then the holder's claim stands, until the holder releases it
    waiter = await svc.shards.ask_company(company, ClaimKey("k", "third"))
    assert isinstance(waiter, asyncio.Future)
    assert not waiter.done()
    await svc.shards.tell_company(company, ReleaseKey("k", "first"))
    await asyncio.wait_for(waiter, PATIENCE)
    assert await _free(svc, company, "k")
