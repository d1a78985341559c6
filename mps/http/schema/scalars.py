"""Schemas of single values: strings, amounts, moments, numbers, booleans and enums."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mps.domain.clock import iso, parse_iso, range_end
from mps.domain.money import parse_amount_minor
from mps.errors import FieldError
from mps.http.schema.base import JSON, Schema
from mps.http.schema.refs import Refs

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# A date, or a date and time with an optional offset; ASCII digits only (`\d` would take any
# script's digits, which no date parser reads).
_MOMENT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:.]+(Z|[+-][0-9]{2}:?[0-9]{2})?)?"


@dataclass
class Str(Schema):
    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None  # email, uri, date-time, date
    strip: bool = True
    message: str | None = None
    # Codes clients write in either case (`usd`), kept and answered upper-case.
    upper: bool = False

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if not isinstance(value, str):
            errors.append(FieldError(path, "must be a string"))
            return None
        text = value.strip() if self.strip else value
        if self.upper:
            text = text.upper()
        if "\x00" in text:
            errors.append(FieldError(path, "must not contain a NUL character"))
        elif len(text) < self.min_length:
            what = (
                "must not be empty"
                if self.min_length == 1
                else (f"must be at least {self.min_length} characters")
            )
            errors.append(FieldError(path, what))
        elif self.max_length is not None and len(text) > self.max_length:
            errors.append(FieldError(path, f"must be at most {self.max_length} characters"))
        elif self.pattern is not None and not re.fullmatch(self.pattern, text):
            errors.append(FieldError(path, self.message or "has an invalid format"))
        elif self.format == "email" and not _EMAIL.fullmatch(text):
            errors.append(FieldError(path, "must be an email address"))
        elif self.format == "uri" and not re.fullmatch(r"https?://[^\s/$.?#][^\s]*", text):
            errors.append(FieldError(path, "must be an http or https URL"))
        return text

    def json_schema(self, refs: Refs | None = None) -> JSON:
        schema: JSON = {"type": "string"}
        if self.min_length:
            schema["minLength"] = self.min_length
        if self.max_length is not None:
            schema["maxLength"] = self.max_length
        if self.pattern is not None:
            schema["pattern"] = f"^(?:{self.pattern})$"
        if self.format is not None:
            schema["format"] = self.format
        return self._doc(schema)


@dataclass
class Amount(Schema):
    """Minor units as a string: digits, no sign, no leading zero, 1..999999999999."""

    description: str = field(default="Amount in minor currency units, as a string.", kw_only=True)

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        amount = parse_amount_minor(value) if isinstance(value, str) else None
        if amount is None:
            errors.append(
                FieldError(
                    path, "must be a positive integer string of minor units, 1 to 999999999999"
                )
            )
        return amount

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({"type": "string", "pattern": "^[1-9][0-9]{0,11}$"})


@dataclass
class Moment(Schema):
    """An ISO 8601 date or timestamp (a time without an offset is UTC), cleaned to the stored
    form of `mps.domain.clock.iso`, so it compares directly with stored times.

    A date stands for its first millisecond, or, with `end_of_day`, for its last (a `to` bound
    includes the whole day). A date that does not exist (2026-02-30, 0000-01-01) and an instant
    outside the years 0001 to 9999 in UTC are refused like malformed text.
    """

    end_of_day: bool = False

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        text = value.strip() if isinstance(value, str) else None
        if text is None or not re.fullmatch(_MOMENT, text):
            errors.append(FieldError(path, "must be an ISO date or timestamp"))
            return None
        try:
            moment = range_end(text) if self.end_of_day else parse_iso(text)
        except ValueError as exc:
            errors.append(FieldError(path, f"is not a valid date: {exc}"))
            return None
        return iso(moment)

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({"type": "string", "pattern": f"^(?:{_MOMENT})$"})


@dataclass
class _Bounded(Schema):
    """A JSON number within optional bounds (either may be open). A boolean is never one, though
    Python counts it as an int."""

    minimum: float | None = None
    maximum: float | None = None
    # The JSON-schema type, the Python types of its values, and what any other value is told.
    json_type: ClassVar[str]
    kinds: ClassVar[tuple[type[int] | type[float], ...]]
    expected: ClassVar[str]

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if isinstance(value, bool) or not isinstance(value, self.kinds):
            errors.append(FieldError(path, self.expected))
            return None
        if self.minimum is not None and value < self.minimum:
            errors.append(FieldError(path, f"must be at least {self.minimum}"))
        elif self.maximum is not None and value > self.maximum:
            errors.append(FieldError(path, f"must be at most {self.maximum}"))
        return value

    def json_schema(self, refs: Refs | None = None) -> JSON:
        schema: JSON = {"type": self.json_type}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return self._doc(schema)


@dataclass
class Int(_Bounded):
    minimum: int | None = None
    maximum: int | None = None
    # Query strings carry text; a query schema parses it.
    from_text: bool = False

    json_type = "integer"
    kinds = (int,)
    expected = "must be an integer"

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if self.from_text and isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,18}", value):
            value = int(value)
        return super().clean(value, path, errors)


@dataclass
class Num(_Bounded):
    """A JSON number (a rate, a fraction); integers are numbers too."""

    json_type = "number"
    kinds = (int, float)
    expected = "must be a number"


@dataclass
class Bool(Schema):
    from_text: bool = False

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if self.from_text and value in ("true", "false"):
            return value == "true"
        if not isinstance(value, bool):
            errors.append(FieldError(path, "must be true or false"))
            return None
        return value

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({"type": "boolean"})


@dataclass
class Enum(Schema):
    values: Sequence[str] = ()
    # A set of values many fields share (a payment's status), written once in the document.
    name: str | None = None
    # One rule for every code a client writes (a status, a currency, a mode): either case is
    # accepted, in bodies and queries alike, and the canonical spelling is what handlers see.
    fold_case: bool = True

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value in self.values:
            return value
        if self.fold_case and isinstance(value, str):
            folded = value.strip().casefold()
            for canonical in self.values:
                if canonical.casefold() == folded:
                    return canonical
        errors.append(FieldError(path, f"must be one of {', '.join(self.values)}"))
        return None

    def json_schema(self, refs: Refs | None = None) -> JSON:
        if self.name is not None and refs is not None:
            return refs.ref(self)
        return self.definition(refs)

    def definition(self, refs: Refs | None = None) -> JSON:
        schema = self._doc({"type": "string", "enum": list(self.values)})
        if self.name is not None and refs is not None:
            schema.pop("nullable", None)
        return schema
