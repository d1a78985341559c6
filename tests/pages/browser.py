"""What a browser test watches for: anything the page's Content Security Policy refused, and any
error the page reported."""

from __future__ import annotations

from playwright.async_api import ConsoleMessage, Error, Page

__all__ = ["record_violations"]

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
