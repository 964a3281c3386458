"""Where each cell's source sits in a notebook's JSON text, and that text with some sources
replaced: every byte outside the replaced sources stays as it was (indentation, key order,
escapes, trailing newline, `nbformat` version, outputs and metadata)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class SourceSpan:
    """A cell's `source` value in the JSON text: its offsets and, for a list of lines, where each
    line's string starts."""

    start: int
    end: int
    line_starts: tuple[int, ...]  # empty when the source is one string


def _skip_space(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()


def _members(text: str, position: int):
    """(key, value start, value end) of the JSON object starting at `position`."""
    position = _skip_space(text, position + 1)
    while text[position] != "}":
        key, position = scanstring(text, position + 1)
        position = _skip_space(text, _skip_space(text, position) + 1)  # past the colon
        _, end = _DECODER.raw_decode(text, position)
        yield key, position, end
        position = _skip_space(text, end)
        if text[position] == ",":
            position = _skip_space(text, position + 1)


def _items(text: str, position: int):
    """(start, end) of each value of the JSON array starting at `position`."""
    position = _skip_space(text, position + 1)
    while text[position] != "]":
        _, end = _DECODER.raw_decode(text, position)
        yield position, end
        position = _skip_space(text, end)
        if text[position] == ",":
            position = _skip_space(text, position + 1)


def _value(text: str, position: int, step: str | int) -> tuple[int, int] | None:
    """The span of member `step` (a key, or an index) of the value at `position`."""
    if isinstance(step, int):
        spans = list(_items(text, position)) if text[position] == "[" else []
        return spans[step] if step < len(spans) else None
    if text[position] != "{":
        return None
    return next(((start, end) for key, start, end in _members(text, position) if key == step), None)


def source_spans(text: str, cells_path: tuple[str | int, ...], source_key: str) -> list[SourceSpan | None]:
    """The span of each cell's source (None for a cell without one), in the cells' order."""
    position = _skip_space(text, 0)
    for step in cells_path:
        span = _value(text, position, step)
        if span is None:
            return []
        position = span[0]
    spans: list[SourceSpan | None] = []
    for cell_start, _ in _items(text, position):
        found = _value(text, cell_start, source_key)
        if found is None:
            spans.append(None)
            continue
        start, end = found
        lines = tuple(item for item, _ in _items(text, start)) if text[start] == "[" else ()
        spans.append(SourceSpan(start, end, lines))
    return spans


def _layout(text: str, span: SourceSpan) -> tuple[str, str, str]:
    """What a source list has after its opening bracket, between two lines, before its closing
    bracket."""
    starts = span.line_starts
    opening = text[span.start + 1: starts[0]] if starts else ""
    if len(starts) > 1:
        separator = text[_DECODER.raw_decode(text, starts[0])[1]: starts[1]]
    else:
        separator = "," + (opening or " ")
    closing_at = text.rindex("]", span.start, span.end)
    closing = text[_DECODER.raw_decode(text, starts[-1])[1]: closing_at] if starts else ""
    return opening, separator, closing


def render_source(text: str, span: SourceSpan, source: str) -> str:
    """`source` written as the span's value was: a list of lines (split as nbformat splits them,
    laid out like the original list) or one string, escaped as the rest of the file is."""
    ascii_only = text.isascii()
    if text[span.start] != "[":
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source.splitlines(keepends=True)
    if not lines:
        return "[]"
    opening, separator, closing = _layout(text, span)
    return "[" + opening + separator.join(json.dumps(line, ensure_ascii=ascii_only) for line in lines) + closing + "]"


def replace_sources(text: str, spans: list[SourceSpan | None], sources: dict[int, str]) -> str:
    """The JSON text with the source of each cell index in `sources` replaced."""
    pieces, position = [], 0
    for index in sorted(sources):
        span = spans[index]
        pieces += [text[position:span.start], render_source(text, span, sources[index])]
        position = span.end
    return "".join(pieces) + text[position:]


def row_of(text: str, offset: int) -> int:
    """The 1-based row of an offset in the JSON text."""
    return text.count("\n", 0, offset) + 1
