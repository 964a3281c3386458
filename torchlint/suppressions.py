"""`# noqa` comments, read from the tokenizer's comments only: a `# noqa` inside a string, an
f-string or a docstring is text, never a suppression.

Forms: `# noqa` / `# noqa: TL101, TL102` at the end of a row (that row only), and
`# torchlint: noqa` / `# torchlint: noqa: TL101` on a row of its own, at column 0 (the whole
file; indented, inside a function, it is no directive).

Where a finding's noqa is read (as ruff does): on the row where the finding starts, except when
that row cannot hold a comment, inside a multi-line string or before a backslash continuation;
then on the row where that string or continued line ends.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_CODES = r"[A-Za-z]+\d[A-Za-z\d]*(?:(?:\s*,\s*|\s+)[A-Za-z]+\d[A-Za-z\d]*)*"
_LINE_DIRECTIVE = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.I)
_FILE_DIRECTIVE = re.compile(rf"#\s*torchlint:\s*noqa(?::\s*(?P<codes>{_CODES}))?\s*$", re.I)
# Text that may hold a file-level noqa or a line noqa naming TL codes: only such files are
# tokenized before their check (the others only when they have findings).
_MAY_MATTER = re.compile(r"torchlint:\s*noqa|noqa\s*:[^\n]*TL", re.I)
# Tokens that carry no code: they neither end a continued row nor start one.
_LAYOUT = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})


def split_codes(text: str) -> tuple[str, ...]:
    return tuple(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


@dataclass(frozen=True)
class Directive:
    """One `# noqa[: CODES]` in a comment; columns are 0-based character offsets in its row."""

    row: int
    start: int
    end: int
    codes: tuple[str, ...] | None  # None: a blanket `# noqa`
    codes_start: int = 0
    # The comment that holds it: where it starts and ends in the row.
    comment_start: int = 0
    comment_end: int = 0

    def suppresses(self, code: str) -> bool:
        return self.codes is None or code in self.codes


@dataclass(frozen=True)
class Suppressions:
    directives: dict[int, tuple[Directive, ...]] = field(default_factory=dict)
    whole_file: bool = False
    file_codes: frozenset[str] = frozenset()
    # Rows that continue into the next one (inside a multi-line string, or ending in `\`).
    continued_rows: frozenset[int] = frozenset()

    def noqa_row(self, row: int) -> int:
        """The row whose `# noqa` applies to a finding that starts on `row`."""
        while row in self.continued_rows:
            row += 1
        return row

    def suppresses(self, row: int, code: str) -> bool:
        """Does a `# noqa` on `row` (a noqa row) suppress `code`?"""
        return any(directive.suppresses(code) for directive in self.directives.get(row, ()))


NO_SUPPRESSIONS = Suppressions()


def may_hold_torchlint_noqa(source: str) -> bool:
    """A cheap test before tokenizing: can the text hold a file-level noqa or a noqa naming a
    TL code? (A blanket or foreign `# noqa` matters only on a row with a finding.)"""
    # The case-insensitive search tries a match at every character; a plain substring test
    # first rules out most files several times faster.
    if "noqa" not in source.lower():
        return False
    return _MAY_MATTER.search(source) is not None


def comment_suppresses(comment: str, code: str) -> bool:
    """Does a `# noqa` in this comment's text suppress `code`?"""
    return any(
        match.group("codes") is None or code in split_codes(match.group("codes"))
        for match in _LINE_DIRECTIVE.finditer(comment)
    )


def _comment_directives(token: tokenize.TokenInfo) -> tuple[Directive, ...]:
    row, column = token.start
    return tuple(
        Directive(
            row, column + match.start(), column + match.end(),
            split_codes(match.group("codes")) if match.group("codes") else None,
            column + (match.start("codes") if match.group("codes") else match.end()),
            column, column + len(token.string),
        )
        for match in _LINE_DIRECTIVE.finditer(token.string)
    )


def read_suppressions(source: str) -> Suppressions:
    """Every noqa comment of a file that parses, and the rows where noqa cannot be written.
    Text the tokenizer rejects (libcst accepts a little more) yields no suppressions."""
    directives: dict[int, tuple[Directive, ...]] = {}
    whole_file, file_codes, continued = False, set(), set()
    last_row, after_code = 0, False  # the end row of the last code token; no line break since
    try:
        # Universal newlines: a file whose rows end in a lone \r has rows, as it does for the parser.
        for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            kind, (start_row, column), (end_row, _) = token.type, token.start, token.end
            if kind == tokenize.COMMENT:
                file_match = _FILE_DIRECTIVE.match(token.string)
                if file_match and column == 0:  # at column 0, as ruff reads its own
                    whole_file |= file_match.group("codes") is None
                    file_codes.update(split_codes(file_match.group("codes") or ""))
                elif found := _comment_directives(token):
                    directives[start_row] = directives.get(start_row, ()) + found
            if kind in _LAYOUT or kind == tokenize.ENDMARKER:
                after_code = after_code and kind in (tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
                continue
            if after_code and start_row > last_row:
                continued.update(range(last_row, start_row))  # rows joined by `\`
            continued.update(range(start_row, end_row))  # a token over several rows: a string
            last_row, after_code = end_row, True
    except (tokenize.TokenError, SyntaxError):
        return NO_SUPPRESSIONS
    return Suppressions(directives, whole_file, frozenset(file_codes), frozenset(continued))
