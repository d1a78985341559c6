"""The layers stay whole: every folder is a package the import contracts in pyproject.toml see,
and each subpackage has its place in them.

SQL stays under mps/persistence: every other module reads and writes through its queries,
its stores and the writer (docs/architecture.md). The import contracts in pyproject.toml
cannot see a statement written as a string, so this scans the string constants themselves.

Allow-listed: nothing. A module that needs a statement asks mps.persistence for it by name.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mps"
PERSISTENCE = PACKAGE / "persistence"
PYPROJECT = PACKAGE.parent / "pyproject.toml"
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


def _layers() -> list[str]:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["id"] == "layers"]
    layers: list[str] = contract["layers"]
    return layers


def test_every_folder_of_the_package_is_a_package_the_import_contracts_can_see() -> None:
    # given: import-linter analyses packages only, so a folder without an __init__.py keeps its
    # imports out of every contract without a word
    folders = {path.parent for path in PACKAGE.rglob("*.py")}
    assert len(folders) > 10, "the scan found too few folders to be looking in the right place"

    # when
    unseen = sorted(
        str(f.relative_to(PACKAGE.parent)) for f in folders if not (f / "__init__.py").exists()
    )

    # then
    assert not unseen, f"add an __init__.py so the import contracts see: {unseen}"


def test_every_subpackage_has_a_place_in_the_layers() -> None:
    # given
    subpackages = {f"mps.{path.parent.name}" for path in PACKAGE.glob("*/__init__.py")}
    assert {"mps.auth", "mps.cluster", "mps.domain", "mps.http"} <= subpackages

    # when
    placed = {part.strip() for line in _layers() for part in re.split(r"[|:]", line)}

    # then
    assert subpackages - placed == set(), "name each subpackage's layer in pyproject.toml"


def units_handed_to_a_database(source: str) -> list[int]:
    """The lines of `source` that hand units straight to a database (`db.write(...)`,
    `self.database.write(...)`), bypassing the writer and the stores' named APIs."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "write"
        and _last_name(node.func.value) in {"db", "database"}
    )


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def test_units_handed_to_a_database_are_found_on_a_name_or_an_attribute() -> None:
    # given
    source = (
        "await db.write([[statement]])\n"
        "await self.database.write(units, fences)\n"
        "await response.write(chunk)\n"
        "handle.write(data)\n"
    )

    # when
    found = units_handed_to_a_database(source)

    # then
    assert found == [1, 2]


def test_only_the_writer_and_persistence_hand_units_to_the_database() -> None:
    # given: the writer actor group-commits the actors' units; a command that runs beside the
    # service (reseal, the operator's requests) writes through a named API of mps.persistence
    writer = PACKAGE / "actors" / "persistence.py"
    modules = [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.is_relative_to(PERSISTENCE) and path != writer
    ]

    # when
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in modules
        for line in units_handed_to_a_database(path.read_text(encoding="utf-8"))
    ]

    # then
    assert units_handed_to_a_database(writer.read_text(encoding="utf-8")), "the writer moved?"
    assert not found, "write through the writer or a named API of mps.persistence:\n" + (
        "\n".join(found)
    )
