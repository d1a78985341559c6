"""The API explorer at /api/docs (development only), driven in a real headless Chromium under
its Content Security Policy, which allows its one script and one style by their hashes."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from playwright.async_api import async_playwright

from tests.conftest import CHROMIUM_ARGS
from tests.helpers import sign_up
from tests.pages.browser import record_violations


async def test_explorer_loads_the_api_and_sends_a_request_with_no_policy_violation(
    served: TestClient[Any, Any], chromium: str
) -> None:
    # given a signed-in member and the explorer open in the browser
    member = await sign_up(served)
    base = str(served.make_url("")).rstrip("/")

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            problems = await record_violations(page)
            await page.goto(f"{base}/api/docs")
            styled = await page.evaluate("getComputedStyle(document.body).display")

            # when the member loads the API with the session token and sends GET /auth/me
            await page.fill("#token", member.token)
            await page.click("#load")
            await page.click("button.op:has-text('/api/v1/auth/me')")
            await page.click("#send")
            await page.wait_for_selector("#out:has-text('200')", timeout=10_000)
            out = await page.inner_text("#out")
        finally:
            await browser.close()

    # then its script ran (it fetched the document and the route), its style applied, and the
    # browser refused nothing
    assert member.email in out
    assert styled == "flex"
    assert problems == []


async def test_a_script_injected_into_a_page_is_refused_and_reported(
    served: TestClient[Any, Any], chromium: str
) -> None:
    """What the two tests above rely on: the policy is enforced, and a refusal is seen."""
    base = str(served.make_url("")).rstrip("/")

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            problems = await record_violations(page)
            await page.goto(f"{base}/api/docs")

            # when markup with an inline script and an inline handler reaches the page
            await page.evaluate(
                """() => {
                  const script = document.createElement('script');
                  script.textContent = 'window.injected = true';
                  document.body.appendChild(script);
                  const img = document.createElement('img');
                  img.setAttribute('onerror', 'window.handled = true');
                  img.src = 'data:,';
                  document.body.appendChild(img);
                }"""
            )
            await page.wait_for_timeout(200)
            ran = await page.evaluate("[window.injected === true, window.handled === true]")
        finally:
            await browser.close()

    # then neither ran, and the refusals were reported
    assert ran == [False, False]
    assert any(p.startswith("csp: script-src-elem refused inline") for p in problems), problems
    assert any(p.startswith("csp: script-src-attr refused inline") for p in problems), problems
