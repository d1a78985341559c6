"""The dashboard's one HTML page and its Content Security Policy.

The page is the same for every path under /dashboard (the app routes in the browser), so it is
rendered once, when the routes are built. Its scripts are files on our origin (`'self'`); the only
inline block is the import map, which lets the vendored modules keep their bare imports
(`from "preact"`) byte for byte, and it is allowed by its SHA-256 alone. No `'unsafe-inline'`,
no `'unsafe-eval'`, no framing, no form posts, and Trusted Types required: the app writes the DOM
only through Preact, never through `innerHTML`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from mps.http.pages.assets import Assets

__all__ = ["IMPORTS", "Shell", "render_shell"]

_TEMPLATE = Path(__file__).resolve().parent / "templates" / "shell.html"
_IMPORT_MAP_BLOCK = re.compile(r'<script type="importmap">(.*?)</script>', re.DOTALL)

# Bare module names -> files under the static folder (vendor/VENDORED.md says where they came from).
IMPORTS = {
    "preact": "vendor/preact-10.29.8/preact.module.js",
    "preact/hooks": "vendor/preact-10.29.8/hooks.module.js",
    "htm": "vendor/htm-3.1.1/htm.module.js",
    "htm/preact": "vendor/htm-3.1.1/preact.module.js",
    "uplot": "vendor/uplot-1.6.32/uPlot.esm.js",
}

_POLICY = (
    "default-src 'none'; script-src 'self' {import_map}; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
)


@dataclass(frozen=True)
class Shell:
    html: str
    policy: str


def render_shell(assets: Assets, *, development: bool) -> Shell:
    """The page naming this release's files, and the policy that lets exactly them run."""
    import_map = json.dumps(
        {"imports": {name: assets.url(path) for name, path in IMPORTS.items()}},
        separators=(",", ":"),
    )
    html = Template(_TEMPLATE.read_text(encoding="utf-8")).substitute(
        server_mode="development" if development else "production",
        uplot_css=assets.url("vendor/uplot-1.6.32/uPlot.min.css"),
        app_css=assets.url("app/app.css"),
        main_js=assets.url("app/main.js"),
        import_map=import_map,
    )
    # The hash covers the block exactly as the page holds it, whitespace included, so the
    # template may be formatted freely.
    block = _IMPORT_MAP_BLOCK.search(html)
    if block is None:
        raise ValueError(f"{_TEMPLATE} has no import map block")
    digest = base64.b64encode(hashlib.sha256(block[1].encode()).digest()).decode()
    return Shell(html, _POLICY.format(import_map=f"'sha256-{digest}'"))
