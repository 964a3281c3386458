"""`# noqa` comments: per line, and `# torchlint: noqa` for a whole file."""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?", re.I)
_FILE_NOQA = re.compile(
    r"^\s*#\s*torchlint:\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?\s*$", re.I | re.M
)


def _split_codes(text: str) -> frozenset[str]:
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


@dataclass(frozen=True)
class FileExemption:
    whole_file: bool
    codes: frozenset[str]


def file_exemption(source: str) -> FileExemption:
    """What `# torchlint: noqa[: CODES]` lines (on their own line) exempt in this file."""
    whole, codes = False, set()
    if "torchlint" not in source:
        return FileExemption(False, frozenset())
    for match in _FILE_NOQA.finditer(source):
        if match.group("codes"):
            codes |= _split_codes(match.group("codes"))
        else:
            whole = True
    return FileExemption(whole, frozenset(codes))


def line_suppresses(line: str, code: str) -> bool:
    """Does a `# noqa` comment on this line suppress `code`?"""
    if "#" not in line:
        return False
    for match in _LINE_NOQA.finditer(line):
        if match.group("codes") is None or code in _split_codes(match.group("codes")):
            return True
    return False
