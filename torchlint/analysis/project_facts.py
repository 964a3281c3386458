"""What the analyses may learn from the other files of the project, and the answers' types.

The analyses (this package) ask a `ProjectFacts` for what an imported name is, what a function of
another file does in a training step, and which calls pass this file's functions tensors on the
GPU. `torchlint/project/` answers (`ProjectView`) from summaries of those files, which it builds
with this package's vocabulary: so the imports go one way, from `project/` to `analysis/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Note:
    """One link of an evidence chain: a place in another (or this) file and what holds there."""

    path: str
    row: int
    column: int
    message: str


@dataclass(frozen=True)
class StepEvent:
    """A training-step event of a project function, in its file: `kind` is one of summary.py's
    event names. A mode switch (`net.eval()`) of the asked function itself names the parameter
    that holds the module: its position (the instance counted, for a method) and name. A switch
    of anything else, or deeper in the calls, has none and concerns no module of the caller."""

    kind: str
    note: Note
    parameter: tuple[int, str] | None = None
    # The flags of the asked function the event needs (`if not is_training: model.eval()`): a
    # parameter's position (None: keyword-only), name, the value needed and its default, if any.
    # A call that passes, or defaults to, the other value never reaches the event.
    flags: tuple[tuple[int | None, str, bool, bool | None], ...] = ()


@dataclass(frozen=True)
class CallSite:
    """A call of one of the file's functions somewhere in the project: the parameters it passes
    (None: it unpacks `*args` or `**options`, so it may pass any), and where it is."""

    passed: frozenset[str] | None
    note: Note


@dataclass(frozen=True)
class Fact:
    kind: str
    name: str  # the defining name (`Net`, `causal_mask`)
    notes: tuple[Note, ...] = ()
    value: object = None  # a constant's value
    # A function's module file and name, where its training-step events are read (`ProjectView.events`).
    definition: tuple[str, str] | None = None
    # A Module class whose `forward` ends in an activation: "softmax" or "sigmoid", and where.
    output: tuple[str, Note] | None = None

    @property
    def builds_module(self) -> bool:
        """Calling it gives an `nn.Module`: a Module class, or a function returning one."""
        return self.kind in ("module class", "module")


class ProjectFacts(Protocol):
    """The project as seen from the checked file (see `torchlint/project/index.py`)."""

    def inside(self) -> str | None:
        """The checked file's path inside its project (`tests/helpers.py`); None without one."""

    def lookup(self, qualified: str) -> Fact | None:
        """What the imported name `qualified` (as the import table writes it) is in the project; for
        `Class.name`, a method of the class or its bases, or an "attribute" its `__init__` sets."""

    def events(self, qualified: str) -> tuple[StepEvent, ...]:
        """The training-step events of an imported function, through the project functions it calls."""

    def placed_by_callers(self, function: str) -> dict[str, Note]:
        """The parameters of the file's top-level `function` that a call in the project passes a
        tensor on the GPU, with that call."""

    def calls(self, function: str) -> tuple[CallSite, ...]:
        """The calls of the file's top-level `function` in the project (this file included)."""

    def grad_modes(self, function: str) -> tuple[bool, ...]:
        """Whether autograd is off at each call of `function` in the other files of the project."""

    def importer(self) -> Note | None:
        """A file of the project that imports the checked one."""

    def lookalike_models(self) -> dict[str, Note]:
        """The project's classes named like modules that define `forward` but are not Modules."""
