"""How the service serves the dashboard (issue 30): `/` leads there, every view's URL answers the
one shell under its own strict policy, the app's files are served by content hash with long-lived
caching, and unknown API paths keep the JSON envelope."""

from __future__ import annotations

import base64
import hashlib
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient
from yarl import URL

from mps.http.dashboard.files import STATIC_ROOT, load_files
from tests.helpers import assert_envelope

ROOT = Path(__file__).resolve().parents[2]


async def test_root_redirects_to_the_dashboard(client: TestClient[Any, Any]) -> None:
    response = await client.get("/", allow_redirects=False)

    assert response.status == 302
    assert response.headers["Location"] == "/dashboard"


async def test_unknown_api_and_page_paths_still_answer_the_json_envelope(
    client: TestClient[Any, Any],
) -> None:
    for path in ("/api/v1/nothing-here", "/nothing-here"):
        response = await client.get(path)
        assert response.status == 404
        assert_envelope(await response.json(), 404, "not_found")


async def test_every_dashboard_url_answers_the_shell_under_a_strict_policy(
    client: TestClient[Any, Any],
) -> None:
    for path in ("/dashboard", "/dashboard/", "/dashboard/payments?status=PAID", "/dashboard/x/y"):
        response = await client.get(path)
        body = await response.text()
        assert response.status == 200, path
        assert response.content_type == "text/html"
        assert '<div id="app">' in body
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Frame-Options"] == "DENY"
        policy = response.headers["Content-Security-Policy"]
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert "frame-ancestors 'none'" in policy
        assert "default-src 'none'" in policy


async def test_the_one_inline_block_is_the_import_map_and_the_policy_names_its_hash(
    client: TestClient[Any, Any],
) -> None:
    response = await client.get("/dashboard")
    body = await response.text()
    policy = response.headers["Content-Security-Policy"]

    inline = re.findall(r"<script([^>]*)>(.*?)</script>", body, re.DOTALL)
    with_body = [(attrs, text) for attrs, text in inline if text.strip()]
    assert [attrs.strip() for attrs, _ in with_body] == ['type="importmap"']
    digest = base64.b64encode(hashlib.sha256(with_body[0][1].encode()).digest()).decode()
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert script_src.split() == ["script-src", "'self'", f"'sha256-{digest}'"]


async def test_static_files_are_served_by_version_with_long_lived_caching(
    client: TestClient[Any, Any],
) -> None:
    # given the shell's links to the app's script and stylesheet
    shell = await (await client.get("/dashboard")).text()
    script = re.search(r'<script type="module" src="([^"]+)"', shell)
    style = re.search(r'<link rel="stylesheet" href="([^"]+app\.css)"', shell)
    assert script is not None and style is not None

    # when they are fetched
    js = await client.get(script[1])
    css = await client.get(style[1])

    # then each comes with its type and may be cached for a year
    assert js.status == 200 and css.status == 200
    assert js.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert css.headers["Content-Type"] == "text/css; charset=utf-8"
    for response in (js, css):
        assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert (await js.read()) == (STATIC_ROOT / "app" / "main.js").read_bytes()


async def test_a_file_of_another_version_or_outside_the_tree_is_not_found(
    client: TestClient[Any, Any],
) -> None:
    version = load_files().version
    for path in (
        "/dashboard/static/0000000000000000/app/main.js",
        f"/dashboard/static/{version}/app/nothing.js",
        f"/dashboard/static/{version}/files.py",
    ):
        response = await client.get(path)
        assert response.status == 404, path
        assert_envelope(await response.json(), 404)
    # Files are looked up by name among those read at start, so a path that climbs out names
    # nothing. Sent as written (an encoded URL): the client would otherwise resolve the climb
    # before it left, and the server would never see it.
    for climbing in (
        "../../files.py",
        "app/%2e%2e/%2e%2e/files.py",
        "..%2f..%2ffiles.py",
        "app/../app/main.js",
    ):
        path = f"/dashboard/static/{version}/{climbing}"
        climbed = await client.session.get(
            URL(f"http://{client.host}:{client.port}{path}", encoded=True)
        )
        assert climbed.status == 404, climbing
        body = await climbed.json()
        assert_envelope(body, 404, "not_found")
        assert "/../" in body["message"], body


def test_a_changed_file_changes_the_version(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.js").write_text("export const a = 1;\n")
    before = load_files(tmp_path).version

    (tmp_path / "app" / "main.js").write_text("export const a = 2;\n")

    assert load_files(tmp_path).version != before


def test_every_served_file_and_the_template_are_package_data() -> None:
    # given the package data pyproject declares for the dashboard
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["mps.http.dashboard"]
    package = ROOT / "mps" / "http" / "dashboard"

    # then every file the dashboard serves or renders is installed with the package (the
    # patterns are globs on the package's folder, as setuptools reads them)
    installed = {path for p in patterns for path in package.glob(p) if path.is_file()}
    needed = {package / "static" / name for name in load_files().files}
    assert needed - installed == set()
    assert package / "templates" / "shell.html" in installed


async def test_the_production_app_serves_the_dashboard_too(
    aiohttp_client: Callable[..., Any], make_app: Callable[..., web.Application]
) -> None:
    # given the app as production builds it
    client: TestClient[Any, Any] = await aiohttp_client(make_app(mode="production"))

    # when the dashboard, one of its files and `/` are asked for
    shell = await client.get("/dashboard/payments")
    script = re.search(r'<script type="module" src="([^"]+)"', await shell.text())
    assert script is not None
    file = await client.get(script[1])
    root = await client.get("/", allow_redirects=False)

    # then all answer as in development, and the page says it is production
    assert shell.status == 200 and file.status == 200
    assert 'name="mps-server-mode" content="production"' in await shell.text()
    assert root.headers["Location"] == "/dashboard"
