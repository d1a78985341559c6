"""Request and response schemas, declared once per route.

Each schema validates a decoded JSON value (returning the cleaned value or collecting
`FieldError`s with the field's path) and describes itself as JSON Schema for the OpenAPI document.
Objects reject unknown fields: in a payments API they are usually typos (decisions 0). No string
may hold a NUL character: PostgreSQL text cannot store one, and no real input needs it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mps.domain.clock import iso, parse_iso, range_end
from mps.domain.money import parse_amount_minor
from mps.errors import FieldError, ValidationFailed

__all__ = [
    "Amount",
    "Anything",
    "Array",
    "Bool",
    "Enum",
    "Int",
    "Map",
    "Moment",
    "Num",
    "Obj",
    "OneOf",
    "Refs",
    "Schema",
    "Str",
    "validate",
]

JSON = dict[str, Any]
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
# A date, or a date and time with an optional offset; ASCII digits only (`\d` would take any
# script's digits, which no date parser reads).
_MOMENT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:.]+(Z|[+-][0-9]{2}:?[0-9]{2})?)?"


class Schema:
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        raise NotImplementedError

    def json_schema(self, refs: Refs | None = None) -> JSON:
        raise NotImplementedError

    def _doc(self, schema: JSON) -> JSON:
        if self.description:
            schema["description"] = self.description
        if self.nullable:
            schema["nullable"] = True
        example = getattr(self, "example", None)
        if example is not None:
            schema["example"] = example
        return schema


class Refs:
    """The named object schemas met while writing a document, each written once under
    components.schemas and referred to everywhere else, so a generated client has one model
    per resource (one `Payment`, not one per operation)."""

    def __init__(self) -> None:
        self.schemas: dict[str, JSON] = {}

    def ref(self, obj: Obj | Enum) -> JSON:
        assert obj.name is not None
        definition = obj.definition(self)
        known = self.schemas.setdefault(obj.name, definition)
        assert known == definition, f"two different schemas are named {obj.name}"
        ref: JSON = {"$ref": f"#/components/schemas/{obj.name}"}
        # OpenAPI 3.0 ignores siblings of $ref: a nullable reference wraps it.
        return {"allOf": [ref], "nullable": True} if obj.nullable else ref


def validate(schema: Schema, value: Any, root: str = "") -> Any:
    """The cleaned value, or ValidationFailed listing every fault."""
    errors: list[FieldError] = []
    cleaned = schema.check(value, root, errors)
    if errors:
        raise ValidationFailed(errors)
    return cleaned


def _join(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


@dataclass
class Str(Schema):
    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None  # email, uri, date-time, date
    description: str = ""
    nullable: bool = False
    example: Any = None
    strip: bool = True
    message: str | None = None
    # Codes clients write in either case (`usd`), kept and answered upper-case.
    upper: bool = False

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
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

    description: str = "Amount in minor currency units, as a string."
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
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
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
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


def _within(
    value: float, minimum: float | None, maximum: float | None, path: str, errors: list[FieldError]
) -> Any:
    """`value`, with an error when it lies outside [minimum, maximum] (either may be open)."""
    if minimum is not None and value < minimum:
        errors.append(FieldError(path, f"must be at least {minimum}"))
    elif maximum is not None and value > maximum:
        errors.append(FieldError(path, f"must be at most {maximum}"))
    return value


def _ranged(kind: str, minimum: float | None, maximum: float | None) -> JSON:
    schema: JSON = {"type": kind}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


@dataclass
class Int(Schema):
    minimum: int | None = None
    maximum: int | None = None
    description: str = ""
    nullable: bool = False
    example: Any = None
    # Query strings carry text; a query schema parses it.
    from_text: bool = False

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
        if self.from_text and isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,18}", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(FieldError(path, "must be an integer"))
            return None
        return _within(value, self.minimum, self.maximum, path, errors)

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc(_ranged("integer", self.minimum, self.maximum))


@dataclass
class Num(Schema):
    """A JSON number (a rate, a fraction); integers are numbers too."""

    minimum: float | None = None
    maximum: float | None = None
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            errors.append(FieldError(path, "must be a number"))
            return None
        return _within(value, self.minimum, self.maximum, path, errors)

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc(_ranged("number", self.minimum, self.maximum))


@dataclass
class Bool(Schema):
    description: str = ""
    nullable: bool = False
    example: Any = None
    from_text: bool = False

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
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
    description: str = ""
    nullable: bool = False
    example: Any = None
    # A set of values many fields share (a payment's status), written once in the document.
    name: str | None = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
        if value not in self.values:
            errors.append(FieldError(path, f"must be one of {', '.join(self.values)}"))
            return None
        return value

    def json_schema(self, refs: Refs | None = None) -> JSON:
        if self.name is not None and refs is not None:
            return refs.ref(self)
        return self.definition(refs)

    def definition(self, refs: Refs | None = None) -> JSON:
        schema = self._doc({"type": "string", "enum": list(self.values)})
        if self.name is not None and refs is not None:
            schema.pop("nullable", None)
        return schema


@dataclass
class Array(Schema):
    items: Schema = field(default_factory=lambda: Anything())
    min_items: int = 0
    max_items: int | None = None
    unique: bool = False
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, list):
            errors.append(FieldError(path, "must be an array"))
            return None
        if len(value) < self.min_items:
            errors.append(FieldError(path, f"must have at least {self.min_items} item(s)"))
        if self.max_items is not None and len(value) > self.max_items:
            errors.append(FieldError(path, f"must have at most {self.max_items} items"))
            return None
        cleaned = [self.items.check(item, _join(path, i), errors) for i, item in enumerate(value)]
        if self.unique and len({repr(c) for c in cleaned}) != len(cleaned):
            errors.append(FieldError(path, "must not repeat an item"))
        return cleaned

    def json_schema(self, refs: Refs | None = None) -> JSON:
        schema: JSON = {"type": "array", "items": self.items.json_schema(refs)}
        if self.min_items:
            schema["minItems"] = self.min_items
        if self.max_items is not None:
            schema["maxItems"] = self.max_items
        if self.unique:
            schema["uniqueItems"] = True
        return self._doc(schema)


@dataclass
class Map(Schema):
    """A free-form object: string keys, values checked by `values`."""

    values: Schema = field(default_factory=lambda: Anything())
    max_keys: int | None = None
    max_key_length: int | None = None
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, dict):
            errors.append(FieldError(path, "must be an object"))
            return None
        if self.max_keys is not None and len(value) > self.max_keys:
            errors.append(FieldError(path, f"must have at most {self.max_keys} keys"))
            return None
        cleaned = {}
        for key, item in value.items():
            if self.max_key_length is not None and len(key) > self.max_key_length:
                errors.append(
                    FieldError(
                        _join(path, key), f"key must be at most {self.max_key_length} characters"
                    )
                )
                continue
            cleaned[key] = self.values.check(item, _join(path, key), errors)
        return cleaned

    def json_schema(self, refs: Refs | None = None) -> JSON:
        schema: JSON = {"type": "object", "additionalProperties": self.values.json_schema(refs)}
        if self.max_keys is not None:
            schema["maxProperties"] = self.max_keys
        return self._doc(schema)


@dataclass
class Anything(Schema):
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        return value

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({})


@dataclass
class Obj(Schema):
    """An object with declared fields. `required` names the fields that must be present."""

    fields: Mapping[str, Schema] = field(default_factory=dict)
    required: Sequence[str] = ()
    description: str = ""
    nullable: bool = False
    example: Any = None
    # Cross-field rules run after every field passed: (cleaned object) -> list of errors.
    rules: Sequence[Callable[[dict[str, Any]], list[FieldError]]] = ()
    # Response schemas describe; they are not used to reject what we send.
    allow_unknown: bool = False
    # A resource's schema, written once in the document's components under this name.
    name: str | None = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if value is None and self.nullable:
            return None
        if not isinstance(value, dict):
            errors.append(FieldError(path or "body", "must be a JSON object"))
            return None
        before = len(errors)
        cleaned: dict[str, Any] = {}
        for name in value:
            if name not in self.fields and not self.allow_unknown:
                errors.append(FieldError(_join(path, name), self._unknown(name)))
        for name in self.required:
            if name not in value or value[name] is None:
                errors.append(FieldError(_join(path, name), "is required"))
        for name, schema in self.fields.items():
            if name in value and not (
                value[name] is None and name not in self.required and not schema.nullable
            ):
                cleaned[name] = schema.check(value[name], _join(path, name), errors)
        if len(errors) == before:
            for rule in self.rules:
                errors.extend(rule(cleaned))
        return cleaned

    def _unknown(self, name: str) -> str:
        """Unknown fields are usually typos: name the field that was probably meant."""
        close = difflib.get_close_matches(str(name), list(self.fields), n=1, cutoff=0.75)
        if not close:
            close = [f for f in self.fields if f.lower() == str(name).lower().replace("_", "")]
        if not close:
            return "is not a known field"
        return f"is not a known field; did you mean {close[0]}?"

    def json_schema(self, refs: Refs | None = None) -> JSON:
        if self.name is not None and refs is not None:
            return refs.ref(self)
        return self.definition(refs)

    def definition(self, refs: Refs | None = None) -> JSON:
        """The object's own schema (what a named one is written as in components.schemas)."""
        schema: JSON = {
            "type": "object",
            "properties": {name: s.json_schema(refs) for name, s in self.fields.items()},
        }
        if self.required:
            schema["required"] = list(self.required)
        if not self.allow_unknown:
            schema["additionalProperties"] = False
        schema = self._doc(schema)
        if self.name is not None and refs is not None:
            # The reference carries nullability; the definition is the object itself.
            schema.pop("nullable", None)
        return schema


@dataclass
class OneOf(Schema):
    """Exactly one of several shapes (a response whose shape depends on a filter)."""

    options: Sequence[Schema] = ()
    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        for option in self.options:
            attempt: list[FieldError] = []
            cleaned = option.check(value, path, attempt)
            if not attempt:
                return cleaned
        errors.append(FieldError(path, "does not match any allowed shape"))
        return None

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({"oneOf": [o.json_schema(refs) for o in self.options]})
