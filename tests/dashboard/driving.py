"""Steps the dashboard's browser tests take: opening a watched page, signing in through the
emailed code, reading the session token the tab keeps, photographing a view at two widths, and
the axe-core accessibility check."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import Browser, Page

from tests.helpers import latest_code
from tests.pages.browser import record_violations

AXE = Path(__file__).resolve().parent / "axe" / "axe.min.js"
# Widths every view is photographed at: a laptop and a phone.
WIDTHS = (1280, 390)
_SESSION_KEY = "mps.dashboard.session"


@dataclass
class Watched:
    """A page and what it did wrong so far: policy refusals, console errors, page errors."""

    page: Page
    problems: list[str] = field(default_factory=list)


async def open_page(browser: Browser, *, width: int = 1280) -> Watched:
    page = await browser.new_page(viewport={"width": width, "height": 900})
    return Watched(page, await record_violations(page))


def base_url(served: TestClient[Any, Any]) -> str:
    return str(served.make_url("")).rstrip("/")


async def sign_in(
    watched: Watched,
    served: TestClient[Any, Any],
    email: str,
    path: str = "/dashboard",
) -> None:
    """Open `path` signed out, sign in with the code mailed to `email` using the keyboard only,
    and wait until the dashboard shows the signed-in frame."""
    page = watched.page
    await page.goto(base_url(served) + path)
    await page.wait_for_selector("#email")
    await page.keyboard.type(email)  # the email field has the focus on arrival
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#code")
    code = await latest_code(served, email)
    await page.keyboard.type(code)  # the code field has the focus on arrival
    await page.keyboard.press("Enter")
    await page.wait_for_selector("#sign-out")


async def session_token(page: Page) -> str | None:
    stored = await page.evaluate(f"sessionStorage.getItem({json.dumps(_SESSION_KEY)})")
    return None if stored is None else str(json.loads(stored)["token"])


async def photograph(page: Page, directory: Path, name: str) -> list[Path]:
    """Full-page screenshots of the current view at each of WIDTHS; the viewport is left at
    the first width."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    taken = []
    for width in (*WIDTHS[1:], WIDTHS[0]):
        await page.set_viewport_size({"width": width, "height": 900})
        path = directory / f"{name}-{width}.png"
        await page.screenshot(path=str(path), full_page=True)
        taken.append(path)
    return taken


async def serious_accessibility_violations(page: Page) -> list[str]:
    """What axe-core finds of impact serious or critical on the current view. The library is
    evaluated by the browser's debugging protocol, which the page's policy does not govern;
    the page itself never loads it."""
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        source = await asyncio.to_thread(AXE.read_text, encoding="utf-8")
        await page.evaluate(source + "\n;undefined")
    results = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]
