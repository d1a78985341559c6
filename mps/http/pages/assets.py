"""Static files of a folder in the package, served by the app under versioned URLs.

    assets = load_assets(Path(__file__).parent / "static", "/dashboard/static")
    assets.url("app/main.js")   # "/dashboard/static/3f9c…/app/main.js", for the page to name
    routes = [*assets.routes("A file of the dashboard", "dashboard"), ...]

Every file is served as `{prefix}/{version}/{path}`, where `version` is a hash of the whole tree
(each file's path and content). A URL therefore names exactly one content, so the answer may be
cached for a year and marked immutable, and a release that changes any file changes every URL.
One hash for the tree rather than one per file keeps relative references between the files (an
ES module's `import './api.js'`, a stylesheet's `url(font.woff2)`) working unchanged, with no
build step to rewrite them. A browser still holding an older page asks for an older version and
gets the 404 of a route that does not exist, never a file of another release under a cached name.

Only files of the types listed below are read, once, when `load_assets` runs (at start, as the
route table is built; never per request, never at import), and only those are served, each by a
route of its own: a request names a route, never a path on disk, so no `..` or symlink reaches
beyond the folder.
The answer carries its exact type (with `charset=utf-8` for text), and `mps.http.security` adds
`X-Content-Type-Options: nosniff`, so a browser runs a file only as what it is.

A page that names these files needs a Content Security Policy that lets them load: either
`'self'` in `script-src`/`style-src`, or, stricter, the request's nonce
(`mps.http.security.csp_nonce`) on the `<script src>` and `<link rel=stylesheet>` elements
(an ES module's own imports inherit its nonce).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from mps.http.routing import Auth, Call, Handler, Route

__all__ = ["CACHE_FOREVER", "Asset", "Assets", "load_assets"]

# A versioned URL names one content for ever: kept a year, and never revalidated.
CACHE_FOREVER = "public, max-age=31536000, immutable"

# Suffix -> media type of what may be served; any other file in the folder is not.
_TEXT_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".txt": "text/plain",
    ".md": "text/plain",
    "": "text/plain",  # LICENSE, NOTICE
}
_BINARY_TYPES = {
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    # Text is sent with `charset=utf-8`; None for bytes that are no text.
    charset: str | None


@dataclass(frozen=True)
class Assets:
    """The files of one folder by their path under it (`css/app.css`), served under `prefix`."""

    prefix: str
    version: str
    files: Mapping[str, Asset]

    def url(self, path: str) -> str:
        """The long-lived URL of the file at `path`; KeyError for a file that is not served."""
        if path not in self.files:
            raise KeyError(path)
        return f"{self.prefix}/{self.version}/{path}"

    def routes(self, summary: str, tag: str) -> list[Route]:
        """One route per file, at its versioned URL: public, outside /api/v1 and the OpenAPI
        document. Concrete paths rather than one `{path}` pattern: the route table lists
        exactly what is served, and any other URL (another release's, a mistyped one) is the
        router's own 404, in the error envelope like every unknown route."""
        return [
            Route(
                "GET",
                self.url(path),
                _handler(asset),
                summary,
                tag,
                Auth.PUBLIC,
                api=False,
                internal=True,
            )
            for path, asset in self.files.items()
        ]


def _handler(asset: Asset) -> Handler:
    async def static_file(call: Call) -> web.Response:
        response = web.Response(
            body=asset.body, content_type=asset.content_type, charset=asset.charset
        )
        response.headers["Cache-Control"] = CACHE_FOREVER
        # Our files are for our pages: another site may not load them into its own.
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
        return response

    return static_file


def load_assets(root: Path, prefix: str) -> Assets:
    """Read every servable file under `root`, to be served under `prefix` (no trailing slash)."""
    files: dict[str, Asset] = {}
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        # Editors' and tools' leftovers (.DS_Store, __pycache__) are not part of a release.
        if any(part.startswith((".", "__")) for part in path.relative_to(root).parts):
            continue
        suffix = path.suffix.lower()
        text_type, binary_type = _TEXT_TYPES.get(suffix), _BINARY_TYPES.get(suffix)
        if text_type is None and binary_type is None:
            continue
        name = path.relative_to(root).as_posix()
        body = path.read_bytes()
        if text_type is not None:
            files[name] = Asset(body, text_type, "utf-8")
        elif binary_type is not None:
            files[name] = Asset(body, binary_type, None)
        # The name is part of the version too: a renamed file is a new URL.
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
    return Assets(prefix.rstrip("/"), digest.hexdigest()[:16], files)
