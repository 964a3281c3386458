"""Give a fix's replacement text the indentation of the code it replaces.

Rules build replacement text with `ctx.code_for(edited_node)`. libcst prints the continuation
lines of a node (arguments on their own lines) relative to the enclosing block's indentation,
which a detached node does not know: a call written at 8 spaces comes out at 0. This module
finds the indentation that the original node lost the same way, by comparing its printed form
with its text in the file, and adds it to the replacement. When the two do not differ by one
indentation prefix on every continuation line (a multi-line string inside, for example), the
text is left as the rule wrote it.
"""

from __future__ import annotations


def reindent(replacement: str, printed_original: str, original: str) -> str:
    """`replacement` with the indentation that `printed_original` lacks compared to `original`."""
    if "\n" not in replacement or printed_original == original or "\n" not in original:
        return replacement
    printed_lines = printed_original.split("\n")
    original_lines = original.split("\n")
    if len(printed_lines) != len(original_lines):
        return replacement
    second_printed, second_original = printed_lines[1], original_lines[1]
    if not second_original.endswith(second_printed):
        return replacement
    indent = second_original[: len(second_original) - len(second_printed)]
    if indent.strip() or printed_original.replace("\n", "\n" + indent) != original:
        return replacement
    return replacement.replace("\n", "\n" + indent)


def source_span(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The text between two 1-based (row, 0-based column) positions of a file split into lines."""
    (start_row, start_column), (end_row, end_column) = start, end
    if start_row == end_row:
        return lines[start_row - 1][start_column:end_column]
    parts = [lines[start_row - 1][start_column:]]
    parts.extend(lines[start_row:end_row - 1])
    parts.append(lines[end_row - 1][:end_column])
    return "\n".join(parts)
