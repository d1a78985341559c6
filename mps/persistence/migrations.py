"""Versioned SQL migrations: `sql/NNNN_name.sql`, applied in order, each exactly once.

The SQL is the portable subset both backends accept (TEXT, INTEGER, BIGINT; timestamps as
fixed-width ISO strings, which sort as time; JSON documents as TEXT).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

__all__ = ["Migration", "load_migrations"]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    def statements(self) -> list[str]:
        """The script split at `;` line ends; our migrations keep no `;` inside statements."""
        parts = [part.strip() for part in self.sql.split(";\n")]
        return [p.rstrip(";") for p in parts if p and not _only_comments(p)]


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def load_migrations() -> list[Migration]:
    folder = resources.files("mps.persistence") / "sql"
    found = []
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        number, _, rest = entry.name.partition("_")
        found.append(Migration(int(number), rest.removesuffix(".sql"), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    return found
