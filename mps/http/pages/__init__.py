"""Pages for people, served outside /api/v1: the hosted checkout, invoice and invitation pages,
the invoice email's HTML part, and the API explorer.

Pages are files. Each page's markup is `templates/{page}.html`, its style and script are
`static/css/{page}.css` and `static/js/{page}.js`; the module of the same name only fills values
in, escaped (`markup.fill`). `assets` serves a folder of static files at versioned URLs, for
these pages' files (mps.http.routes.pages) and for any other page built on files.
"""
