"""Schemas that hold others: arrays, maps, objects, one-of choices, and anything at all."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mps.errors import FieldError
from mps.http.schema.base import JSON, Schema, join_path
from mps.http.schema.refs import Refs


@dataclass
class Array(Schema):
    items: Schema = field(default_factory=lambda: Anything())
    min_items: int = 0
    max_items: int | None = None
    unique: bool = False

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if not isinstance(value, list):
            errors.append(FieldError(path, "must be an array"))
            return None
        if len(value) < self.min_items:
            errors.append(FieldError(path, f"must have at least {self.min_items} item(s)"))
        if self.max_items is not None and len(value) > self.max_items:
            errors.append(FieldError(path, f"must have at most {self.max_items} items"))
            return None
        cleaned = [
            self.items.check(item, join_path(path, i), errors) for i, item in enumerate(value)
        ]
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
    """A free-form object: string keys, values checked by `values`.

    With `keys`, each key is checked and cleaned like a value (a currency code written `usd` is
    kept as `USD`); two keys that clean to the same one are refused rather than merged. The
    document cannot say so (OpenAPI 3.0 has no `propertyNames`): `description` should."""

    values: Schema = field(default_factory=lambda: Anything())
    keys: Schema | None = None
    max_keys: int | None = None
    max_key_length: int | None = None

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
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
                        join_path(path, key),
                        f"key must be at most {self.max_key_length} characters",
                    )
                )
                continue
            name = key
            if self.keys is not None:
                name = self.keys.check(key, join_path(path, key), errors)
                if not isinstance(name, str):
                    continue
                if name in cleaned:
                    errors.append(FieldError(join_path(path, key), f"repeats the key {name}"))
                    continue
            cleaned[name] = self.values.check(item, join_path(path, key), errors)
        return cleaned

    def json_schema(self, refs: Refs | None = None) -> JSON:
        schema: JSON = {"type": "object", "additionalProperties": self.values.json_schema(refs)}
        if self.max_keys is not None:
            schema["maxProperties"] = self.max_keys
        return self._doc(schema)


@dataclass
class Anything(Schema):
    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        return value

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({})


@dataclass
class Obj(Schema):
    """An object with declared fields. `required` names the fields that must be present."""

    fields: Mapping[str, Schema] = field(default_factory=dict)
    required: Sequence[str] = ()
    # Cross-field rules run after every field passed: (cleaned object) -> list of errors.
    rules: Sequence[Callable[[dict[str, Any]], list[FieldError]]] = ()
    # Response schemas describe; they are not used to reject what we send.
    allow_unknown: bool = False
    # A resource's schema, written once in the document's components under this name.
    name: str | None = None

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        if not isinstance(value, dict):
            errors.append(FieldError(path or "body", "must be a JSON object"))
            return None
        before = len(errors)
        cleaned: dict[str, Any] = {}
        for name in value:
            if name not in self.fields and not self.allow_unknown:
                errors.append(FieldError(join_path(path, name), self._unknown(name)))
        for name in self.required:
            if name not in value or value[name] is None:
                errors.append(FieldError(join_path(path, name), "is required"))
        for name, schema in self.fields.items():
            if name in value and not (
                value[name] is None and name not in self.required and not schema.nullable
            ):
                cleaned[name] = schema.check(value[name], join_path(path, name), errors)
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

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        # Each option says for itself whether it takes None.
        for option in self.options:
            attempt: list[FieldError] = []
            cleaned = option.check(value, path, attempt)
            if not attempt:
                return cleaned
        errors.append(FieldError(path, "does not match any allowed shape"))
        return None

    def json_schema(self, refs: Refs | None = None) -> JSON:
        return self._doc({"oneOf": [o.json_schema(refs) for o in self.options]})
