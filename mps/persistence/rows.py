"""A domain value and the row that stores it, a column per field of the same name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from mps.persistence.statements import Row

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["columns", "from_row", "to_row"]

T = TypeVar("T", bound="DataclassInstance")


def from_row(cls: type[T], row: Row, **read: Any) -> T:
    """A `cls` whose every field is the column of the same name in `row`, but for the fields
    given in `read` (a column decoded from JSON or to a bool, a value built from several). A
    column the row lacks is a KeyError: a field added to `cls` without its column fails where it
    is first read, not later with a default."""
    columns = {f.name: row[f.name] for f in fields(cls) if f.init and f.name not in read}
    return cls(**columns, **read)


def to_row(value: DataclassInstance, **written: Any) -> Row:
    """The columns that store `value`: each field under its name, but for those `written`
    otherwise (a bool stored as an integer, a value sealed) and with any columns `written` adds.
    Shallow: a field holding a value of its own is stored as it is."""
    return {f.name: getattr(value, f.name) for f in fields(value)} | written


def columns(value: DataclassInstance, names: Iterable[str], **written: Any) -> Row:
    """The columns `names` of `value` (the ones a change may write), each its field of the same
    name, but for those `written` otherwise (a value stored as JSON)."""
    return {name: getattr(value, name) for name in names} | written
