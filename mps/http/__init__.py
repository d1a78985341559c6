"""The aiohttp front end: route table, middlewares, request/response rendering.

This package is `mps.http`; it shadows the standard library's `http` only inside `mps` (never run
a module from this folder as a script).
"""
