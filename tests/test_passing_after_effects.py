"""A request that asked an actor on this node before it reached a company another node owns
(mps.http.passing): what it did here may stand, so it is neither passed whole to the owner (it
would run twice) nor reported to the asking node as not run (it would be passed again)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, make_mocked_request

from mps.actors.company import ReleaseKey
from mps.actors.shards import asked_an_actor
from mps.errors import ShardMoved, Unavailable
from mps.http.forwarded import NOT_RUN_HERE
from mps.http.keys import PASSED, SERVICES
from mps.http.passing import pass_on
from tests.helpers import sign_up


async def test_a_passed_request_that_asked_an_actor_here_is_not_said_to_be_unrun(
    client: TestClient[Any, Any],
) -> None:
    member = await sign_up(client, "pat@example.com", "Blue Mug Coffee")
    services = client.app[SERVICES]

    async def handler_asking_then_reaching_elsewhere() -> None:
        # given a passed request whose handler asked an actor here
        request = make_mocked_request("POST", "/api/v1/auth/session/company")
        request[PASSED] = True
        await services.shards.tell_company(member.company_id, ReleaseKey("nothing-held"))

        # when it then reaches a company another node owns
        with pytest.raises(Unavailable) as raised:
            await pass_on(services, request, 0)

        # then the answer says its outcome is unknown, not that it did not run
        assert not isinstance(raised.value, ShardMoved)
        assert "may or may not have taken effect" in str(raised.value)
        assert not request.get(NOT_RUN_HERE)

    await asyncio.create_task(handler_asking_then_reaching_elsewhere())


async def test_a_passed_request_that_asked_no_actor_here_is_said_to_be_unrun(
    client: TestClient[Any, Any],
) -> None:
    services = client.app[SERVICES]

    async def handler_reaching_elsewhere_first() -> None:
        request = make_mocked_request("POST", "/api/v1/merchant/payments")
        request[PASSED] = True

        with pytest.raises(ShardMoved):
            await pass_on(services, request, 0)

        assert request[NOT_RUN_HERE] is True
        assert not asked_an_actor()

    await asyncio.create_task(handler_reaching_elsewhere_first())
