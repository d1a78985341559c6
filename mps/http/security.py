"""Security headers for every response the application sends, decided in this one place.

Every response:    `X-Content-Type-Options: nosniff`, `Cache-Control: no-store` (unless the route
                   chose otherwise), and `Server: mps` instead of aiohttp's name and version.
HTML (pages):      a Content Security Policy that runs only the page's own inline script and
                   style, `Referrer-Policy: no-referrer` and `X-Frame-Options: DENY`.
Anything else:     `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'` (an API
                   answer opened in a browser runs nothing and cannot be framed).

The headers are applied in the application's `on_response_prepare` signal, not in a middleware:
the signal sees every response prepared for a request the application routed, including those a
middleware never gets back (a response a handler prepares itself) and aiohttp's own 404 and 405,
and it runs just before aiohttp would add its own `Server` header. Answers aiohttp writes before
any routing (a request line it cannot parse) never reach the application; mps.http.unparsed
gives those the same headers and the error envelope.

Inline code is allowed in one of two ways, never by `'unsafe-inline'`:

- **Nonce.** A page rendered per request asks `csp_nonce(request)` for the request's nonce (a
  fresh 128-bit value, made on first use) and puts it on its `<script nonce>` and `<style nonce>`;
  the policy names that nonce. A page that never asks gets a policy with no nonce at all, so it
  can run no script.
- **Hashes.** A page that is one constant (the API explorer) is registered with `static_page`
  once, when it is first built; the policy of a response whose body is exactly that page lists the
  SHA-256 of each of its inline blocks. Only text fixed for the life of the process is ever
  hashed, never a rendered body.

That inline code is never text in a Python module: it is the style and script files of
`mps.http.pages` (`static/`), put inline as they are, and Python fills in only values, escaped
(`mps.http.pages.markup`). Inline rather than `<script src>`: each page is one request, and its
policy names no URL at all. A page whose code is files on our origin (the dashboard) sets its
whole policy through `OWN_POLICY` instead.

`Referrer-Policy: no-referrer` rather than `strict-origin-when-cross-origin`: a checkout URL names
its payment, and the merchant's success and cancel pages have no use for even our origin.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets

from aiohttp import web

from mps.http.keys import CSP_NONCE, RELAYED

__all__ = ["OWN_POLICY", "SERVER", "answer_headers", "csp_nonce", "secure_response", "static_page"]

SERVER = "mps"

# Scripts and styles come only from the page itself (nonce or hash); the pages call our own API
# with fetch; no form submits anywhere, no <base> may redirect relative URLs, no site may frame.
_PAGE_POLICY = (
    "default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_OTHER_POLICY = "default-src 'none'; frame-ancestors 'none'"
_NO_INLINE = "'none'"

_INLINE_BLOCK = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)

# sha256(body) of each registered constant page -> its (script sources, style sources). Filled by
# the page modules once per constant page (the explorer when first served), from their constants
# only; it only grows, and holds nothing bound to an event loop.
_STATIC_PAGES: dict[bytes, tuple[str, str]] = {}

# A page whose scripts are files on our own origin rather than inline blocks (the dashboard,
# mps.http.dashboard) sets its whole policy here; it replaces the inline-page policy above.
OWN_POLICY = web.ResponseKey("own_policy", str)


def csp_nonce(request: web.Request) -> str:
    """The nonce this request's page puts on its inline `<script>` and `<style>` elements."""
    nonce = request.get(CSP_NONCE)
    if nonce is None:
        nonce = secrets.token_urlsafe(16)
        request[CSP_NONCE] = nonce
    return nonce


def static_page(html: str) -> str:
    """Register a constant page whose inline `<script>` and `<style>` blocks (written without
    attributes) are allowed by their hashes; returns the page unchanged. Constant pages only."""
    sources: dict[str, list[str]] = {"script": [], "style": []}
    for match in _INLINE_BLOCK.finditer(html):
        digest = base64.b64encode(hashlib.sha256(match[2].encode()).digest()).decode()
        sources[match[1]].append(f"'sha256-{digest}'")
    _STATIC_PAGES[hashlib.sha256(html.encode()).digest()] = (
        " ".join(sources["script"]) or _NO_INLINE,
        " ".join(sources["style"]) or _NO_INLINE,
    )
    return html


def _page_policy(request: web.Request, response: web.StreamResponse) -> str:
    nonce = request.get(CSP_NONCE)
    if nonce is not None:
        return _PAGE_POLICY.format(scripts=f"'nonce-{nonce}'", styles=f"'nonce-{nonce}'")
    body = response.body if isinstance(response, web.Response) else None
    if isinstance(body, bytes):
        registered = _STATIC_PAGES.get(hashlib.sha256(body).digest())
        if registered is not None:
            scripts, styles = registered
            return _PAGE_POLICY.format(scripts=scripts, styles=styles)
    return _PAGE_POLICY.format(scripts=_NO_INLINE, styles=_NO_INLINE)


def answer_headers() -> dict[str, str]:
    """The headers of an answer that is not a page, as `secure_response` sets them; for answers
    written where the signal does not run (mps.http.unparsed)."""
    return {
        "Server": SERVER,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Content-Security-Policy": _OTHER_POLICY,
    }


async def secure_response(request: web.Request, response: web.StreamResponse) -> None:
    """The application's `on_response_prepare` signal: put the headers above on `response`."""
    if response.get(RELAYED):
        return  # the owning node's answer, whose headers it set already (mps.cluster)
    headers = response.headers
    headers["Server"] = SERVER
    headers["X-Content-Type-Options"] = "nosniff"
    # Responses carry session tokens, one-time API keys and payment data: never cached.
    headers.setdefault("Cache-Control", "no-store")
    if response.content_type == "text/html":
        own = response.get(OWN_POLICY)
        headers["Content-Security-Policy"] = own or _page_policy(request, response)
        headers["Referrer-Policy"] = "no-referrer"
        headers["X-Frame-Options"] = "DENY"
    else:
        headers["Content-Security-Policy"] = _OTHER_POLICY
