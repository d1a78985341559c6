"""What a browser test opens and watches for: a page in a real headless Chromium, and anything
the page's Content Security Policy refused or any error the page reported."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from playwright.async_api import ConsoleMessage, Error, Page, async_playwright

from tests.conftest import CHROMIUM_ARGS

__all__ = ["not_failed_loads", "open_page", "record_violations"]

# Reports every `securitypolicyviolation` event of every document the page opens; the binding
# is Playwright's, outside the page's policy, so the report itself cannot be refused.
_LISTEN = """
document.addEventListener('securitypolicyviolation', (event) => {
  const what = `${event.effectiveDirective} refused ${event.blockedURI}`;
  window.reportViolation(`${what}: ${event.sample}`);
});
"""


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
async def open_page(chromium: str) -> AsyncIterator[tuple[Page, list[str]]]:
    """A fresh page in a headless Chromium launched from `chromium`, with the list
    `record_violations` fills for it; the browser is closed on leaving, also when the block
    fails, so a failed test leaves no Chromium behind."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            yield page, await record_violations(page)
        finally:
            await browser.close()
