"""The data every stage passes along: findings, their locations and their fixes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum


class Severity(str, Enum):
    """How bad a finding is. A note is advice about code that works (a performance hint, a
    precision loss): shown, but it fails a run only under `fail-on = "note"`. A hint is a newer or
    more exact spelling of code that works as intended in most code (`torch.tensor([1.0, 2.0])` for
    `torch.Tensor([1, 2])`, `torch.log1p(x)` for `log(1 + x)`): shown only under
    `show-hints = true`, as few readers of such code would change it."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    HINT = "hint"

    def at_least(self, threshold: Severity) -> bool:
        return _RANKS[self] >= _RANKS[threshold]


_RANKS = {Severity.HINT: -1, Severity.NOTE: 0, Severity.WARNING: 1, Severity.ERROR: 2}


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Location:
    """A 1-based row and 1-based column (in characters)."""

    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between `location` and `end_location` (exclusive) by `content`."""

    content: str
    location: Location
    end_location: Location


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Related:
    """Another place a finding rests on (where a value was made, the other layer of a pair),
    shown as a `= note:` under the finding; in this file or in another one of the project."""

    message: str
    filename: str
    location: Location
    end_location: Location
    cell: int | None = None


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    severity: Severity
    fix: Fix | None = None
    noqa_row: int | None = None
    cell: int | None = None
    # `confirmed`, `refuted` or `not-reached` once `--runtime` has judged the finding.
    runtime: str | None = None
    # Extra words from runtime mode (what was observed), shown after the message.
    runtime_detail: str | None = field(default=None, compare=False)
    related: tuple[Related, ...] = ()

    def sort_key(self) -> tuple:
        # A notebook's findings go cell by cell (rows count within a cell); 0 for other files.
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)

    def with_runtime(self, verdict: str, detail: str | None = None) -> "Diagnostic":
        return replace(self, runtime=verdict, runtime_detail=detail)
