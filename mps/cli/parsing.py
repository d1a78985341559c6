"""How each command joins the parser: under its group, taking `--url` wherever it is written (the
`common` parent), and naming the coroutine that runs it (`run`, which `main` calls)."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

__all__ = ["SubParsers", "add_command", "add_group"]

# A string: the class is generic only to type checkers, not at run time.
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_command(
    sub: SubParsers,
    name: str,
    common: argparse.ArgumentParser,
    run: Callable[..., Awaitable[int]],
    *,
    summary: str,
    description: str,
    **options: Any,
) -> argparse.ArgumentParser:
    """The parser of command `name`; `summary` is its line in the group's help, `options` any
    other `add_parser` argument (an epilog, a formatter)."""
    parser = sub.add_parser(
        name, parents=[common], help=summary, description=description, **options
    )
    parser.set_defaults(run=run)
    return parser


def add_group(
    sub: SubParsers, name: str, common: argparse.ArgumentParser, *, summary: str
) -> SubParsers:
    """Command group `name` (`mps payments …`), whose actions `add_command` adds to what this
    returns."""
    group = sub.add_parser(name, parents=[common], help=summary)
    return group.add_subparsers(dest="action", metavar="ACTION", required=True)
