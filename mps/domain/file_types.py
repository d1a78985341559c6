"""What an uploaded identity document is, judged by its content alone.

The name a client gives a file and the type it declares are claims anyone can write; the first
bytes are what a viewer will act on. So `detect` looks at the bytes only: puremagic's signature
table first, then the exact signature of the type it named, because puremagic alone accepts
things that are not such files (checked against puremagic 1.30):

- text that spells a signature out, such as the characters `\\377\\330\\377` or `\\x89PNG`, is
  "image/jpeg" or "image/png" to it;
- two bytes `FF D8` are "image/jpeg", and so is a JPEG 2000 file, which a JPEG decoder refuses;
- `%PDF` with nothing after it is "application/pdf".
"""

from __future__ import annotations

import puremagic

__all__ = ["ALLOWED", "EXTENSIONS", "HEAD_SIZE", "detect"]

# How much of the start of an upload `detect` wants; more is ignored, less may be too little.
HEAD_SIZE = 8 * 1024

EXTENSIONS = {"application/pdf": "pdf", "image/jpeg": "jpg", "image/png": "png"}
ALLOWED = frozenset(EXTENSIONS)

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _is_pdf(head: bytes) -> bool:
    # "%PDF-1.7", "%PDF-2.0": the header line names the version.
    return head.startswith(b"%PDF-") and head[5:7] in (b"1.", b"2.")


def _is_jpeg(head: bytes) -> bool:
    # Start of image, then the first marker: FF and a marker code (C0 to FE).
    return head.startswith(b"\xff\xd8\xff") and len(head) > 3 and 0xC0 <= head[3] <= 0xFE


def _is_png(head: bytes) -> bool:
    # The signature, then the IHDR chunk, which must come first and is 13 bytes long.
    return head.startswith(_PNG_SIGNATURE) and head[8:16] == b"\x00\x00\x00\x0dIHDR"


_EXACT = {"application/pdf": _is_pdf, "image/jpeg": _is_jpeg, "image/png": _is_png}


def detect(head: bytes) -> str | None:
    """The media type of a document that starts with `head` (`HEAD_SIZE` bytes, or the whole
    file if shorter): one of `ALLOWED`, or None for anything else, including empty, truncated
    or unrecognised bytes. Pure: no file name, no declared type."""
    head = head[:HEAD_SIZE]
    if not head:
        return None
    try:
        # No file name is passed: puremagic would let a name's extension decide a tie.
        matches = puremagic.magic_string(head)
    except puremagic.PureError:
        return None
    named = {str(match.mime_type) for match in matches} & ALLOWED
    # At most one of the exact checks can pass, since their signatures differ from byte 0.
    for media_type in sorted(named):
        if _EXACT[media_type](head):
            return media_type
    return None
