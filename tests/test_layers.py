"""SQL stays under mps/persistence: every other module reads and writes through its queries,
its stores and the writer (docs/architecture.md). The import contracts in pyproject.toml
cannot see a statement written as a string, so this scans the string constants themselves.

Allow-listed: nothing. A module that needs a statement asks mps.persistence for it by name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mps"
PERSISTENCE = PACKAGE / "persistence"
# Upper case only, as the package writes its SQL: prose that says "select" or "update" is not a
# statement. The table names of UPDATE and the words after INSERT and DELETE keep it to SQL.
SQL = re.compile(
    r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE|ALTER TABLE|DROP TABLE)\b"
)


def sql_in_source(source: str) -> list[tuple[int, str]]:
    """(line, statement's start) of every string constant in `source` that holds SQL; adjacent
    literals are one constant, and an f-string's fixed parts are constants of their own. In
    the order of the source."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = SQL.search(node.value)
            if match is not None:
                found.append((node.lineno, node.value[match.start() :][:60]))
    return sorted(found)


def test_sql_in_source_finds_statements_in_plain_joined_and_formatted_strings() -> None:
    # given
    source = (
        "a = 'a string about how to select a plan'\n"
        "b = db.fetch('SELECT id FROM companies WHERE id = $1', x)\n"
        "c = ('UPDATE logins SET code_hash = $1 '\n     'WHERE id = $2')\n"
        "d = f'DELETE FROM {table} WHERE id = $1'\n"
        '"""A docstring that does not INSERT anything."""\n'
    )

    # when
    found = [line for line, _ in sql_in_source(source)]

    # then
    assert found == [2, 3, 5]


def test_no_module_outside_persistence_holds_sql() -> None:
    # given
    modules = [
        path for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(PERSISTENCE)
    ]
    assert len(modules) > 50, "the scan found too few modules to be looking in the right place"

    # when
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {start!r}"
        for path in modules
        for line, start in sql_in_source(path.read_text(encoding="utf-8"))
    ]

    # then
    assert not found, "SQL outside mps/persistence (move it to a query or store there):\n" + (
        "\n".join(found)
    )
