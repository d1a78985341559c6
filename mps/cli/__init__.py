"""The merchant's command line (`mps`, `python -m mps`): a client of a running service.

    errors.py     the exception tree and the exit status of each failure
    config.py     the credentials file
    client.py     the API over aiohttp, its errors translated
    patterns.py   event-type patterns of `listen` (pure)
    listen.py     the webhook relay of `listen`
    commands.py   one function per command
    parsing.py    how a command joins the parser (--url, the function that runs it)
    main.py       the argument parser and `main`

It talks to the service over HTTP only and imports nothing of the server but the signature
check that merchants' receivers use too (`mps.webhooks`).
"""

from mps.cli.main import main

__all__ = ["main"]
