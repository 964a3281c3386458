"""Reading a file into text the way Python would: BOM and PEP 263 coding cookies honoured."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

# Python's line breaks. `str.splitlines` also breaks at \f, \v, \x1c-\x1e, \x85 and \u2028,
# which would shift every row after one of them away from the rows Python and libcst count.
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_rows(text: str) -> list[str]:
    """The text of each row, as Python counts rows (row N is `source_rows(text)[N - 1]`)."""
    return LINE_BREAK.split(text)


class UnreadableFile(Exception):
    """The file cannot be checked; the message says why in a few words."""


@dataclass(frozen=True)
class SourceFile:
    text: str
    encoding: str  # as detected, e.g. "utf-8", "utf-8-sig" (BOM), "latin-1"


def decode_source(data: bytes) -> SourceFile:
    if b"\0" in data:
        raise UnreadableFile("binary content (NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise UnreadableFile(str(error.msg if hasattr(error, "msg") else error)) from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise UnreadableFile(f"cannot decode as {encoding}: {error.reason if hasattr(error, 'reason') else error}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(text, encoding)


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None


def read_source(path: str) -> SourceFile:
    return decode_source(read_bytes(path))
