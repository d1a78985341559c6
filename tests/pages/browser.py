"""What a browser test opens and watches for: a page in a real headless Chromium, and anything
the page's Content Security Policy refused or any error the page reported.

One Chromium serves every browser test of a run (`SharedChromium`, behind the `browser` fixture
of tests/conftest.py): launching Playwright's driver and the browser costs a second or two, far
more than most of these tests take in the page. Each test still gets pages of its own in
contexts of their own (Playwright's contexts share no cookie, storage or cache), and every
context a test opened is closed when it ends, as closing a browser of its own would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from playwright.async_api import Browser, ConsoleMessage, Error, Page, Playwright, async_playwright

__all__ = ["CHROMIUM_ARGS", "SharedChromium", "not_failed_loads", "open_page", "record_violations"]

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


def not_failed_loads(problems: list[str]) -> list[str]:
    """The problems but a 4xx answer, which the browser logs as a failed load (not a refusal)."""
    return [p for p in problems if not p.startswith("console: Failed to load resource")]


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
