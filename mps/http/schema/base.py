"""The base of every schema, and `validate`, which runs one over a decoded value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mps.errors import FieldError, ValidationFailed

if TYPE_CHECKING:
    from mps.http.schema.refs import Refs


JSON = dict[str, Any]


@dataclass(kw_only=True)
class Schema:
    """What every schema takes, by keyword: its `description` and `example` for the document,
    and whether it accepts None (`nullable`)."""

    description: str = ""
    nullable: bool = False
    example: Any = None

    def check(self, value: Any, path: str, errors: list[FieldError]) -> Any:
        """The cleaned value, with what is wrong with it added to `errors` under `path`: None
        where the schema is nullable, else what `clean` makes of it."""
        if value is None and self.nullable:
            return None
        return self.clean(value, path, errors)

    def clean(self, value: Any, path: str, errors: list[FieldError]) -> Any:
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
