"""HTTP as the suite's clients speak it: every answer counted per route and status, a 500 (or a
503 without Retry-After) made a violation where it happens, and a keyed request sent again to
the next node, as a balancer would, until it is answered.

Routes are named by their template (`/merchant/payments/{id}`) so the counts group by route;
the path sent is API + route unless a filled-in `path` is given."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from bench.chaos.report import Report

API = "/api/v1"
# A keyed request is sent again (next node) until answered, for this long at most.
RETRY_WITHIN = 150.0
# One HTTP request waits this long at most: longer than the service's own deadlines (30 s), and
# than any pause the suite makes, so a paused node's answer is still taken.
REQUEST_TIMEOUT = 75.0
# How many times a read is tried, half a second apart, before the suite gives up on it.
READ_TRIES = 60


@dataclass
class Answer:
    status: int  # 0: no answer
    body: dict[str, Any]
    retry_after: str | None
    node: int
    error: str = ""

    @property
    def request_id(self) -> str:
        return str(self.body.get("requestId", "?"))

    @property
    def result(self) -> str:
        """What the answer names (its status and resource), to compare answers to one key."""
        body = self.body
        if "id" in body:
            return f"{self.status} {body['id']}"
        return f"{self.status} {body.get('reference')} {body.get('status')} {body.get('paidAt')}"

    def brief(self) -> str:
        what = self.error or self.body.get("code") or self.body.get("message") or ""
        return f"{self.status} node{self.node + 1} {self.request_id} {what}".strip()


class Client:
    """Requests to the nodes at `urls` (node i is urls[i]); each answer is counted in `report`."""

    def __init__(self, urls: list[str], session: aiohttp.ClientSession, report: Report) -> None:
        self.urls = urls
        self.session = session
        self.report = report

    async def send(
        self,
        method: str,
        route: str,
        node: int,
        *,
        path: str | None = None,
        token: str | None = None,
        body: Any = None,
        key: str | None = None,
        params: dict[str, str] | None = None,
    ) -> Answer:
        """One request, never raising for the network: no answer is status 0."""
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if key:
            headers["Idempotency-Key"] = key
        label = f"{method} {route}"
        path = path or f"{API}{route}"
        try:
            async with self.session.request(
                method, f"{self.urls[node]}{path}", json=body, headers=headers, params=params
            ) as r:
                raw = await r.read()
                status, retry_after = r.status, r.headers.get("Retry-After")
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.report.statuses[(label, 0)] += 1
            return Answer(0, {}, None, node, type(exc).__name__)
        try:
            loaded = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            loaded = {"raw": raw[:200].decode(errors="replace")}
        answer = Answer(status, loaded if isinstance(loaded, dict) else {}, retry_after, node)
        self.report.statuses[(label, status)] += 1
        if status >= 500 and not (status == 503 and retry_after):
            self.report.violate(
                "no 500" if status != 503 else "503 carries Retry-After",
                f"{label} answered {status}" + ("" if status != 503 else " without Retry-After"),
                f"{path} {answer.brief()}",
            )
        return answer

    async def keyed(
        self,
        route: str,
        first: int,
        *,
        path: str | None = None,
        token: str | None,
        body: Any,
        key: str,
    ) -> list[Answer]:
        """Every answer to one keyed POST, sent again to the next node after no answer, a 503 or
        a 5xx, until answered otherwise or RETRY_WITHIN passed; the last is final."""
        answers: list[Answer] = []
        node = first
        deadline = time.monotonic() + RETRY_WITHIN
        while True:
            answer = await self.send(
                "POST", route, node, path=path, token=token, body=body, key=key
            )
            answers.append(answer)
            if 0 < answer.status < 500 or time.monotonic() > deadline:
                return answers
            wait = 0.2
            if answer.retry_after:
                with contextlib.suppress(ValueError):
                    wait = min(2.0, float(answer.retry_after))
            await asyncio.sleep(wait)
            node = (node + 1) % len(self.urls)

    async def read(
        self, route: str, node: int, *, token: str, params: dict[str, str] | None = None
    ) -> Answer:
        """A GET answered 200, asked of `node` and then of each next node in turn; raises
        RuntimeError after READ_TRIES refusals (the suite cannot go on without it)."""
        for attempt in range(READ_TRIES):
            answer = await self.send(
                "GET", route, (node + attempt) % len(self.urls), token=token, params=params
            )
            if answer.status == 200:
                return answer
            await asyncio.sleep(0.5)
        msg = f"GET {route} was not answered 200: {answer.brief()}"
        raise RuntimeError(msg)

    async def rows(self, route: str, node: int, *, token: str) -> list[dict[str, Any]]:
        """Every row of a list route, following its cursor; raises as `read` does."""
        rows: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
            answer = await self.read(route, node, token=token, params=params)
            rows += answer.body["data"]
            cursor = answer.body.get("nextCursor")
            if not cursor:
                return rows

    async def payment(self, payment_id: str, node: int, *, token: str) -> Answer:
        """One read of a payment from one node, whatever it answers."""
        return await self.send(
            "GET",
            "/merchant/payments/{id}",
            node,
            path=f"{API}/merchant/payments/{payment_id}",
            token=token,
        )
