"""Versioned SQL migrations: `sql/NNNN_name.sql`, applied in order, each exactly once.

The SQL is the portable subset both backends accept (TEXT, INTEGER, BIGINT; timestamps as
fixed-width ISO strings, which sort as time; JSON documents as TEXT).

Each backend applies the pending ones when it opens (under a lock: the first node of a rolling
upgrade to start migrates, the others find nothing to do), or `run.py migrate` does (mps.migrate)
before any new node starts. Either way nodes of the previous version are still running on the
migrated schema, so a migration is written expand-then-contract: it adds (tables, nullable
columns or columns with a default, indexes) and never drops, renames or retypes what the
previous version reads or writes; that removal waits for a later release, once no node of the
version using it runs. `tests/test_migrate.py` holds every migration to it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources

__all__ = ["Migration", "load_migrations", "pending"]


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


def pending(applied: Collection[int], available: Sequence[Migration]) -> list[Migration]:
    """The migrations of `available` not in `applied`, in order."""
    return [m for m in sorted(available, key=lambda m: m.version) if m.version not in applied]
