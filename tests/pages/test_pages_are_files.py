"""Pages are files (the developers' guide, house style 8): no module under mps/ holds markup, the
pages' templates, styles and scripts ship in the package, and the static files are served at
versioned URLs with their exact type and a year of caching (mps.http.pages.assets)."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient
from yarl import URL

import mps
from mps.http.keys import ROUTE_TABLE
from mps.http.pages import explorer
from mps.http.pages.assets import CACHE_FOREVER, load_assets
from mps.http.pages.markup import fill
from mps.http.routes.pages import PREFIX
from mps.http.routing import Route
from tests.helpers import assert_envelope, create_payment, sign_up

PACKAGE = Path(mps.__file__).resolve().parent
PAGES = PACKAGE / "http" / "pages"
PYPROJECT = PACKAGE.parent / "pyproject.toml"

# An element of a page, opening or closing: what a module holding a page in a string shows.
_ELEMENTS = (
    "!doctype|html|head|body|title|meta|link|script|style|main|header|footer|nav|section|"
    "article|div|span|p|a|h[1-6]|form|input|button|label|select|textarea|table|thead|tbody|"
    "tfoot|tr|td|th|ul|ol|li|dl|dt|dd|strong|em|b|i|img|br|pre|code|small|details|summary|"
    "template|iframe|svg"
)
_MARKUP = re.compile(rf"</?(?:{_ELEMENTS})(?=[\s/>])", re.IGNORECASE)


# The functions of `re` whose first argument is a pattern: a pattern that finds an element in a
# page names its tag, yet is no page.
_RE_FUNCTIONS = frozenset(
    {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
)


def _pattern(node: ast.AST) -> ast.expr | None:
    """The pattern `node` gives `re`, if it is a call of one of its functions (`re.compile`)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
        and node.func.attr in _RE_FUNCTIONS
    ):
        return None
    if node.args:
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg == "pattern"), None)


def _markup_in_strings(source: str) -> list[tuple[int, str]]:
    """Every string constant of `source` that holds an element's tag, with its line; its
    docstrings (prose may name an element) and the patterns it gives `re` aside. Only the
    pattern: the replacement of an `re.sub`, like any other string, is checked."""
    tree = ast.parse(source)
    exempt = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                exempt.add(id(first.value))
        pattern = _pattern(node)
        if pattern is not None:
            # An f-string pattern is made of constants too.
            exempt.update(id(part) for part in ast.walk(pattern))
    return [
        (node.lineno, node.value[:60])
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in exempt
        and _MARKUP.search(node.value)
    ]


def test_the_markup_check_finds_a_page_held_in_a_string() -> None:
    # given modules holding a page the ways modules did, and one that only names an element
    held = [
        'PAGE = "<!doctype html><html lang=en><body></body></html>"',
        "def f(n: str) -> str:\n    return f'<style nonce={n}>x</style>'",
        "SCRIPT = '''\n</script>'''",
        'ROW = "<td class=num>" + "1"',
        # given to `re` as what to put in rather than what to find, or to another `compile`
        'BOLD = re.sub("x", "<b>x</b>", TEXT)',
        'PAGE = re.compile("x").sub("<main>$content</main>", TEXT)',
        'PAGE = Template.compile("<main></main>")',
        "def f(n: str) -> str:\n    raise ValueError(f'{n} has no <title> yet')",
    ]
    prose = '"""Puts the nonce on its `<script>` element."""\nA = "Bearer <token>"\nB = "a < b"'
    # and patterns that find an element in a page
    patterns = (
        "BLOCK = re.compile(r'<script type=\"importmap\">(.*?)</script>', re.DOTALL)\n"
        "TAGS = re.findall(pattern=rf'</script>|<{NAME}(?=[ >])', string=PAGE)"
    )

    # then the check finds each page and passes the prose and the patterns
    assert all(_markup_in_strings(source) for source in held)
    assert _markup_in_strings(prose) == []
    assert _markup_in_strings(patterns) == []


def test_no_module_under_mps_holds_a_page() -> None:
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if (hits := _markup_in_strings(path.read_text(encoding="utf-8")))
    }

    assert found == {}, "pages belong in mps/http/pages/templates and static/"


def test_every_page_file_ships_in_the_package_data() -> None:
    # given the globs an installed wheel is built from
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    globs = data["tool"]["setuptools"]["package-data"]["mps.http.pages"]

    # when every template, style and script of the pages is matched against them
    files = [
        path.relative_to(PAGES).as_posix()
        for folder in ("templates", "static")
        for path in (PAGES / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]
    left_out = [name for name in files if not any(fnmatch(name, glob) for glob in globs)]

    # then none is left out, and every page's own files are among them
    assert left_out == []
    for page in ("checkout", "invoice", "invitation", "explorer"):
        assert f"templates/{page}.html" in files and f"static/css/{page}.css" in files
    assert {"static/js/checkout.js", "static/js/invitation.js", "static/js/explorer.js"} <= set(
        files
    )


def _page_routes(client: TestClient[Any, Any]) -> dict[str, Route]:
    """The pages' static routes of the running app, by the file's path under static/."""
    routes: list[Route] = client.app[ROUTE_TABLE]
    found = {}
    for route in routes:
        match = re.fullmatch(rf"{re.escape(PREFIX)}/[0-9a-f]{{16}}/(.+)", route.full_path)
        if match:
            found[match[1]] = route
    return found


async def test_a_page_file_is_served_at_its_versioned_url_with_its_type_and_a_year_of_cache(
    client: TestClient[Any, Any],
) -> None:
    # given the app's routes for the pages' files, and a checkout page
    routes = _page_routes(client)
    member = await sign_up(client)
    payment = await create_payment(client, member)
    page = await (await client.get(f"/pay/{payment['reference']}")).text()

    # when the checkout's script and style are fetched
    script = await client.get(routes["js/checkout.js"].full_path)
    style = await client.get(routes["css/checkout.css"].full_path)

    # then each comes with its exact type, a year of caching, and is what the page runs inline
    assert script.status == style.status == 200
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert style.headers["Content-Type"] == "text/css; charset=utf-8"
    for answer in (script, style):
        assert answer.headers["Cache-Control"] == CACHE_FOREVER
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Cross-Origin-Resource-Policy"] == "same-origin"
        assert answer.headers["X-Request-Id"].startswith("req_")
    assert (await script.text()) in page and (await style.text()) in page
    assert set(routes) == {
        f"{kind}/{name}.{kind}"
        for kind, names in (
            ("css", ("checkout", "invoice", "invitation", "explorer")),
            ("js", ("checkout", "invitation", "explorer")),
        )
        for name in names
    }


async def test_another_version_or_an_unknown_file_is_the_404_of_an_unknown_route(
    client: TestClient[Any, Any],
) -> None:
    # given the URL of a real file
    url = _page_routes(client)["js/checkout.js"].full_path
    version = url.split("/")[3]

    # when another release's version and a missing file are asked for
    other_version = await client.get(url.replace(version, "0" * 16))
    missing = await client.get(url.replace("checkout.js", "nothing.js"))

    # then each is the envelope's 404, with no file in it
    for answer in (other_version, missing):
        assert answer.status == 404
        body = await answer.json()
        assert_envelope(body, 404, "not_found")


async def get_as_written(client: TestClient[Any, Any], path: str) -> ClientResponse:
    """GET `path` byte for byte: the client resolves `..` and decodes `%2e` before sending
    unless the URL is marked encoded, and the server would then never see the climb."""
    return await client.session.get(URL(f"http://{client.host}:{client.port}{path}", encoded=True))


async def test_a_path_that_climbs_out_of_the_folder_is_the_404_of_an_unknown_route(
    client: TestClient[Any, Any],
) -> None:
    # given the folder of a real file
    folder = f"{PREFIX}/{_page_routes(client)['js/checkout.js'].full_path.split('/')[3]}"

    for climb in (
        "../../../mps/config.py",
        "%2e%2e/%2e%2e/%2e%2e/mps/config.py",
        "%2E%2E/%2E%2E/%2E%2E/mps/config.py",
        "..%2f..%2f..%2fmps/config.py",
        ".%2e/.%2e/.%2e/mps/config.py",
        # climbing out and back in to a file that is served still names no route
        "js/../js/checkout.js",
        "js/%2e%2e/js/checkout.js",
    ):
        # when a climb out of it is sent as written
        answer = await get_as_written(client, f"{folder}/{climb}")

        # then the server saw the climb, and answered the envelope's 404 with no file in it
        assert answer.url.raw_path == f"{folder}/{climb}"
        assert answer.status == 404, climb
        body = await answer.json()
        assert_envelope(body, 404, "not_found")
        assert "/../" in body["message"], body


async def test_the_production_app_serves_the_hosted_pages_files_but_not_the_explorers(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given the app as production builds it, where there is no explorer
    client: TestClient[Any, Any] = await aiohttp_client(make_app(mode="production"))
    assets = load_assets(PAGES / "static", PREFIX)

    # when each of the pages' files is asked for at its URL
    answers = {path: await client.get(assets.url(path)) for path in assets.files}

    # then the checkout's, invoice's and invitation's are served, and the explorer's are the
    # 404 of a route that does not exist
    assert set(explorer.FILES) == {"css/explorer.css", "js/explorer.js"}
    for path, answer in answers.items():
        if path in explorer.FILES:
            assert answer.status == 404, path
            assert_envelope(await answer.json(), 404, "not_found")
        else:
            assert answer.status == 200, path
            assert await answer.read() == (PAGES / "static" / path).read_bytes()


async def test_the_explorers_files_answer_only_a_loopback_request_in_development(
    client: TestClient[Any, Any],
) -> None:
    # given the development app's URLs of the explorer's script and of the checkout's
    routes = _page_routes(client)

    # when each is asked for by a page that names another host (a rebound name), and directly
    rebound = {"Host": "attacker.example"}
    explorer_rebound = await client.get(routes["js/explorer.js"].full_path, headers=rebound)
    explorer_direct = await client.get(routes["js/explorer.js"].full_path)
    checkout_rebound = await client.get(routes["js/checkout.js"].full_path, headers=rebound)

    # then the explorer's is there for the loopback developer only, as the explorer is
    assert explorer_rebound.status == 404
    assert_envelope(await explorer_rebound.json(), 404, "not_found")
    assert explorer_direct.status == 200
    assert checkout_rebound.status == 200


def test_the_version_names_the_whole_tree_and_only_servable_files_are_loaded(
    tmp_path: Path,
) -> None:
    # given a folder with a module, a style, an image, an executable and an editor's leftover
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.js").write_text("import './api.js';\n")
    (tmp_path / "app" / "api.js").write_text("export const x = 1;\n")
    (tmp_path / "app.css").write_text("body{}\n")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "tool.exe").write_bytes(b"MZ")
    (tmp_path / ".hidden.js").write_text("secret\n")

    # when it is loaded, then loaded again after one file changed, and after one was renamed
    first = load_assets(tmp_path, "/shop/static/")
    (tmp_path / "app" / "api.js").write_text("export const x = 2;\n")
    changed = load_assets(tmp_path, "/shop/static")
    (tmp_path / "app.css").rename(tmp_path / "site.css")
    renamed = load_assets(tmp_path, "/shop/static")

    # then only what a page may load is served, text with its charset, under one version that
    # any change to the tree changes
    assert set(first.files) == {"app/main.js", "app/api.js", "app.css", "logo.png"}
    assert first.files["app/main.js"].content_type == "text/javascript"
    assert first.files["app/main.js"].charset == "utf-8"
    assert first.files["logo.png"].content_type == "image/png"
    assert first.files["logo.png"].charset is None
    assert first.url("app/main.js") == f"/shop/static/{first.version}/app/main.js"
    assert len({first.version, changed.version, renamed.version}) == 3
    routes = first.routes("A file", "shop")
    assert sorted(r.full_path for r in routes) == sorted(first.url(p) for p in first.files)
    assert all(r.internal and not r.api and "{" not in r.path for r in routes)


def test_a_filled_value_is_escaped_unless_it_is_markup_and_every_placeholder_takes_one() -> None:
    # given a value from data, and markup the package built
    hostile = "\"><script>alert(1)</script>'"
    built = fill("checkout", "test_mode")

    # when each fills a block
    escaped = fill("checkout", "description", description=hostile)
    kept = fill("checkout", "description", description=built)

    # then the value is text, the markup stays markup, and a missing or stray value is refused
    assert escaped == '<p class="desc">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;</p>'
    assert kept == f'<p class="desc">{built}</p>' and '<div class="test">' in kept
    with pytest.raises(KeyError, match="missing"):
        fill("checkout", "description")
    with pytest.raises(KeyError, match="extra"):
        fill("checkout", "description", description="x", title="y")
