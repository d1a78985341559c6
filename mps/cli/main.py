"""`mps` / `python -m mps`: the merchant's command line for a running service.

    mps login --email you@example.com [--from-dev-mailbox | --code 123456]
    mps login --key sk_test_…
    mps payments create --amount 12.50 --currency usd     (or --amount-minor 1250)
    mps balance | refunds create --payment-id pay_… --amount 5 | payouts list | events list
    mps trigger payment.completed --payment-id pay_…
    mps listen --forward-to http://localhost:3000/webhooks

Exit status: 0 done, 1 the service refused (its message and code on stderr), 2 a usage
problem (argparse's own status), 3 the service could not be reached, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence

from mps.cli import commands, config
from mps.cli.amounts import add_amount_options
from mps.cli.errors import CliError
from mps.cli.parsing import SubParsers, add_command, add_group
from mps.cli.resources import add_resource_parsers

__all__ = ["build_parser", "main"]

Command = Callable[[commands.Context, argparse.Namespace], Awaitable[int]]

_EPILOG = """\
The service is --url, else $MPS_URL, else the URL last logged in to, else
http://127.0.0.1:8080. Credentials are kept in $MPS_CLI_CONFIG (else
~/.config/mps/cli.json), readable by you only, and sent to their own URL only.
Exit status: 0 done, 1 the service refused, 2 usage, 3 service unreachable."""


def _common() -> argparse.ArgumentParser:
    """`--url`, accepted before the command and after it (`mps --url … payments list` and
    `mps payments list --url …`). SUPPRESS: a subcommand's parser must not overwrite what
    the top level read with a default."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help="the service's base URL (default: $MPS_URL, the stored URL, http://127.0.0.1:8080)",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="mps",
        description="Merchant Payments Service from the command line.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    login = add_command(
        top,
        "login",
        common,
        commands.cmd_login,
        summary="sign in with an emailed code, or store an API key",
        description="Sign in by email (a 6-digit code is mailed) and store the session, or "
        "store an API key. A session calls every merchant route; a secret key calls payments "
        "once the company turns on apiKeyAccess, and the sandbox (mps trigger).",
    )
    login.add_argument("--email", help="the member's email")
    login.add_argument("--code", help="the emailed code, instead of being asked for it")
    login.add_argument(
        "--from-dev-mailbox",
        action="store_true",
        help="read the code from the development service's mailbox (loopback only)",
    )
    login.add_argument("--company", metavar="CO_ID", help="sign in to this company (co_…)")
    login.add_argument("--key", help="store this API key (sk_test_…) instead of signing in")

    add_command(
        top,
        "logout",
        common,
        commands.cmd_logout,
        summary="revoke the session and remove the stored credentials",
        description="Revoke the stored session (POST /auth/logout) and remove the file.",
    )

    _payments(top, common)
    add_resource_parsers(top, common)
    _trigger(top, common)
    _listen(top, common)
    return parser


def _payments(top: SubParsers, common: argparse.ArgumentParser) -> None:
    sub = add_group(top, "payments", common, summary="create, list and read payments")
    create = add_command(
        sub,
        "create",
        common,
        commands.cmd_payments_create,
        summary="create a payment link",
        description="Create a payment link; prints the payment (its payUrl is the checkout).",
    )
    add_amount_options(create, currency=True)
    create.add_argument("--description")
    create.add_argument(
        "--idempotency-key", help="repeat the command with the same key to create it once"
    )

    listing = add_command(
        sub,
        "list",
        common,
        commands.cmd_payments_list,
        summary="list payments, newest first",
        description="List payments.",
    )
    listing.add_argument("--limit", type=int, help="page size, 1 to 100 (20)")
    listing.add_argument("--status", help="PENDING, PAID, FAILED, EXPIRED, CANCELLED, …")
    listing.add_argument("--cursor", help="the nextCursor of the previous page")

    get = add_command(
        sub,
        "get",
        common,
        commands.cmd_payments_get,
        summary="show one payment",
        description="Show one payment.",
    )
    get.add_argument("id", metavar="PAYMENT_ID", help="pay_…")


def _trigger(top: SubParsers, common: argparse.ArgumentParser) -> None:
    trigger = add_command(
        top,
        "trigger",
        common,
        commands.cmd_trigger,
        summary="simulate an event in the sandbox (test API key)",
        description="POST /developer/sandbox/KIND with a test API key. Any other --name value\n"
        "becomes a field of the body in camelCase: --payment-id pay_… sends paymentId.",
        epilog="kinds: payment.completed|failed|expired|reversed, refund.completed|rejected,\n"
        "       payout.paid|failed, card.authorization, invoice.overdue,\n"
        "       kyc.verified|rejected, webhook.ping\n"
        "example: mps trigger payment.completed --payment-id pay_…",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trigger.add_argument("kind", help="payment.completed, refund.completed, webhook.ping, …")
    trigger.add_argument("--key", help="test API key (default: the stored one)")
    trigger.add_argument("--data", help="the body as a JSON object; --name value fields win")


def _listen(top: SubParsers, common: argparse.ArgumentParser) -> None:
    listen = add_command(
        top,
        "listen",
        common,
        commands.cmd_listen,
        summary="relay the company's webhook events to a local URL",
        description="Register a temporary webhook endpoint on 127.0.0.1 and relay each signed\n"
        "delivery to a local URL, body and signature headers unchanged; the service gets\n"
        "the target's status, so failures are retried as usual. The endpoint is deleted\n"
        "on Ctrl-C or SIGTERM. Needs a session, and a development-mode service on this\n"
        "machine (only development delivers to loopback).",
        epilog="example:\n"
        "  mps listen --print-secret --forward 'payment.*=http://localhost:3000/payments' \\\n"
        "             --forward-to http://localhost:3000/other",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    listen.add_argument("--forward-to", metavar="URL", help="where events go by default")
    listen.add_argument(
        "--forward",
        metavar="PATTERN=URL",
        action="append",
        help="send events matching PATTERN (a glob: payment.*) to URL; repeatable, first wins",
    )
    listen.add_argument(
        "--events",
        metavar="PATTERNS",
        action="append",
        help="only these event types, comma-separated globs (payment.completed,refund.*)",
    )
    listen.add_argument(
        "--print-secret",
        action="store_true",
        help="print the endpoint's signing secret first, for the target to verify with",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "trigger":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return asyncio.run(_run(args, extra))
    except CliError as exc:
        sys.stderr.write(f"mps: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("mps: interrupted\n")
        return 130


async def _run(args: argparse.Namespace, extra: Sequence[str]) -> int:
    path = config.config_path()
    stored = config.load(path)
    url = config.resolve_url(getattr(args, "url", None), stored)
    # Stored credentials go to the URL they were stored for, never to another one.
    mine = stored if stored is not None and stored.url == url else None
    ctx = commands.Context(url, mine, path)
    if args.command == "trigger":
        # The only command taking free-form options: each becomes a field of the body.
        triggered: int = await commands.cmd_trigger(ctx, args, extra)
        return triggered
    run: Command = args.run
    status: int = await run(ctx, args)
    return status
