"""The merchant dashboard: a browser app in plain ES modules that calls the public JSON API only.

`files` names the static folder, whose files `mps.http.pages.assets` reads once, when the routes
are built, and serves under one version hash; `shell` fills the one HTML template and decides the
page's Content Security Policy. The routes that serve both are in `mps.http.routes.dashboard`.
README.md beside this file says how to add a section.
"""
