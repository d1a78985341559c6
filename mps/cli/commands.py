"""The commands: each takes the parsed command line and returns an exit status.

They run on one event loop (`mps.cli.main` calls `asyncio.run`), write data (JSON, secrets,
event lines) to stdout and talk to people (prompts, notices) on stderr, so a script can pipe
stdout into `jq` while the prompt still reaches the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mps.cli import config
from mps.cli.amounts import amount_minor
from mps.cli.client import Api
from mps.cli.errors import ApiError, Unreachable, UsageError
from mps.cli.listen import listen
from mps.cli.patterns import Routing, parse_route, split_patterns

__all__ = [
    "Context",
    "camel_case",
    "cmd_listen",
    "cmd_login",
    "cmd_logout",
    "cmd_payments_create",
    "cmd_payments_get",
    "cmd_payments_list",
    "cmd_trigger",
    "trigger_fields",
]

# How long `login --from-dev-mailbox` waits for the code's mail (it is sent before the login
# answers, so normally it is there at the first look).
MAILBOX_WAIT = 5.0
_MAILBOX_POLL = 0.1


@dataclass(frozen=True, slots=True)
class Context:
    """What every command gets besides its arguments: the service's URL and what is stored
    for it (None when nothing is, or the stored credentials are another URL's)."""

    url: str
    stored: config.Credentials | None
    config_file: Path

    def session(self, why: str) -> str:
        if self.stored and self.stored.token:
            return self.stored.token
        raise UsageError(
            f"{why} needs a dashboard session for {self.url}: run mps login --email you@example.com"
        )

    def credential(self) -> str:
        """The session when there is one, else the API key (for the routes both may call)."""
        if self.stored and (self.stored.token or self.stored.key):
            return self.stored.token or self.stored.key or ""
        raise UsageError(
            f"not logged in to {self.url}: run mps login --email you@example.com"
            " (or mps login --key sk_test_…)"
        )


def _print_json(data: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


# -- login and logout ---------------------------------------------------------------------------


async def cmd_login(ctx: Context, args: argparse.Namespace) -> int:
    if args.key and args.email:
        raise UsageError("login takes --email or --key, not both")
    if args.key:
        return await _login_with_key(ctx, args.key)
    if not args.email:
        raise UsageError("login needs --email you@example.com or --key sk_test_…")
    async with Api(ctx.url) as api:
        before = await _mailbox_ids(api, args.email) if args.from_dev_mailbox else set()
        login = await api.call("POST", "/auth/login", body={"email": args.email})
        if args.code:
            code = args.code
        elif args.from_dev_mailbox:
            code = await _code_from_mailbox(api, args.email, before)
        else:
            code = _prompt_code(args.email)
        body = {"loginId": login["loginId"], "code": code}
        if args.company:
            body["companyId"] = args.company
        session = await api.call("POST", "/auth/otp/verify", body=body)
    path = config.remember(ctx.url, token=session["sessionToken"], path=ctx.config_file)
    company = session.get("company") or {}
    print(
        f"Logged in to {company.get('name')} ({company.get('id')}) as {args.email},"
        f" {session.get('mode', 'test')} mode. Session stored in {path}."
    )
    return 0


async def _login_with_key(ctx: Context, key: str) -> int:
    if not key.startswith(("sk_", "pk_")):
        raise UsageError("--key takes an API key: sk_test_…, sk_live_… or pk_test_…")
    async with Api(ctx.url, key) as api:
        try:
            await api.call("GET", "/developer/ping")
        except ApiError as exc:
            # The ping needs analytics:read; a key without it is still a valid key.
            if exc.code != "insufficient_scope":
                raise
    path = config.remember(ctx.url, key=key, path=ctx.config_file)
    print(f"API key {key[:8]}…{key[-4:]} stored in {path} for {ctx.url}.")
    return 0


def _prompt_code(email: str) -> str:
    sys.stderr.write(f"Enter the 6-digit code sent to {email}: ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise UsageError("no code given (stdin ended); pass --code or --from-dev-mailbox")
    code = line.strip()
    if not (len(code) == 6 and code.isascii() and code.isdigit()):
        raise UsageError("the code is the 6 digits of the email")
    return code


async def _mailbox(api: Api, email: str) -> list[dict[str, Any]]:
    try:
        page = await api.call("GET", "/dev/mailbox", query={"to": email})
    except ApiError as exc:
        if exc.status == 404:
            raise UsageError(
                f"{api.base_url} has no dev mailbox: it is served in development mode only,"
                " and only to loopback"
            ) from None
        raise
    messages = page.get("data") or page.get("items") or []
    return [m for m in messages if isinstance(m, dict)]


async def _mailbox_ids(api: Api, email: str) -> set[str]:
    return {str(m.get("id")) for m in await _mailbox(api, email)}


async def _code_from_mailbox(api: Api, email: str, before: set[str]) -> str:
    """The code of the first mail to `email` that was not in the mailbox `before` the login
    (an older code may still be there, and is spent or expired)."""
    deadline = time.monotonic() + MAILBOX_WAIT
    while True:
        for message in await _mailbox(api, email):
            if str(message.get("id")) not in before and message.get("otp"):
                return str(message["otp"])
        if time.monotonic() > deadline:
            # The service answers a login for an unknown email as for a member, and mails
            # nothing: this is how that shows here.
            raise UsageError(
                f"no sign-in code reached the dev mailbox for {email} within"
                f" {MAILBOX_WAIT:g} s; is it a member's email?"
            )
        await asyncio.sleep(_MAILBOX_POLL)


async def cmd_logout(ctx: Context, args: argparse.Namespace) -> int:
    if ctx.stored is None:
        # Nothing for this URL; the file may still hold another URL's credentials.
        print(f"Not logged in to {ctx.url}.")
        return 0
    if ctx.stored.token:
        try:
            async with Api(ctx.url, ctx.stored.token) as api:
                await api.call("POST", "/auth/logout")
        except ApiError as exc:
            # An expired or already revoked session is as logged out as it gets.
            if exc.status != 401:
                raise
        except Unreachable as exc:
            config.forget(ctx.config_file)
            raise Unreachable(
                f"{exc.message}; credentials removed, but the session stays valid until it expires"
            ) from None
    config.forget(ctx.config_file)
    print(f"Logged out of {ctx.url}; removed {ctx.config_file}.")
    return 0


# -- payments -----------------------------------------------------------------------------------


async def cmd_payments_create(ctx: Context, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "amountMinor": amount_minor(args, args.currency),
        "currency": args.currency,
    }
    if args.description is not None:
        body["description"] = args.description
    headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else {}
    async with Api(ctx.url, ctx.credential()) as api:
        _print_json(await api.call("POST", "/merchant/payments", body=body, headers=headers))
    return 0


async def cmd_payments_list(ctx: Context, args: argparse.Namespace) -> int:
    query: dict[str, str] = {}
    if args.limit is not None:
        query["limit"] = str(args.limit)
    if args.status:
        query["status"] = args.status.upper()
    if args.cursor:
        query["cursor"] = args.cursor
    async with Api(ctx.url, ctx.credential()) as api:
        _print_json(await api.call("GET", "/merchant/payments", query=query))
    return 0


async def cmd_payments_get(ctx: Context, args: argparse.Namespace) -> int:
    async with Api(ctx.url, ctx.credential()) as api:
        _print_json(await api.call("GET", f"/merchant/payments/{_path_id(args.id)}"))
    return 0


def _path_id(value: str) -> str:
    # An id is letters, digits and `_`; anything else would change the path it names.
    if not value or not all(c.isascii() and (c.isalnum() or c == "_") for c in value):
        raise UsageError(f"not an id: {value!r}")
    return value


# -- the sandbox --------------------------------------------------------------------------------


def camel_case(option: str) -> str:
    """`--payment-id` (or `--payment_id`) as `paymentId`."""
    words = [w for w in option.lstrip("-").replace("_", "-").split("-") if w]
    return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:]) if words else ""


def trigger_fields(extra: Sequence[str]) -> dict[str, str]:
    """`--payment-id pay_… --amount-minor=500` as {"paymentId": "pay_…", "amountMinor": "500"}."""
    fields: dict[str, str] = {}
    items = list(extra)
    while items:
        item = items.pop(0)
        if not item.startswith("--") or len(item) == 2:
            raise UsageError(f"unexpected argument {item!r}: fields are given as --name value")
        name, sep, value = item.partition("=")
        if not sep:
            if not items or items[0].startswith("--"):
                raise UsageError(f"{name} needs a value")
            value = items.pop(0)
        key = camel_case(name)
        if not key:
            raise UsageError(f"not a field name: {name!r}")
        fields[key] = value
    return fields


async def cmd_trigger(ctx: Context, args: argparse.Namespace, extra: Sequence[str]) -> int:
    body: dict[str, Any] = {}
    if args.data:
        try:
            data = orjson.loads(args.data)
        except orjson.JSONDecodeError as exc:
            raise UsageError(f"--data is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise UsageError("--data must be a JSON object")
        body.update(data)
    body.update(trigger_fields(extra))
    key = args.key or (ctx.stored.key if ctx.stored else None)
    if not key:
        raise UsageError(
            "the sandbox needs a test API key:"
            " pass --key sk_test_… or run mps login --key sk_test_…"
        )
    if not args.kind or not all(c.isascii() and (c.isalnum() or c in "._") for c in args.kind):
        raise UsageError(f"not a sandbox kind: {args.kind!r}")
    async with Api(ctx.url, key) as api:
        _print_json(await api.call("POST", f"/developer/sandbox/{args.kind}", body=body))
    return 0


# -- listen -------------------------------------------------------------------------------------


async def cmd_listen(ctx: Context, args: argparse.Namespace) -> int:
    routing = Routing(
        tuple(parse_route(r) for r in args.forward or ()),
        args.forward_to,
        split_patterns(args.events or ()),
    )
    async with Api(ctx.url, ctx.session("listen")) as api:
        return await listen(api, routing, print_secret=args.print_secret)
