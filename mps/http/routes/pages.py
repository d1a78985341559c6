"""The hosted pages' static files (mps.http.pages.assets): the styles and scripts the checkout,
invoice and invitation pages and the explorer are made of, under `/pages/static/{version}/`.

The pages themselves put these files inline, under the request's nonce or their hashes
(mps.http.security), so that each page is one request and its policy names no URL; this route
serves the same files to anything else that wants them by URL, cached for a year.

The explorer's files (`mps.http.pages.explorer.FILES`) are served as the explorer is: in
development only, and there to loopback requests only (mps.http.app); a production server has no
explorer, so it serves none of its code either.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from mps.http import pages
from mps.http.pages import explorer
from mps.http.pages.assets import load_assets
from mps.http.routing import Route

__all__ = ["PREFIX", "build"]

PREFIX = "/pages/static"


def build() -> list[Route]:
    """The routes serving the files; reads them once, here."""
    assets = load_assets(Path(pages.__file__).resolve().parent / "static", PREFIX)
    explorers = {assets.url(path) for path in explorer.FILES}
    return [
        replace(route, development_only=True) if route.full_path in explorers else route
        for route in assets.routes("A style or script file of the hosted pages", "pages")
    ]
