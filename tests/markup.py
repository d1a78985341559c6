"""Reading a rendered page in the tests of the hosted pages: its start tags with their
attributes, the text of its scripts, and an element by id."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class Tags(HTMLParser):
    """Every start tag of a page with its attributes (`tags`), and the text of each script
    (`scripts`)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def parse(html: str) -> Tags:
    parser = Tags()
    parser.feed(html)
    parser.close()
    return parser


def attributes(html: str, element_id: str) -> dict[str, str | None]:
    """The attributes of the one element with that id."""
    found = [attrs for _, attrs in parse(html).tags if attrs.get("id") == element_id]
    assert len(found) == 1, f"{len(found)} elements #{element_id}"
    return found[0]


def inside(html: str, element_id: str) -> str:
    """The markup inside the element with that id (elements holding no nested element of the
    same name)."""
    match = re.search(rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>', html, re.DOTALL)
    assert match is not None, f"no element #{element_id}"
    return match[2]
