"""What a browser test opens and watches for: a page in a real headless Chromium, and anything
the page's Content Security Policy refused or any error the page reported.

One Chromium serves every browser test of a run (`SharedChromium`, behind the `browser` fixture
of tests/conftest.py): launching Playwright's driver and the browser costs a second or two, far
more than most of these tests take in the page. Each test still gets pages of its own in
contexts of their own (Playwright's contexts share no cookie, storage or cache), and every
context a test opened is closed when it ends, as closing a browser of its own would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Error,
    Page,
    Playwright,
    async_playwright,
)

__all__ = [
    "ARTIFACTS",
    "CHROMIUM_ARGS",
    "SharedChromium",
    "assert_not_valid_link",
    "inner_texts",
    "keep_screenshot",
    "not_failed_loads",
    "open_page",
    "record_dialogs",
    "record_violations",
]

# Where the screenshots kept for a person to look at go.
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Reports every `securitypolicyviolation` event of every document the page opens; the binding
# is Playwright's, outside the page's policy, so the report itself cannot be refused.
_LISTEN = """
document.addEventListener('securitypolicyviolation', (event) => {
  const what = `${event.effectiveDirective} refused ${event.blockedURI}`;
  window.reportViolation(`${what}: ${event.sample}`);
});
"""


class SharedChromium:
    """One headless Chromium for the run's browser tests, launched on first use, and launched
    again if it has gone (a crash then fails one test, not every one after it).

    Use it on one event loop only: Playwright's connection belongs to the loop that started it
    (the browser tests run on the session's loop for that reason; see tests/conftest.py)."""

    def __init__(self, executable: str) -> None:
        self._executable = executable
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None

    async def browser(self) -> Browser:
        if self._browser is None or not self._browser.is_connected():
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            self._browser = await self._playwright.chromium.launch(
                executable_path=self._executable, args=CHROMIUM_ARGS
            )
        return self._browser

    async def close_contexts(self) -> None:
        """Close every context (and so every page) open in the browser: what one test left."""
        if self._browser is not None and self._browser.is_connected():
            for context in self._browser.contexts:
                await context.close()

    async def close(self) -> None:
        try:
            if self._browser is not None and self._browser.is_connected():
                await self._browser.close()
        finally:
            if self._playwright is not None:
                await self._playwright.stop()
            self._browser = self._playwright = None


async def record_violations(page: Page) -> list[str]:
    """A list that fills with every policy violation, console error and uncaught error of
    `page` from now on; a page that works under its policy leaves it empty."""
    problems: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(f"console: {message.text}")

    def page_error(error: Error) -> None:
        problems.append(f"page error: {error}")

    await page.expose_function("reportViolation", lambda text: problems.append(f"csp: {text}"))
    await page.add_init_script(_LISTEN)
    page.on("console", console)
    page.on("pageerror", page_error)
    return problems


def record_dialogs(page: Page) -> list[str]:
    """A list that fills with the message of every dialog (alert, confirm, prompt) `page` opens
    from now on, each dismissed so that the page goes on; a page that runs none of the markup
    it shows leaves it empty."""
    messages: list[str] = []

    async def dismiss(opened: Dialog) -> None:
        messages.append(opened.message)
        await opened.dismiss()

    page.on("dialog", dismiss)
    return messages


async def inner_texts(page: Page, *selectors: str) -> list[str]:
    """The text each selector's element shows, in the order given."""
    return [await page.inner_text(selector) for selector in selectors]


async def keep_screenshot(page: Page, name: str) -> Path:
    """A full-page screenshot of `page` kept in ARTIFACTS as `name`; where it is."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    await page.screenshot(path=str(path), full_page=True)
    return path


def not_failed_loads(problems: list[str]) -> list[str]:
    """The problems but a 4xx answer, which the browser logs as a failed load (not a refusal)."""
    return [p for p in problems if not p.startswith("console: Failed to load resource")]


async def assert_not_valid_link(
    browser: Browser, url: str, heading: str, parts: str, secrets: Iterable[str]
) -> str:
    """Open `url`, a hosted page's link with a wrong token: it answers 404 with an HTML page
    headed `heading`, with nothing the selector `parts` finds and none of `secrets` anywhere
    in it, and the browser refused nothing (the 404 is logged as a failed load, which is not a
    refusal). The text the page shows."""
    async with open_page(browser) as (page, problems):
        response = await page.goto(url)
        assert response is not None, url
        invalid = await page.is_visible("main#invalid")
        shown = await page.inner_text("main#invalid h1")
        found = await page.locator(parts).count()
        text = await page.inner_text("body")
        html = await page.content()
    assert response.status == 404
    assert response.headers.get("content-type", "").startswith("text/html")
    assert invalid and shown == heading
    assert found == 0
    for secret in secrets:
        assert secret not in html, secret
    assert not_failed_loads(problems) == []
    return text


@asynccontextmanager
async def open_page(browser: Browser) -> AsyncIterator[tuple[Page, list[str]]]:
    """A fresh page in a context of its own in `browser`, with the list `record_violations`
    fills for it; the context is closed on leaving, also when the block fails."""
    context = await browser.new_context()
    try:
        page = await context.new_page()
        yield page, await record_violations(page)
    finally:
        await context.close()
