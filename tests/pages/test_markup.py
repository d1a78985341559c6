"""How a template's placeholders may be filled (mps.http.pages.markup): escaped text only where
escaping makes it safe, between tags and inside quoted attribute values; an unquoted attribute
value refused when the template loads; markup the package built, and nothing else, inside a tag
or a script or style element."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mps
from mps.http.pages.markup import Markup, fill, inline_code, read_blocks

TEMPLATES = Path(mps.__file__).resolve().parent / "http" / "pages" / "templates"


@pytest.mark.parametrize(
    "block",
    [
        "<div data-status=$status>x</div>",
        "<style nonce=$nonce>$style</style>",
        "<a class=\"x\" href = $url id='y'>link</a>",
        '<input name="email"\n       value=$email>',
        "<div title=${title}></div>",
        # a block of attributes, put into a tag elsewhere
        'class="invoice" data-status=$status',
    ],
)
def test_a_placeholder_in_an_unquoted_attribute_value_is_refused_when_the_template_loads(
    block: str,
) -> None:
    # given a template whose block puts a value where html.escape leaves it able to end the
    # attribute (it keeps spaces, `=` and backticks) and add its own
    text = f"<!-- a template -->\n<!-- block one -->\n{block}\n"

    # when it loads, then it is refused, naming the file, the block and the placeholder
    with pytest.raises(ValueError, match=r"page\.html one: \$\w+ is an unquoted attribute value"):
        read_blocks(text, "page.html")


def test_a_value_in_a_tag_or_in_code_is_markup_only_and_any_other_placed_value_loads() -> None:
    # given a block with a value in each place a template may hold one
    text = (
        "<!-- block one -->\n"
        "<p title=\"$title\" data-x='$x'>$text = $more</p><main $attributes>"
        '<style nonce="$nonce">$style</style><script>$script</script>$after\n'
        "<!-- block attributes -->\n"
        'class="invoice" data-status="$status"\n'
    )

    # when it loads
    blocks = read_blocks(text, "page.html")

    # then it loads, and only the attributes slot and the style and script take markup alone
    assert blocks["one"].markup_only == {"attributes", "style", "script"}
    assert blocks["attributes"].markup_only == frozenset()


def test_text_for_a_placeholder_inside_a_tag_or_a_style_element_is_refused() -> None:
    # given the invoice page, whose <main> takes a block of attributes and whose <style> a file
    values = {
        "title": "Invoice",
        "nonce": "n0nce",
        "style": inline_code("css/invoice.css"),
        "main": fill("invoice", "invoice_main", status="PAID"),
        "content": Markup(),
    }
    page = fill("invoice", "page", **values)

    # when text from data stands where markup goes, then it is refused, never escaped and put in
    with pytest.raises(TypeError, match=r"\$main stands in a tag"):
        fill("invoice", "page", **{**values, "main": "onmouseover=alert(1)"})
    with pytest.raises(TypeError, match=r"\$style stands in a tag or a script or style"):
        fill("invoice", "page", **{**values, "style": "body{background:url(x)}"})
    assert '<main class="invoice" id="invoice" data-status="PAID">' in page


def test_every_template_loads_with_every_attribute_value_quoted() -> None:
    # given every template of the pages
    paths = sorted(TEMPLATES.glob("*.html"))
    assert {path.stem for path in paths} >= {"checkout", "invoice", "invitation", "explorer"}

    for path in paths:
        text = path.read_text(encoding="utf-8")
        # when it is read as the pages read it, then it loads (no unquoted placeholder)
        read_blocks(text, path.name)
        # and its literal attribute values are quoted too, as the ones holding a value must be
        _, _, blocks = text.partition("<!-- block ")
        for tag in re.findall(r"<[a-zA-Z][^>]*>", blocks):
            unquoted = re.search(r"""=\s*[^\s"'$]""", re.sub(r'"[^"]*"|\'[^\']*\'', '""', tag))
            assert unquoted is None, f"{path.name}: {tag}"
