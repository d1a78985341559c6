"""Telling identity documents apart by content (mps.domain.file_types), from real files' bytes."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import pytest
from PIL import Image  # comes with fpdf2

from mps.domain.file_types import ALLOWED, EXTENSIONS, HEAD_SIZE, detect

PDF = (
    b"%PDF-1.4\n"
    b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
    b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >> endobj\n"
    b"trailer << /Root 1 0 R >>\n%%EOF\n"
)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(*extra_chunks: bytes) -> bytes:
    """A 1x1 grey PNG, built chunk by chunk, with `extra_chunks` after its header."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + b"".join(extra_chunks)
        + _chunk(b"IDAT", zlib.compress(b"\x00\x80"))
        + _chunk(b"IEND", b"")
    )


def _jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 30, 30)).save(out, "JPEG")
    return out.getvalue()


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("passport.pdf", PDF)
    return out.getvalue()


def test_the_sample_images_are_real_images() -> None:
    # The detector is tested on files a decoder accepts, not on bytes that merely look right.
    for sample, kind in (
        (_png(), "PNG"),
        (_png(_chunk(b"tEXt", b"a\x00b")), "PNG"),
        (_jpeg(), "JPEG"),
    ):
        with Image.open(io.BytesIO(sample)) as image:
            image.load()
            assert image.format == kind


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        (PDF, "application/pdf"),
        (_png(), "image/png"),
        (_jpeg(), "image/jpeg"),
    ],
    ids=["pdf", "png", "jpeg"],
)
def test_detect_names_a_document_by_its_content(sample: bytes, expected: str) -> None:
    assert detect(sample) == expected
    assert detect(sample[:HEAD_SIZE]) == expected


def test_detect_reads_only_the_head_when_given_more() -> None:
    assert detect(_png() + b"\x00" * (2 * HEAD_SIZE)) == "image/png"


def test_detect_names_a_png_a_png_when_it_claims_to_be_a_pdf() -> None:
    # given a PNG uploaded as "passport.pdf" that says so in a text chunk: detect takes no
    # name, and the bytes it reads start as a PNG's do
    sample = _png(_chunk(b"tEXt", b"Title\x00passport.pdf %PDF-1.4"))

    assert detect(sample) == "image/png"


@pytest.mark.parametrize(
    "sample",
    [
        b"#!/bin/sh\nrm -rf /\n",
        b"Passport number 123456789\n",
        b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>",
        b"<html><body>%PDF-1.4</body></html>",
        b"",
        _zip(),
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
    ],
    ids=["shell_script", "plain_text", "html", "html_quoting_a_pdf", "empty", "zip", "gif"],
)
def test_detect_returns_none_when_the_content_is_not_an_allowed_document(sample: bytes) -> None:
    assert detect(sample) is None


@pytest.mark.parametrize(
    "sample",
    [
        b"\x89PNG",
        b"\x89PNG\r\n\x1a\n",
        b"\xff\xd8",
        b"\xff\xd8\xff",
        b"%PDF",
        b"%PD",
        b"\x00\x01\x02\x03" * 64,
    ],
    ids=[
        "png_4_bytes",
        "png_signature_only",
        "jpeg_2_bytes",
        "jpeg_3_bytes",
        "pdf_4",
        "pdf_3",
        "noise",
    ],
)
def test_detect_returns_none_when_the_head_is_truncated_or_garbage(sample: bytes) -> None:
    assert detect(sample) is None


@pytest.mark.parametrize(
    "sample",
    [b"\\377\\330\\377 looks like a JPEG to puremagic", b"\\x89PNG looks like a PNG to puremagic"],
    ids=["jpeg_spelled_out", "png_spelled_out"],
)
def test_detect_returns_none_when_text_spells_a_signature_out(sample: bytes) -> None:
    # puremagic's own table calls these images; the exact check after it does not.
    assert detect(sample) is None


def test_detect_returns_none_for_jpeg_2000_which_puremagic_calls_image_jpeg() -> None:
    jpeg2000 = b"\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00\x00\x14ftypjp2 " + b"\x00" * 64

    assert detect(jpeg2000) is None


def test_every_allowed_type_has_an_extension() -> None:
    assert set(EXTENSIONS) == ALLOWED == {"application/pdf", "image/jpeg", "image/png"}
    assert EXTENSIONS["image/png"] == "png"
