"""Money as the contract writes it: integer minor units sent as strings, with ISO 4217 exponents."""

from __future__ import annotations

import re

MAX_AMOUNT_MINOR = 999_999_999_999
DEFAULT_CURRENCIES = ("USD", "EUR", "GBP", "NGN", "KES", "GHS", "ZAR", "JPY")

# ISO 4217 minor-unit exponents that differ from 2; every other supported code has 2.
_EXPONENTS = {
    "JPY": 0,
    "KRW": 0,
    "VND": 0,
    "CLP": 0,
    "ISK": 0,
    "UGX": 0,
    "XOF": 0,
    "XAF": 0,
    "BHD": 3,
    "JOD": 3,
    "KWD": 3,
    "OMR": 3,
    "TND": 3,
}
# Codes a company may enable in its settings.
KNOWN_CURRENCIES = frozenset(
    {
        *DEFAULT_CURRENCIES,
        *_EXPONENTS,
        "CAD",
        "AUD",
        "CHF",
        "SEK",
        "NOK",
        "DKK",
        "PLN",
        "CZK",
        "INR",
        "CNY",
        "HKD",
        "SGD",
        "NZD",
        "MXN",
        "BRL",
        "EGP",
        "MAD",
        "TZS",
        "RWF",
        "AED",
        "SAR",
    }
)

_AMOUNT = re.compile(r"[1-9][0-9]{0,11}")


def exponent(currency: str) -> int:
    return _EXPONENTS.get(currency, 2)


def parse_amount_minor(text: str) -> int | None:
    """The value of an input amount, or None if it is not a string of 1..999999999999."""
    if not _AMOUNT.fullmatch(text):
        return None
    return int(text)


def format_money(amount_minor: int, currency: str) -> str:
    """How a message states an amount: 1000 USD -> '10.00 USD'; 1000 JPY -> '1,000 JPY'."""
    return f"{format_major(amount_minor, currency)} {currency}"


def format_major(amount_minor: int, currency: str) -> str:
    """12345 USD -> '123.45'; 500 JPY -> '500'. Exact: no floating point on the way."""
    places = exponent(currency)
    sign = "-" if amount_minor < 0 else ""
    digits = str(abs(amount_minor)).rjust(places + 1, "0")
    if places == 0:
        whole, frac = digits, ""
    else:
        whole, frac = digits[:-places], digits[-places:]
    grouped = f"{int(whole):,}"
    return f"{sign}{grouped}.{frac}" if frac else f"{sign}{grouped}"
