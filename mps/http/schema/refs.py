"""The JSON-schema export's shared components: each named schema written once (mps.http.openapi)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mps.http.schema.base import JSON

if TYPE_CHECKING:
    from mps.http.schema.containers import Obj
    from mps.http.schema.scalars import Enum


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
