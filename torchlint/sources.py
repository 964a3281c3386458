"""Reading a file into text the way Python would: BOM and PEP 263 coding cookies honoured."""

from __future__ import annotations

import io
import os
import re
import stat
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


# Bytes of the largest file checked: beyond this a file is reported, not read (the native parser
# needs gigabytes of memory for a few megabytes of code). Notebooks hold outputs besides code.
MAX_SOURCE_BYTES = 4_000_000
MAX_NOTEBOOK_BYTES = 50_000_000


# Bytes of the largest configuration, ignore, requirements or metadata file read: such files are
# a few kilobytes, and a repository must not make torchlint read a device or a huge file.
MAX_AUXILIARY_BYTES = 1_000_000


def read_bytes(path: str) -> bytes:
    """The bytes of a source file or notebook to check (see `read_regular_file`)."""
    return read_regular_file(path, MAX_NOTEBOOK_BYTES if path.endswith(".ipynb") else MAX_SOURCE_BYTES)


def read_auxiliary(path: str | os.PathLike) -> bytes | None:
    """The bytes of a file torchlint reads besides the checked ones (`.gitignore`, a
    requirements file, package metadata), or None when it is missing, not a regular file, or
    larger than `MAX_AUXILIARY_BYTES`."""
    try:
        return read_regular_file(os.fspath(path), MAX_AUXILIARY_BYTES)
    except UnreadableFile:
        return None


def read_regular_file(path: str, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. A FIFO or a device (a symlink can
    name one) is refused without reading it: opening does not wait for a writer, and nothing is
    read from it."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as error:
        raise UnreadableFile(error.strerror or str(error)) from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file")
        if info.st_size > limit:
            raise UnreadableFile(f"too large to check ({info.st_size / 1e6:.1f} MB; the limit is {limit / 1e6:g} MB)")
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise UnreadableFile(error.strerror or str(error)) from None
    if len(data) > limit:  # grew while being read
        raise UnreadableFile(f"too large to check (the limit is {limit / 1e6:g} MB)")
    return data


def read_source(path: str) -> SourceFile:
    return decode_source(read_bytes(path))
