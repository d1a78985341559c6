"""Event-type patterns of `mps listen`: what to subscribe the endpoint to, what to forward
where. Pure functions, so the rules are tested without a service.

A pattern is matched as a shell glob (`payment.*`, `refund.c*`, `*.failed`). The service's
endpoints take only exact types, families (`refund.*`) and `*`; a glob they do not take is
subscribed to as its family, or as `*`, and the rest is filtered here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from mps.cli.errors import UsageError

__all__ = ["Route", "Routing", "parse_route", "split_patterns", "subscription"]

_GLOB = frozenset("*?[")


def _is_glob(text: str) -> bool:
    return any(c in _GLOB for c in text)


def split_patterns(values: Iterable[str]) -> tuple[str, ...]:
    """`--events a,b --events c` as ('a', 'b', 'c'), blanks and repeats dropped."""
    found = (part.strip() for value in values for part in value.split(","))
    return tuple(dict.fromkeys(p for p in found if p))


def subscription(patterns: Sequence[str]) -> list[str]:
    """The endpoint's `events` that cover `patterns`: each one as it is when the service takes
    it, else widened to its family or to `*` (the exact filter is then ours)."""
    wanted: list[str] = []
    for pattern in patterns:
        family, _, rest = pattern.partition(".")
        if pattern == "*" or not _is_glob(pattern) or (rest == "*" and not _is_glob(family)):
            wanted.append(pattern)
        elif rest and not _is_glob(family):
            wanted.append(f"{family}.*")
        else:
            wanted.append("*")
    if "*" in wanted:
        return ["*"]
    return list(dict.fromkeys(wanted))


@dataclass(frozen=True, slots=True)
class Route:
    pattern: str
    target: str


def parse_route(text: str) -> Route:
    """`payment.*=http://localhost:3000/a` (the first `=` separates: URLs may hold more)."""
    pattern, sep, target = text.partition("=")
    pattern, target = pattern.strip(), target.strip()
    if not sep or not pattern or not target:
        raise UsageError(
            "--forward takes PATTERN=URL, such as 'payment.*=http://localhost:3000/hooks'"
            f" (got {text!r})"
        )
    _check_target(target, "--forward")
    return Route(pattern, target)


def _check_target(url: str, option: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"{option} needs an http:// or https:// URL (got {url!r})")


@dataclass(frozen=True, slots=True)
class Routing:
    """Which events to forward, and where: the first route whose pattern matches wins, then
    the default; `only` (from `--events`), when not empty, must match too."""

    routes: tuple[Route, ...]
    default: str | None
    only: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.routes and self.default is None:
            raise UsageError(
                "listen needs somewhere to forward to: --forward-to URL or --forward PATTERN=URL"
            )
        if self.default is not None:
            _check_target(self.default, "--forward-to")

    def target(self, event_type: str) -> str | None:
        if self.only and not any(fnmatchcase(event_type, p) for p in self.only):
            return None
        for route in self.routes:
            if fnmatchcase(event_type, route.pattern):
                return route.target
        return self.default

    def subscription(self) -> list[str]:
        """What the endpoint subscribes to: `--events`, else every type when there is a
        default route, else what the routes name (so events nobody takes are not even sent)."""
        if self.only:
            return subscription(self.only)
        if self.default is not None:
            return ["*"]
        return subscription([r.pattern for r in self.routes])
