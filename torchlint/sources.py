"""Reading a file into text the way Python would: BOM and PEP 263 coding cookies honoured."""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass


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
