"""Request and response schemas, declared once per route.

Each schema validates a decoded JSON value (returning the cleaned value or collecting
`FieldError`s with the field's path) and describes itself as JSON Schema for the OpenAPI document.
Objects reject unknown fields: in a payments API they are usually typos (decisions 0). No string
may hold a NUL character: PostgreSQL text cannot store one, and no real input needs it.

The schemas live in this package's modules: the base and `validate` (base), single values
(scalars), schemas that hold others (containers), and the named components of the JSON-schema
export (refs).
"""

from mps.http.schema.base import Schema, validate
from mps.http.schema.containers import Anything, Array, Map, Obj, OneOf
from mps.http.schema.refs import Refs
from mps.http.schema.scalars import Amount, Bool, Enum, Int, Moment, Num, Str

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
