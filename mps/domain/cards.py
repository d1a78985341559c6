"""Card numbers as checkout sees them: Luhn check, brand, last four. The full number never
leaves the request that carried it."""

from __future__ import annotations

__all__ = ["brand_of", "luhn_check_digit", "luhn_valid"]

_BRANDS = (
    ("amex", ("34", "37")),
    ("visa", ("4",)),
    ("mastercard", ("51", "52", "53", "54", "55", "22", "23", "24", "25", "26", "27")),
    ("discover", ("6011", "65")),
    ("verve", ("506", "650")),
)


def _luhn_sum(number: str) -> int:
    total = 0
    for i, digit in enumerate(reversed(number)):
        value = int(digit)
        if i % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total


def luhn_valid(number: str) -> bool:
    if not number.isdigit() or not 12 <= len(number) <= 19:
        return False
    return _luhn_sum(number) % 10 == 0


def luhn_check_digit(payload: str) -> str:
    """The digit that makes `payload` + digit pass the Luhn check."""
    # A zero in the check digit's place adds nothing and doubles the payload's digits as the
    # finished number will.
    return str(-_luhn_sum(payload + "0") % 10)


def brand_of(number: str) -> str:
    for brand, prefixes in _BRANDS:
        if number.startswith(prefixes):
            return brand
    return "unknown"
