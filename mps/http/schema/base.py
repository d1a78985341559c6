"""The base of every schema, and `validate`, which runs one over a decoded value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mps.errors import FieldError, ValidationFailed

if TYPE_CHECKING:
    from mps.http.schema.refs import Refs


JSON = dict[str, Any]


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


def validate(schema: Schema, value: Any, root: str = "") -> Any:
    """The cleaned value, or ValidationFailed listing every fault."""
    errors: list[FieldError] = []
    cleaned = schema.check(value, root, errors)
    if errors:
        raise ValidationFailed(errors)
    return cleaned


def join_path(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name
