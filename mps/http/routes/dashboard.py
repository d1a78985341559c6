"""The merchant dashboard's pages: `/` leads to `/dashboard`, every path under it answers the one
shell (the app routes in the browser, so a deep link or a reload lands on the right view), and
each of the app's files is served at its versioned URL under `/dashboard/static/`
(mps.http.dashboard, mps.http.pages.assets).

The dashboard itself calls only the public JSON API, with the Bearer session token, like any
client; these routes hand out files and need no credential.
"""

from __future__ import annotations

from aiohttp import web

from mps.http.dashboard.files import load_files
from mps.http.dashboard.shell import Shell, render_shell
from mps.http.routing import Auth, Call, Handler, Route
from mps.http.security import OWN_POLICY

__all__ = ["build"]


async def _home(call: Call) -> web.Response:
    # Not permanent: a browser must not remember where `/` leads across releases.
    return web.Response(status=302, headers={"Location": "/dashboard"})


def _shell_handler(shell: Shell) -> Handler:
    async def dashboard_page(call: Call) -> web.Response:
        response = web.Response(text=shell.html, content_type="text/html")
        response[OWN_POLICY] = shell.policy
        # The page keeps no opener a signed-in tab could be reached through.
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        return response

    return dashboard_page


def build(development: bool) -> list[Route]:
    """The dashboard's routes; reads its files once, here."""
    files = load_files()
    shell = _shell_handler(render_shell(files, development=development))

    def page(path: str, handler: Handler, summary: str) -> Route:
        return Route("GET", path, handler, summary, "dashboard", Auth.PUBLIC, api=False)

    return [
        page("/", _home, "Leads to the dashboard"),
        *files.routes("A file of the dashboard", "dashboard"),
        page("/dashboard", shell, "The merchant dashboard"),
        # Any view's URL, but not under static/: a file another release named is a 404 there.
        page(
            "/dashboard/{view:(?!static/).*}",
            shell,
            "The merchant dashboard, at one of its views",
        ),
    ]
