"""Where the dashboard's static files are and the URL prefix they are served under. They are
read and served by `mps.http.pages.assets` (one versioned, immutable URL per file; its docstring
says why one version for the whole tree)."""

from __future__ import annotations

from pathlib import Path

from mps.http.pages.assets import Assets, load_assets

__all__ = ["STATIC_PREFIX", "STATIC_ROOT", "load_files"]

STATIC_ROOT = Path(__file__).resolve().parent / "static"
STATIC_PREFIX = "/dashboard/static"


def load_files(root: Path = STATIC_ROOT) -> Assets:
    """Read the dashboard's files. At start, as the route table is built; never per request."""
    return load_assets(root, STATIC_PREFIX)
