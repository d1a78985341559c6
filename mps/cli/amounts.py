"""`--amount 12.50` (major units) or `--amount-minor 1250` (minor units), as the API's amountMinor.

Major units are read exactly, as text, with at most as many decimals as the currency's ISO 4217
exponent (mps.domain.money): `12.5` USD is 1250, `500` JPY is 500, `12.50` JPY is refused
rather than rounded. Whether the amount is allowed at all is the service's to say.
"""

from __future__ import annotations

import argparse
import re

from mps.cli.errors import UsageError
from mps.domain.money import exponent

__all__ = ["add_amount_options", "amount_minor"]

_MAJOR = re.compile(r"([0-9]+)(?:\.([0-9]+))?")
_MINOR = re.compile(r"[0-9]+")


def add_amount_options(
    parser: argparse.ArgumentParser, *, required: bool = True, currency: bool = False
) -> None:
    """The two ways to give an amount, one of them required and never both; and, with
    `currency`, the required --currency of a command that names its own (a refund's is its
    payment's)."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument(
        "--amount",
        metavar="MAJOR",
        help="in major units with the currency's decimals: 12.50 USD, 500 JPY"
        " (not with --amount-minor)",
    )
    group.add_argument(
        "--amount-minor",
        metavar="MINOR",
        help="in minor units: 1250 is 12.50 USD (not with --amount)",
    )
    if currency:
        parser.add_argument("--currency", required=True, help="usd, eur, gbp, …")


def amount_minor(args: argparse.Namespace, currency: str) -> str:
    """The amount of `args` in minor units of `currency`, as the API's string."""
    if args.amount_minor is not None:
        if not _MINOR.fullmatch(args.amount_minor):
            raise UsageError(
                f"--amount-minor takes whole minor units (1250), not {args.amount_minor!r}"
            )
        return str(int(args.amount_minor))
    match = _MAJOR.fullmatch(args.amount or "")
    if match is None:
        raise UsageError(f"--amount takes major units (12.50), not {args.amount!r}")
    whole, fraction = match.group(1), match.group(2) or ""
    digits = exponent(currency.upper())
    if len(fraction) > digits:
        raise UsageError(
            f"--amount {args.amount}: {currency.upper()} has {digits} decimal"
            f"{'' if digits == 1 else 's'}; give at most that many (or use --amount-minor)"
        )
    return str(int(whole) * 10**digits + int(fraction.ljust(digits, "0") or "0"))
