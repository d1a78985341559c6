"""Pages are files: the HTML templates under `templates/` and the styles and scripts under
`static/` of this package, and the one way Python fills a template in.

A template file holds named blocks, each starting at a line `<!-- block NAME -->` (text before
the first one is the file's own comment). A block is written as a `string.Template`: `$name` is
filled in, `$$` is a dollar sign. `fill` escapes every value for HTML (`html.escape`, quotes too),
except a value that is already `Markup`: a filled block, or a style or script file of this
package. Nothing from a request or the database is ever `Markup`, so nothing from data reaches a
page unescaped.

Escaping makes a value safe between tags and inside a quoted attribute (`data-status="$status"`),
and only there: it leaves spaces, `=` and backticks alone, so in an unquoted attribute
(`data-status=$status`) a value could end the attribute and add its own (`x onclick=...`). Where
each placeholder stands is therefore read when its block is loaded:

- between tags, or inside a quoted attribute value: any value, escaped;
- an unquoted attribute value: refused, the template does not load (`ValueError`);
- inside a tag but not as a value (`<main $main>`, attributes built by another block), or inside
  a `<script>` or `<style>` element: only `Markup`, since no escaping makes text safe there
  (`fill` raises `TypeError` for anything else).

A block may be a tag's attributes (`class="invoice" data-status="$status"`), put in with
`<main $main>`: it is read as text between tags, where an unquoted value still shows as a
placeholder straight after `name=`, and refused as well.

Files are read once, on first use, and kept: they are part of the release, never changed while
the process runs. Each block is split into its literal text and placeholders then, so that
filling one is a join, with no pattern matched per request. Nothing here holds a request, a
connection or an event loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from html import escape
from importlib.resources import files
from string import Template

__all__ = ["Block", "Markup", "fill", "hosted_page", "inline_code", "read_blocks"]

_BLOCK = re.compile(r"^<!-- block ([a-z_]+) -->\n", re.MULTILINE)
# What would end an inline <script> or <style> early, or open a comment the parser then hides
# the rest of the block in.
_ENDS_INLINE = re.compile(r"</(script|style)|<!--", re.IGNORECASE)

# Where the reading of a block stands (`_places`): text between tags, a comment, inside a tag,
# inside a quoted attribute value, inside a script or style element.
_TEXT, _COMMENT, _TAG, _QUOTED, _CODE = "text", "comment", "tag", "quoted", "code"
# A comment's start, or a tag's (`<a`, `</a`, `<!doctype`): a closing tag's `/` and an element's
# name are groups 1 and 2.
_OPENS = re.compile(r"<!--|<(/?)([a-zA-Z][a-zA-Z0-9-]*)|<!")
# What ends a tag, or opens one of its quoted values.
_TAG_STOPS = re.compile(r"[>\"']")
# Elements whose content the browser reads as code, up to their end tag, never as markup.
_CODE_ELEMENTS = ("script", "style")
# An attribute's name and `=` just before a placeholder: its unquoted value. Inside a tag, spaces
# may stand around `=`; in text (a block of attributes) only the name and `=` themselves count.
_UNQUOTED_IN_TAG = re.compile(r"=\s*$")
_UNQUOTED_IN_TEXT = re.compile(r"[\w:-]=$")


class Markup(str):
    """Text that is HTML already, built by this package; `fill` puts it in as it is."""

    __slots__ = ()


@dataclass(frozen=True)
class Block:
    """A block as its literal text around its placeholders: `texts` has one more item than
    `names`, and the block is texts[0] + value of names[0] + texts[1] + ..."""

    texts: tuple[str, ...]
    names: tuple[str, ...]
    # The same names as a set, to check a fill's values against in one comparison.
    wanted: frozenset[str]
    # The names standing where only `Markup` may go: in a tag, or in a script or style element.
    markup_only: frozenset[str]


def _read(path: str) -> str:
    return files(__package__).joinpath(path).read_text(encoding="utf-8")


def _split(text: str, where: str) -> Block:
    """`text` read as `string.Template` reads it: `$name` or `${name}` a placeholder, `$$` a
    dollar sign; any other `$` is a mistake in the file."""
    texts, names, literal = [], [], []
    last = 0
    for match in Template.pattern.finditer(text):
        literal.append(text[last : match.start()])
        last = match.end()
        if match["escaped"] is not None:
            literal.append("$")
        elif match["invalid"] is not None:
            raise ValueError(f"{where}: a '$' that names no placeholder (write $$)")
        else:
            texts.append("".join(literal))
            literal = []
            names.append(match["named"] or match["braced"])
    literal.append(text[last:])
    texts.append("".join(literal))
    markup_only = set()
    for name, place in zip(names, _places(texts, names, where), strict=True):
        if place in (_TAG, _CODE):
            markup_only.add(name)
    return Block(tuple(texts), tuple(names), frozenset(names), frozenset(markup_only))


def _places(texts: list[str], names: list[str], where: str) -> list[str]:
    """Where each of `names`, the placeholders between `texts`, stands, reading the block as a
    browser would, from text between tags. Raises ValueError for a placeholder that is an
    unquoted attribute value.

    A placeholder is taken to leave the state as it was (a block put in a tag holds attributes,
    one put between tags holds whole elements), which is what every block here is written for."""
    places = []
    state, quote, code = _TEXT, "", ""
    for index, text in enumerate(texts):
        position = 0
        while position < len(text):
            if state == _TEXT:
                opens = _OPENS.search(text, position)
                if opens is None:
                    break
                if opens[0] == "<!--":
                    state, position = _COMMENT, opens.end()
                    continue
                element = (opens[2] or "").lower() if not opens[1] else ""
                code = element if element in _CODE_ELEMENTS else ""
                state, position = _TAG, opens.end()
            elif state == _COMMENT:
                end = text.find("-->", position)
                if end < 0:
                    break
                state, position = _TEXT, end + 3
            elif state == _TAG:
                stop = _TAG_STOPS.search(text, position)
                if stop is None:
                    break
                if stop[0] == ">":
                    state = _CODE if code else _TEXT
                else:
                    state, quote = _QUOTED, stop[0]
                position = stop.end()
            elif state == _QUOTED:
                end = text.find(quote, position)
                if end < 0:
                    break
                state, position = _TAG, end + 1
            else:  # _CODE: up to its own end tag, whatever it holds before
                end = text.lower().find(f"</{code}", position)
                if end < 0:
                    break
                state, position = _TEXT, end
        if index == len(texts) - 1:
            break
        unquoted = {_TAG: _UNQUOTED_IN_TAG, _TEXT: _UNQUOTED_IN_TEXT}.get(state)
        if unquoted is not None and unquoted.search(text):
            raise ValueError(f"{where}: ${names[index]} is an unquoted attribute value: quote it")
        places.append(state)
    return places


def read_blocks(text: str, where: str) -> dict[str, Block]:
    """The blocks of the template file `where` whose text is `text`, by name. Raises ValueError
    for a placeholder that is an unquoted attribute value, or a `$` that names no placeholder:
    a template with either never loads, so it is caught by the first page that uses it."""
    parts = _BLOCK.split(text)
    # parts: [preamble, name1, text1, name2, text2, ...]; a block's last newline is the file's
    # layout, not the page's.
    return {
        parts[i]: _split(parts[i + 1].removesuffix("\n"), f"{where} {parts[i]}")
        for i in range(1, len(parts), 2)
    }


@cache
def _blocks(template: str) -> dict[str, Block]:
    return read_blocks(_read(f"templates/{template}.html"), f"{template}.html")


def fill(template: str, name: str, /, **values: str) -> Markup:
    """Block `name` of `templates/{template}.html` with every `$value` filled in, escaped unless
    it is `Markup`. A placeholder without a value, or a value without a placeholder, raises
    KeyError (a page never shows `$x`, and never silently drops what it was given); text that is
    not `Markup` for a placeholder inside a tag or a script or style element raises TypeError."""
    block = _blocks(template)[name]
    if values.keys() != block.wanted:
        missing = block.wanted - values.keys()
        extra = values.keys() - block.wanted
        raise KeyError(f"{template}.html {name}: missing {sorted(missing)}, extra {sorted(extra)}")
    for placeholder in block.markup_only:
        if not isinstance(values[placeholder], Markup):
            raise TypeError(
                f"{template}.html {name}: ${placeholder} stands in a tag or a script or style "
                "element, where only markup this package built may go"
            )
    parts = [block.texts[0]]
    for placeholder, text in zip(block.names, block.texts[1:], strict=True):
        value = values[placeholder]
        parts.append(value if isinstance(value, Markup) else escape(value, quote=True))
        parts.append(text)
    return Markup("".join(parts))


@cache
def inline_code(path: str) -> Markup:
    """The style or script file `static/{path}`, to put inside a `<style>` or `<script>` element
    as it is. Refused when it holds what would end that element early: it is our code, so that
    is a bug to catch at the first render, not markup to escape."""
    text = _read(f"static/{path}")
    if _ENDS_INLINE.search(text):
        raise ValueError(f"static/{path} holds '</script', '</style' or '<!--'")
    return Markup(text)


def hosted_page(template: str, title: str, content: Markup, nonce: str, **blocks: Markup) -> str:
    """Block `page` of `templates/{template}.html`: `content` and any other `blocks` under
    `title`, styled by `static/css/{template}.css` in the element that carries the request's
    Content Security Policy `nonce`."""
    style = inline_code(f"css/{template}.css")
    return fill(template, "page", title=title, nonce=nonce, style=style, content=content, **blocks)
