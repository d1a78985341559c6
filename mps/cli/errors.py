"""What can go wrong in a command, and the exit status each failure gives.

    CliError                 a one-line message for stderr, and an exit status
     ├── UsageError          2: the command cannot run as given (no credential, bad input)
     ├── ApiError            1: the service answered with an error envelope (or no JSON)
     └── Unreachable         3: no answer from the service at all

Third-party errors (aiohttp's, the OS's) are translated into these at the client
(`mps.cli.client`), so `mps.cli.main` catches one tree and never shows a traceback.
"""

from __future__ import annotations

__all__ = ["ApiError", "CliError", "Unreachable", "UsageError"]


class CliError(Exception):
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(CliError):
    # argparse's own status for a bad command line, so every usage problem exits alike.
    exit_code = 2


class ApiError(CliError):
    """The service refused the request: `status` and the envelope's `code` (None when the
    answer was not an envelope, such as a proxy's HTML page)."""

    exit_code = 1

    def __init__(
        self, status: int, message: str, code: str | None, request_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.request_id = request_id

    def __str__(self) -> str:
        # A message that is only the status line says it already.
        parts = [] if self.message.startswith("HTTP ") else [f"HTTP {self.status}"]
        if self.code:
            parts.append(self.code)
        if self.request_id:
            parts.append(self.request_id)
        return f"{self.message} ({', '.join(parts)})" if parts else self.message


class Unreachable(CliError):
    exit_code = 3
