"""The interactive API explorer at /api/docs (development only, decisions 0 and 4).

What a new developer does with it, all from the one page and with no internet access:

- **Sign in.** An email goes to `POST /api/v1/auth/login`; the code is read from the dev
  mailbox (`GET /api/v1/dev/mailbox?to=…`, loopback only, the page's own origin) and filled in,
  or typed; `POST /api/v1/auth/otp/verify` gives the session token, kept in `sessionStorage`
  (gone with the tab). An email without an account is offered `POST /api/v1/auth/signup`
  instead. Or a secret key (`sk_test_…`) or a session token is pasted, and requests carry that.
- **Read the API.** The OpenAPI document comes from `GET /api/docs/openapi.json` (development
  only, loopback only, no credential: `mps.http.routes.dev`), so the operations are listed before
  anyone signs in; each shows its summary, description, credential, parameters, body fields and
  response codes. `$ref`s to `#/components/…` are followed wherever the document uses them.
- **Send.** One input per path, query and header parameter builds the URL (every value through
  `encodeURIComponent`; a required one left empty is said, and nothing is sent); the body starts
  as a valid example built from the schema (its `example`, else its required fields with values
  their types, formats and patterns accept); the answer shows its status, request id, rate-limit
  headers and pretty JSON.

Document text (summaries, descriptions, error messages, response bodies) is only ever set as
`textContent`, never parsed as markup: the document and the answers are data, not page.

The page is three files: the markup `templates/explorer.html`, the style
`static/css/explorer.css` and the script `static/js/explorer.js` (`FILES`), put inline. It is one
constant, registered with `static_page`: its Content Security Policy allows exactly its one
script and one style element by their hashes (`mps.http.security`). Keep those tags without
attributes, and keep event handlers and styles out of the markup (a strict policy blocks
`onclick=` and `style=`); handlers are assigned from the script. No font, script or style comes
from anywhere else (`default-src 'none'` would refuse it anyway, and a developer may be offline).

Nothing is read at import: `explorer_page` reads and registers the page on its first call (the
first request for it, in development only), so a production process never reads the explorer's
files, and importing the module has no effect on the policy table.
"""

from __future__ import annotations

from functools import cache

from mps.http.pages.markup import fill, inline_code
from mps.http.security import static_page

__all__ = ["FILES", "explorer_page"]

# The explorer's own files under static/: served, like the explorer, in development only
# (mps.http.routes.pages).
FILES = frozenset({"css/explorer.css", "js/explorer.js"})


@cache
def explorer_page() -> str:
    """The explorer, built and registered once, on first use, from the package's own files: the
    policy's hashes are of text fixed for the life of the process, never of anything rendered
    per request. Called from a request's handler: it reads two files, once, and holds nothing
    bound to an event loop."""
    return static_page(
        fill(
            "explorer",
            "page",
            style=inline_code("css/explorer.css"),
            script=inline_code("js/explorer.js"),
        )
    )
