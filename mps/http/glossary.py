"""What every field of the API means, with an example, written into the OpenAPI document.

The route table declares each field's type and rules; the glossary says what the field is for a
merchant reading the API explorer or a generated client: one sentence (what it is, its unit,
when it is null) and an example valid for its schema. The sentences and examples are data, in
`glossary.toml` beside this module; this module reads them once, when the first document is
described (not at import), and `describe` fills both in at the end of `build_openapi`; a
description a route declared itself is never replaced.

A field's meaning is looked up from the most specific name to the least:

    overrides["Refund.reason"]                  a field of one component schema
    overrides["POST /merchant/refunds.reason"]  a field of one operation's inline schema
    overrides["user.id"]                        a field of a nested object, wherever it is
    fields["createdAt"]                         the name's meaning across the API

and an inline schema that shows a resource (the answer of a DELETE, a create that adds the
secret) reads that resource's overrides too (`shows`). Path and query parameters have their own
table (`parameters`, by name, by "METHOD /path.name", or as "{name}" for a path parameter
other than `id`): a query field filters, so `status` there means "only the ones in this
status", not "the state". A path's `{id}` is described by the collection before it
(`collections`).

Examples that depend on nothing but the schema are derived: an enum shows its first value.
What follows from code is derived here too: the counts per payment and invoice status (from the
domain's statuses) and the pages of a component (`…List`). Everything else is written in the
data file, so `tests/test_openapi.py` can check that each example validates against its own
schema.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, NamedTuple

import orjson

from mps.domain.approvals import ACTIONS as APPROVAL_ACTIONS
from mps.domain.invoices import INVOICE_STATUSES
from mps.domain.payments import STATUSES as PAYMENT_STATUSES
from mps.http.routing import API_PREFIX

__all__ = ["Glossary", "Meaning", "describe", "glossary", "is_scalar"]

JSON = dict[str, Any]


class Meaning(NamedTuple):
    description: str
    # None: none written (an object or array, or an enum that shows its first value).
    example: Any = None


@dataclass(frozen=True)
class Glossary:
    """The tables of `glossary.toml`, by the names its sections bear."""

    components: Mapping[str, Meaning]
    fields: Mapping[str, Meaning]
    # With the counts per status, which follow the domain's statuses.
    overrides: Mapping[str, Meaning]
    parameters: Mapping[str, Meaning]
    collections: Mapping[str, Meaning]
    # An operation -> the component whose fields its inline schemas show.
    shows: Mapping[str, str]


@functools.cache
def glossary() -> Glossary:
    """The glossary, read from the package's data on the first call and kept: a file read and
    parsed once per process, never at import."""
    text = resources.files("mps.http").joinpath("glossary.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)

    def meanings(section: str) -> dict[str, Meaning]:
        # Meaning(**entry) refuses a misspelt key instead of dropping it.
        return {name: Meaning(**entry) for name, entry in data[section].items()}

    return Glossary(
        components=meanings("components"),
        fields=meanings("fields"),
        overrides={**_per_status(), **meanings("overrides")},
        parameters=meanings("parameters"),
        collections=meanings("collections"),
        shows=dict(data["shows"]),
    )


def _per_status() -> dict[str, Meaning]:
    per: dict[str, Meaning] = {}
    for status in PAYMENT_STATUSES:
        per[f"byStatus.{status}"] = Meaning(f"The {status} payments: how many, and their amount.")
        per[f"byStatus.{status}.count"] = Meaning(f"How many payments are {status}.", 3)
        per[f"statusCounts.{status}"] = Meaning(
            f"Payments created in the window that are {status} now.", 3
        )
    for status in INVOICE_STATUSES:
        per[f"countByStatus.{status}"] = Meaning(f"How many invoices are {status}.", 3)
    return per


_SANDBOX = "/developer/sandbox/{kind}"
_POLICY = "/team/approvals/policies/{action}"
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


def describe(document: JSON) -> None:
    """Fill in a description and an example for every field, parameter and component schema of
    `document` (an OpenAPI 3.0 document as `build_openapi` makes it) that has none; a
    description or example already there stays. `{"$ref": …}` gets no siblings (OpenAPI 3.0
    ignores them): the schema it names carries its own."""
    # The document holds some module-level dicts of mps.http.openapi (the success and error
    # schemas) in several places at once: filled in place, the constants would change, and
    # every place would get the first one's text. A copy gives each place its own.
    document.update(orjson.loads(orjson.dumps(document)))
    components = document["components"]
    schemas: dict[str, JSON] = components["schemas"]
    for name, schema in schemas.items():
        _component(name, schema)
        _walk(schema, (name,))
    for parameter in components.get("parameters", {}).values():
        _parameter(parameter, "", "", schemas)
    for path, operations in document["paths"].items():
        template = path.removeprefix(API_PREFIX)
        for method, operation in operations.items():
            where = f"{method.upper()} {template}"
            for parameter in operation.get("parameters", []):
                if "$ref" not in parameter:
                    _parameter(parameter, where, template, schemas)
            for schema in _media_schemas(operation):
                _walk(schema, (where,))


def _media_schemas(operation: JSON) -> Iterable[JSON]:
    answers = [operation.get("requestBody", {}), *operation.get("responses", {}).values()]
    for answer in answers:
        for media in answer.get("content", {}).values():
            if "schema" in media:
                yield media["schema"]


def _component(name: str, schema: JSON) -> None:
    meaning = glossary().components.get(name)
    if meaning is None and name.endswith("List"):
        meaning = Meaning(f"A page of {name[:-4]} objects, with the cursor of the next page.")
    if meaning is not None:
        schema.setdefault("description", meaning.description)
    if "enum" in schema and "example" not in schema:
        schema["example"] = _example(schema, meaning)


def _walk(schema: JSON, owner: tuple[str, ...]) -> None:
    """Describe the properties of `schema` and of the schemas inside it; `owner` names where it
    is: a component or an operation, then the properties leading to it."""
    if "$ref" in schema:
        return
    for key in ("allOf", "oneOf", "anyOf"):
        for option in schema.get(key, []):
            _walk(option, owner)
    for name, field in schema.get("properties", {}).items():
        _field(field, owner, name)
        _walk(field, (*owner, name))
    if isinstance(schema.get("items"), dict):
        _walk(schema["items"], owner)
    if isinstance(schema.get("additionalProperties"), dict):
        _walk(schema["additionalProperties"], owner)


def _field(field: JSON, owner: tuple[str, ...], name: str) -> None:
    if "$ref" in field:
        return
    meaning = _meaning(owner, name)
    if meaning is not None and meaning.description:
        field.setdefault("description", meaning.description)
    if is_scalar(field) and "example" not in field:
        example = _example(field, meaning)
        if example is not None:
            field["example"] = example


def _meaning(owner: tuple[str, ...], name: str) -> Meaning | None:
    """The most specific meaning of `name` in `owner` (see the module's docstring)."""
    known = glossary()
    heads = [owner]
    shown = known.shows.get(owner[0])
    if shown is not None:
        heads.append((shown, *owner[1:]))
    for head in heads:
        for start in range(len(head)):
            found = known.overrides.get(".".join((*head[start:], name)))
            if found is not None:
                return found
    return known.fields.get(name)


def is_scalar(schema: JSON) -> bool:
    """Whether a field holds one value a reader can be shown: a string, number or boolean (an
    enum among them). A file (`format: binary`) is no value to show."""
    return schema.get("type") in _SCALARS and schema.get("format") != "binary"


def _example(schema: JSON, meaning: Meaning | None) -> Any:
    if meaning is not None and meaning.example is not None:
        return meaning.example
    values = [v for v in schema.get("enum", []) if v is not None]
    return values[0] if values else None


def _parameter(parameter: JSON, where: str, template: str, schemas: dict[str, JSON]) -> None:
    name, schema = parameter["name"], parameter.setdefault("schema", {})
    if parameter["in"] == "path":
        meaning = _path_meaning(name, template)
        if template == _SANDBOX and name == "kind":
            # Imported when needed: the sandbox's module loads the route table, whose
            # developer routes import mps.http.openapi and so this module (an import cycle).
            from mps.http.routes.sandbox import KINDS

            schema.setdefault("enum", sorted(KINDS))
        if template == _POLICY and name == "action":
            schema.setdefault("enum", sorted(APPROVAL_ACTIONS))
    else:
        parameters = glossary().parameters
        meaning = parameters.get(f"{where}.{name}") or parameters.get(name)
    if "description" not in parameter:
        # The parameter's own words first, then what its schema says (a route's declaration).
        words = [meaning.description if meaning else "", schema.get("description", "")]
        described = " ".join(w for w in words if w)
        if described:
            parameter["description"] = described
    if "example" not in parameter and "examples" not in parameter:
        example = schema.get("example")
        if example is None:
            example = _example(_resolved(schema, schemas), meaning)
        if example is not None:
            parameter["example"] = example


def _path_meaning(name: str, template: str) -> Meaning | None:
    if name != "id":
        return glossary().parameters.get(f"{{{name}}}")
    parts = template.split("/")
    collection = parts[parts.index("{id}") - 1]
    return glossary().collections.get(collection)


def _resolved(schema: JSON, schemas: dict[str, JSON]) -> JSON:
    """A parameter's schema with a reference to a component followed (for its enum)."""
    ref = schema.get("$ref", "")
    prefix = "#/components/schemas/"
    return schemas.get(ref.removeprefix(prefix), schema) if ref.startswith(prefix) else schema
