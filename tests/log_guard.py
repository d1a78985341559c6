"""The log guard: a whole test run's log must not hold any secret the run used.

For the whole session a handler on the root logger records every record at INFO and above (the
level run.py logs at; below it aiosqlite alone writes every statement twice), formatted, after
the redaction filter run.py installs (`mps.logs.install_redaction`). Every app the fixtures
build is watched (`watch`): each JSON request and response body it serves is scanned for secrets
(session tokens, API keys, sign-in codes, Luhn-valid card numbers, and email addresses, also
percent-encoded), which are remembered; tests may `remember` others. CVCs are not remembered:
three digits are in any log by chance (the filter's own tests cover them). At the end of the
session, a recorded line holding a remembered secret fails the run and is shown with the secret
hidden.

The handler is the first on the root logger, so pytest's own capture handlers, added later, see
the records already redacted as well.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web

from mps.domain.cards import luhn_valid
from mps.logs import RedactSecrets

__all__ = ["LogGuard", "leaks", "remember", "remember_in", "watch"]

_SECRETS: set[str] = set()

_JWT = re.compile(r"eyJ[\w-]*\.[\w-]+\.[\w-]+")
_API_KEY = re.compile(r"(?:sk|pk)_(?:test|live)_[0-9A-Za-z]{16,}")
_CODE = re.compile(r"\"(?:otp|code)\"\s*:\s*\"(\d{6})\"")
_CARD = re.compile(r"\"number\"\s*:\s*\"([\d ]{12,23})\"")
_EMAIL = re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def remember(*secrets: str) -> None:
    """Fail the run if any of `secrets` shows up in its log."""
    _SECRETS.update(s for s in secrets if s)


def remember_in(text: str) -> None:
    """Remember every secret in a request or response body."""
    remember(*_JWT.findall(text), *_API_KEY.findall(text), *_CODE.findall(text))
    for email in _EMAIL.findall(text):
        if len(email) >= 6:
            remember(email, quote(email, safe=""))  # as it is written in a query string, too
    for number in _CARD.findall(text):
        digits = number.replace(" ", "")
        if luhn_valid(digits):
            remember(digits)


async def _scan(request: web.Request, response: web.StreamResponse) -> None:
    # Only a body the handler has read (aiohttp keeps it); reading one here could block.
    if request.body_exists and not request.can_read_body:
        remember_in((await request.read()).decode(errors="replace"))
    body = response.body if isinstance(response, web.Response) else None
    if isinstance(body, bytes) and response.content_type == "application/json":
        remember_in(body.decode(errors="replace"))


def watch(app: web.Application) -> None:
    """Remember the secrets in every body `app` serves."""
    app.on_response_prepare.append(_scan)


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.addFilter(RedactSecrets())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def leaks(lines: list[str], secrets: set[str]) -> list[tuple[str, str]]:
    """(secret, line) for each line holding a secret; an all-digit secret counts only where it
    is not part of a longer number."""
    text = "\n".join(lines)
    found = []
    for secret in secrets:
        start = text.find(secret)
        while start != -1:
            end = start + len(secret)
            digits = secret.isdigit()
            if not digits or not (
                (start > 0 and text[start - 1].isdigit())
                or (end < len(text) and text[end].isdigit())
            ):
                line_start = text.rfind("\n", 0, start) + 1
                line_end = text.find("\n", end)
                found.append((secret, text[line_start : line_end if line_end != -1 else None]))
                break
            start = text.find(secret, start + 1)
    return found


class LogGuard:
    """The pytest plugin; conftest registers one per run.

    Under pytest-xdist each worker records its own log and remembers its own secrets, and
    hands both to the controller when it finishes (`workeroutput`); the controller checks them
    all together, so a secret one worker used is looked for in every worker's log, as in a run
    of one process."""

    def __init__(self) -> None:
        self._recorder = _Recorder()
        self._root = logging.getLogger()
        self._level = self._root.level
        # What finished xdist workers recorded and remembered (on the controller only).
        self._worker_lines: list[str] = []
        self._worker_secrets: set[str] = set()

    def pytest_configure(self, config: pytest.Config) -> None:
        self._root.handlers.insert(0, self._recorder)
        self._root.setLevel(logging.INFO)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._root.removeHandler(self._recorder)
        self._root.setLevel(self._level)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {}).get("log_guard")
        if output is not None:
            self._worker_lines.extend(output["lines"])
            self._worker_secrets.update(output["secrets"])

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: the controller checks
            workeroutput["log_guard"] = {
                "lines": self._recorder.lines,
                "secrets": sorted(_SECRETS),
            }
            return
        found = leaks(self._recorder.lines + self._worker_lines, _SECRETS | self._worker_secrets)
        if not found:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.section("secrets in the log", sep="=", red=True, bold=True)
            reporter.write_line(f"{len(found)} secrets this run used are in its log, e.g.:")
            for secret, line in found[:20]:
                hidden = line.replace(secret, f"<secret of {len(secret)} characters>")
                reporter.write_line(f"  {hidden}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
