"""What the names a file imports from its own project are, asked via `ctx.project`.

    fact = ctx.project.lookup("model.Net")          # a `Fact`, or None (not the project's, unknown)
    fact.kind                                        # "module class", "module", "tensor", "optimizer",
                                                     # "scheduler", "scaler", "function", "class", "constant",
                                                     # "attribute" (`Class.name` set by its `__init__`)
    fact.notes                                       # where it came from: (path, row, message) links
    ctx.project.dependencies()                       # {path: state} of every file and listing consulted

The analyses ask with the name as the file's import table writes it (`model.Net`,
`.utils.causal_mask`), at the point where they would otherwise give up on an imported name: the
kinds of values, the tensor facts, the Module classes and the loop structure. Summaries (see
summary.py) are read lazily, only for the files an asked name leads to, and kept per process;
answers follow re-exports, class bases and returned calls across files up to `MAX_DEPTH` files,
with cycles between modules cut. An answer depends only on the bytes of the files it read, so it
is the same in every worker process, in any order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from torchlint.analysis.cpu_fallback import cpu_fallback_row
from torchlint.analysis.modules import is_torch_module_class, module_word
from torchlint.analysis.project_facts import CallSite, Fact, Note, StepEvent
from torchlint.analysis.top_level import DEFINITION, top_level_pieces
from torchlint.diagnostics import Location, Related
from torchlint.project.layout import Layout, project_root
from torchlint.project.summary import (
    CALL, EVAL_MODE, MODULE, TENSOR, TRAIN_MODE, FunctionSummary, ModuleSummary, PlacingCall, WrittenArguments,
    attributes_moved_by_apply, calls_named, grad_modes_of_calls, placing_calls, summarize_lazily,
)

# How many files one answer may follow (re-exports, bases, returned calls).
MAX_DEPTH = 6
# How many files of the project are searched for the callers of a function.
MAX_CALLER_FILES = 2000
_ROLE_KINDS = ("optimizer", "scheduler", "scaler")
_EVENT_TEXT = {
    "backward": "calls `backward()`", "optimizer step": "steps the optimizer", "scheduler step": "steps the scheduler",
    "zero_grad": "clears the gradients", "item": "calls `.item()`", "grad set": "sets gradients by hand",
}
# `from <module> import *` (a fast look: the file's summary is not needed for its own answers).
_STAR_IMPORT = re.compile(rb"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+\*", re.MULTILINE)
_NOT_BASES = frozenset({"object", "?", "Exception", "ABC", "abc.ABC", "typing.Generic", "typing.Protocol"})
# Packages none of whose classes is a Module: scikit-learn's estimators (skorch's `NeuralNet` is one).
_NO_MODULE_PACKAGES = ("sklearn.",)
# A top-level class of a file, by its name.
_CLASS_NAME = re.compile(rb"^class[ \t]+(\w+)", re.MULTILINE)
# The classes of each file named like modules that define `forward`, by file and digest.
_FORWARD_CLASSES: dict[tuple[str, str], tuple[str, ...]] = {}


# Summaries by file and digest of its bytes: computed once per process.
_SUMMARIES: dict[tuple[str, str], ModuleSummary | None] = {}
# A file's text cut at its top-level statements, by file and digest (see `_placing_calls_of`).
_PIECES: dict[tuple[str, str], tuple[list[tuple[str, int]], list[tuple[str, int]]]] = {}
# The calls passing placed tensors of a part of a file read for callers (a definition's row, or
# 0 for its top-level statements together), by file, digest and part.
_PLACING_CALLS: dict[tuple[str, str, int], dict[str, tuple[PlacingCall, ...]]] = {}
# The names each file calls (`f` of `f(` and of `module.f(`), by file and digest; none for a
# file that moves no tensor, which cannot pass a placed one.
_CALLED_NAMES: dict[tuple[str, str], frozenset[bytes]] = {}
_CALLED_NAME = re.compile(rb"(?<!def )\b(\w+)\s*\(")
# The calls of a function in a file, with the arguments they write out, by file, digest and name.
_CALLS_NAMED: dict[tuple[str, str, str], tuple[WrittenArguments, ...]] = {}
# The attributes each file's `_apply` overrides move, by file and digest.
_MOVED_BY_APPLY: dict[tuple[str, str], frozenset[str]] = {}
# The row of each file's first CPU fallback (None: it has none), by file and digest.
_FALLBACK_ROWS: dict[tuple[str, str], int | None] = {}
# Whether autograd is off at each call of a name, by file, digest and name.
_GRAD_MODES: dict[tuple[str, str, str], tuple[bool, ...]] = {}
# The project files each file imports at its top, by file and digest, with the files and
# listings their resolution read (and their states): a module created since may answer an import.
_IMPORTED_FILES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
# Per checked file (real path): every project file and listing its answers were read from, in
# this process (a fix re-checks a file several times; the cache records the union).
_USED: dict[str, set[str]] = {}
# Answers by (question, root, importer's directory), with the states of what they were read from:
# files of one directory ask the same questions, and get the same answers while nothing changed.
_ANSWERS: dict[tuple, tuple[object, tuple[tuple[str, str], ...]]] = {}


class ProjectView:
    """The project as seen from one checked file (`path`; None: no project)."""

    def __init__(self, path: str | None, configured_root: str) -> None:
        self._path = os.path.realpath(path) if path else None
        self._configured_root = configured_root
        self._layout: Layout | None = None
        self._used: set[str] = _USED.setdefault(self._path, set()) if self._path else set()
        self._answers: dict[tuple[str, str], object] = {}
        self._star: bool | None = None  # the file has an `import *` (see `_shared_answer`)

    @property
    def layout(self) -> Layout | None:
        if self._layout is None and self._path is not None and os.path.isfile(self._path):
            self._layout = Layout(project_root(self._path, self._configured_root))
        return self._layout

    def inside(self) -> str | None:
        """The checked file's path inside its project (`tests/helpers.py`); None without one."""
        layout = self.layout
        return None if layout is None else os.path.relpath(self._path, layout.root)

    def lookup(self, qualified: str) -> Fact | None:
        """What the imported name `qualified` (as the import table writes it) is in the project."""
        return self._answer("lookup", qualified)

    def placed_by_callers(self, function: str) -> dict[str, Note]:
        """The parameters of this file's top-level `function` that a call somewhere in the project
        (this file included) passes a tensor moved to the GPU or the working device, with that call."""
        return self._answer("callers", function) or {}

    def calls(self, function: str) -> tuple[CallSite, ...]:
        """The calls of this file's top-level `function` in the project (this file included), with
        the parameters each passes."""
        return self._answer("calls", function) or ()

    def events(self, qualified: str) -> tuple[StepEvent, ...]:
        """The training-step events (backward, optimizer step, zero_grad, mode switches...) of an
        imported function, in source order, through the project functions it calls."""
        return self._answer("events", qualified) or ()

    def lookalike_models(self) -> dict[str, Note]:
        """The project's classes named like modules that define `forward` but are not Modules
        (`class NeuralNet:` of plain tensors, skorch's estimator), by name: there a variable called
        `net` may hold one, so its name is no proof of a module. (Subclasses of a torch class,
        `torch.autograd.Function`, are left out: their `forward` is called through `apply`.)"""
        return self._answer("lookalikes", "") or {}

    def moved_by_apply(self) -> frozenset[str]:
        """The attribute names an `_apply` override somewhere in the project moves by hand on
        another object (`m.stride = fn(m.stride)`): the project moves tensors of that name itself."""
        return self._answer("apply", "") or frozenset()

    def grad_modes(self, function: str) -> tuple[bool, ...]:
        """Whether autograd is off at each call of `function` (by name, or as a method of
        anything) in the other files of the project: `with torch.no_grad():` around it, or a
        decorator of the function it is in."""
        return self._answer("grad modes", function) or ()

    def importer(self) -> Note | None:
        """A file of the project that imports this one: then this module is a library of the
        project, and its `if __name__ == "__main__":` block a demo of it, not the program."""
        return self._answer("importer", "")

    def cpu_fallback(self) -> Note | None:
        """A place where a project file that this file imports, or that imports this file, falls
        back to the CPU or lets the user choose the device (`cpu_fallback_row`): `main.py` with
        `--disable-cuda` running the agent that this file defines. The program they make up is
        written to run without CUDA."""
        return self._answer("fallback", "")

    def _answer(self, question: str, qualified: str):
        key = (question, qualified)
        if key in self._answers:
            return self._answers[key]
        layout = self.layout
        found = None if layout is None else self._shared_answer(layout, question, qualified)
        self._answers[key] = found
        return found

    def _imports_star(self, layout: Layout) -> bool:
        if self._star is None:
            self._star = _STAR_IMPORT.search(layout.read(self._path) or b"") is not None
        return self._star

    def _shared_answer(self, layout: Layout, question: str, qualified: str):
        # Callers are asked about this file's own functions; the other answers hold for its
        # directory, unless the file has an `import *`, which gives names of its own.
        per_file = question in ("callers", "calls", "fallback", "grad modes", "importer") or self._imports_star(layout)
        scope = layout.root if question in ("apply", "lookalikes") else self._path if per_file else os.path.dirname(self._path)
        key = (question, qualified, layout.root, scope)
        shared = _ANSWERS.get(key)
        if shared is not None and all(layout.state(path) == state for path, state in shared[1]):
            self._used.update(path for path, _ in shared[1])
            return shared[0]
        used: set[str] = set()
        resolver = _Resolver(layout, used)
        if question == "callers":
            fact = resolver.placed_by_callers(self._path, qualified)
        elif question == "calls":
            fact = resolver.calls(self._path, qualified)
        elif question == "apply":
            fact = resolver.moved_by_apply()
        elif question == "lookalikes":
            fact = resolver.lookalike_models()
        elif question == "fallback":
            fact = resolver.cpu_fallback(self._path)
        elif question == "grad modes":
            fact = resolver.grad_modes(self._path, qualified)
        elif question == "importer":
            fact = resolver.importer(self._path)
        else:
            fact = resolver.imported(qualified, self._path, 0, frozenset())
        if question == "events":
            fact = resolver.function_events(*fact.definition, 0, frozenset()) if fact and fact.definition else ()
        _ANSWERS[key] = (fact, tuple((path, layout.state(path)) for path in sorted(used)))
        self._used.update(used)
        return fact

    def related(self, notes, checked: str) -> tuple[Related, ...]:
        """The notes as related locations of a finding in this file, whose name as shown is
        `checked`: paths are written the same way (relative to the same directory, or absolute)."""
        written = os.path.normpath(checked)
        base = os.getcwd()
        if self._path and self._path.endswith(os.sep + written):
            base = self._path[: -len(written) - 1]
        found = []
        for note in notes:
            filename = note.path if os.path.isabs(written) else os.path.relpath(note.path, base)
            location = Location(note.row, note.column)
            found.append(Related(note.message, filename.replace(os.sep, "/"), location, location))
        return tuple(found)

    def dependencies(self) -> dict[str, str]:
        """Each file and directory listing the answers were read from, with its state."""
        layout = self.layout
        return {} if layout is None else {path: layout.state(path) for path in sorted(self._used)}


def _parts_calling(key: tuple[str, str], data: bytes, function: str) -> list[tuple[int, list[tuple[str, int]]]]:
    """The parts of the file (`key`: its path and digest) that call `function`: each definition
    that does (by its row), and, if they do, the top-level statements together (row 0): those are
    one scope. Only these need parsing."""
    if key not in _PIECES:
        definitions, top_level = _PIECES[key] = [], []
        for piece, row in top_level_pieces(data.decode("utf-8", "replace")):
            (definitions if DEFINITION.match(piece) else top_level).append((piece, row))
    definitions, top_level = _PIECES[key]
    needle = re.compile(r"(?<!def )\b" + re.escape(function) + r"\s*\(")
    parts = [(row, [(piece, row)]) for piece, row in definitions if needle.search(piece)]
    if any(needle.search(piece) for piece, _ in top_level):
        parts.append((0, top_level))
    return parts


def _placing_calls_of(key: tuple[str, str], data: bytes, function: str, imports: dict[str, str]) -> list[PlacingCall]:
    """The calls of `function` in the file (`key`: its path and digest) that pass placed tensors:
    names stay placed from one top-level statement to the next."""
    found: list[PlacingCall] = []
    for part, pieces in _parts_calling(key, data, function):
        if (*key, part) not in _PLACING_CALLS:
            _PLACING_CALLS[(*key, part)] = placing_calls(pieces, imports)
        found.extend(_PLACING_CALLS[(*key, part)].get(function, ()))
    return found


def _calls_named_in(key: tuple[str, str], data: bytes, function: str, imports: dict[str, str]) -> tuple[WrittenArguments, ...]:
    """The calls of `function` in the file (`key`: its path and digest), with their arguments."""
    if (*key, function) not in _CALLS_NAMED:
        _CALLS_NAMED[(*key, function)] = tuple(
            call for _, pieces in _parts_calling(key, data, function) for call in calls_named(pieces, imports, function))
    return _CALLS_NAMED[(*key, function)]


def recorded_dependencies(path: str) -> dict[str, str]:
    """What the checks of the file at `path` in this process read from its project, with states."""
    layout = Layout("")
    return {used: layout.state(used) for used in sorted(_USED.get(os.path.realpath(path), ()))}


class _Resolver:
    """One question's walk across files; `used` collects every file and listing it reads."""

    def __init__(self, layout: Layout, used: set[str]) -> None:
        self.layout = layout
        self.used = used

    def summary(self, path: str) -> ModuleSummary | None:
        if not path.endswith(".py"):
            return None  # a namespace package has no file
        self.used.add(path)
        data = self.layout.read(path)
        if data is None:
            return None
        key = (path, self.layout.state(path))
        if key not in _SUMMARIES:
            _SUMMARIES[key] = summarize_lazily(data)
        return _SUMMARIES[key]

    def project_files(self) -> list[str]:
        """The project's Python files (at most MAX_CALLER_FILES), every listing read recorded."""
        found: list[str] = []
        directories = [self.layout.root]
        while directories and len(found) < MAX_CALLER_FILES:
            directory = directories.pop()
            self.used.add(directory + os.sep)
            for name in sorted(self.layout.entries(directory)):
                path = os.path.join(directory, name)
                (found.append if name.endswith(".py") else directories.append)(path)
        return found[:MAX_CALLER_FILES]

    def files_matching(self, needle: re.Pattern, besides: str | None = None) -> Iterator[tuple[str, bytes]]:
        """The project's files (`besides` aside) whose text `needle` matches, with that text; every
        file looked at is recorded, as a file that comes to match changes the answer."""
        for path in self.project_files():
            self.used.add(path)
            data = self.layout.read(path) if path != besides else None
            if data is not None and needle.search(data):
                yield path, data

    def placed_by_callers(self, path: str, function: str) -> dict[str, Note]:
        summary = self.summary(path)
        definition = summary.functions[function] if summary is not None and function in summary.functions else None
        if definition is None:
            return {}
        found: dict[str, Note] = {}
        name = function.encode()
        for caller in self.project_files():
            self.used.add(caller)
            data = self.layout.read(caller)
            if data is None:
                continue
            key = (caller, self.layout.state(caller))
            if key not in _CALLED_NAMES:
                moves = b".cuda(" in data or b".to(" in data
                _CALLED_NAMES[key] = frozenset(_CALLED_NAME.findall(data)) if moves else frozenset()
            caller_summary = self.summary(caller) if name in _CALLED_NAMES[key] else None
            if caller_summary is None:
                continue
            for call in _placing_calls_of(key, data, function, caller_summary.imports):
                if not self.calls_definition(call.callee, caller, caller_summary.stars, path, function):
                    continue
                for position in call.placed:
                    param = definition.params[position] if isinstance(position, int) and position < len(
                        definition.params) else position
                    if param in definition.params and param not in found:
                        found[param] = Note(caller, call.row, call.column,
                                            f"`{function}` gets `{param}` on the GPU (or the working device) from this call")
        return found

    def calls(self, path: str, function: str) -> tuple[CallSite, ...]:
        summary = self.summary(path)
        definition = summary.functions[function] if summary is not None and function in summary.functions else None
        if definition is None:
            return ()
        needle = re.compile(rb"(?<!def )\b" + re.escape(function.encode()) + rb"\s*\(")
        found = []
        for caller, data in self.files_matching(needle):
            caller_summary = self.summary(caller)
            if caller_summary is None:
                continue
            for call in _calls_named_in((caller, self.layout.state(caller)), data, function, caller_summary.imports):
                if self.calls_definition(call.callee, caller, caller_summary.stars, path, function):
                    passed = None if call.unpacks else frozenset(definition.params[:call.positional]) | call.keywords
                    found.append(CallSite(passed, Note(caller, call.row, call.column, f"`{function}` is called here")))
        return tuple(found)

    def lookalike_models(self) -> dict[str, Note]:
        found: dict[str, Note] = {}
        for path in self.project_files():
            self.used.add(path)
            for name in self._classes_with_forward(path):
                summary = self.summary(path)
                if name not in found and not self.is_module_class(path, summary, name, 0, frozenset()):
                    row = summary.classes[name].row
                    found[name] = Note(path, row, 1, f"`{name}` defines `forward` but is no `nn.Module`")
        return found

    def _classes_with_forward(self, path: str) -> tuple[str, ...]:
        """The file's top-level classes named like modules that define `forward`, leaving out
        subclasses of a torch class (an autograd Function's `forward` is called through `apply`)."""
        key = (path, self.layout.state(path))
        if key not in _FORWARD_CLASSES:
            data = self.layout.read(path) or b""
            names = [name.decode() for name in _CLASS_NAME.findall(data) if module_word(name.decode())]
            summary = self.summary(path) if names and b"def forward(" in data else None
            classes = {name: summary.classes[name] for name in names if summary is not None and name in summary.classes}
            _FORWARD_CLASSES[key] = tuple(
                name for name, found in classes.items() if found is not None and found.defines_forward
                and not any(base.startswith("torch.") for base in found.bases))
        return _FORWARD_CLASSES[key]

    def moved_by_apply(self) -> frozenset[str]:
        found: set[str] = set()
        for path in self.project_files():
            self.used.add(path)
            data = self.layout.read(path)
            key = (path, self.layout.state(path))
            if data is not None and key not in _MOVED_BY_APPLY:
                _MOVED_BY_APPLY[key] = attributes_moved_by_apply(data)
            found |= _MOVED_BY_APPLY.get(key, frozenset())
        return frozenset(found)

    def grad_modes(self, path: str, function: str) -> tuple[bool, ...]:
        needle = re.compile(rb"\b" + re.escape(function.encode()) + rb"\s*\(")
        found: list[bool] = []
        for caller, data in self.files_matching(needle, besides=path):
            key = (caller, self.layout.state(caller), function)
            if key not in _GRAD_MODES:
                _GRAD_MODES[key] = grad_modes_of_calls(data, function)
            found.extend(_GRAD_MODES[key])
        return tuple(found)

    def importer(self, path: str) -> Note | None:
        # Only a file that names this module in an import line can import it: those alone are summarized.
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem == "__init__":
            stem = os.path.basename(os.path.dirname(path))
        named = re.compile(rb"^[ \t]*(?:from|import)[ \t][^\n]*\b" + re.escape(stem.encode()) + rb"\b", re.MULTILINE)
        for other, _ in self.files_matching(named, besides=path):
            if path in self.imported_files(other):
                return Note(other, 1, 1, f"`{other}` imports this module")
        return None

    def cpu_fallback(self, path: str) -> Note | None:
        importers = [other for other in self.project_files() if other != path and path in self.imported_files(other)]
        for neighbour in (*self.imported_files(path), *importers):
            key = (neighbour, self.layout.state(neighbour))
            if key not in _FALLBACK_ROWS:
                data = self.layout.read(neighbour)
                _FALLBACK_ROWS[key] = None if data is None else cpu_fallback_row(data.decode("utf-8", "replace"))
            if _FALLBACK_ROWS[key] is not None:
                return Note(neighbour, _FALLBACK_ROWS[key], 1, "the program runs without CUDA too: it falls back to the CPU here")
        return None

    def imported_files(self, path: str) -> tuple[str, ...]:
        """The project files that `path` imports at its top (every file and listing read recorded)."""
        summary = self.summary(path)
        key = (path, self.layout.state(path))
        cached = _IMPORTED_FILES.get(key)
        if cached is None or any(self.layout.state(read) != state for read, state in cached[1]):
            found: list[str] = []
            read: set[str] = set()
            for qualified in (summary.imports.values() if summary is not None else ()):
                resolved = self.layout.resolve(qualified, path, read)
                if resolved is not None and resolved[0].endswith(".py") and resolved[0] not in (path, *found):
                    found.append(resolved[0])
            cached = _IMPORTED_FILES[key] = (tuple(found), tuple((each, self.layout.state(each)) for each in sorted(read)))
        self.used.update(cached[0])
        self.used.update(read for read, _ in cached[1])
        return cached[0]

    def calls_definition(self, callee: str, caller: str, stars: tuple[str, ...], path: str, function: str) -> bool:
        """Does `callee`, as written in the file `caller`, name `function` of the file `path`?"""
        if callee == function:
            if caller == path:
                return True
            return any((self.layout.resolve(f"{star}.{function}", caller, self.used) or ("", []))[0] == path for star in stars)
        fact = self.imported(callee, caller, 0, frozenset())
        return fact is not None and fact.definition == (path, function)

    def imported(self, qualified: str, importer: str, depth: int, seen: frozenset) -> Fact | None:
        if depth > MAX_DEPTH or (qualified, importer) in seen:
            return None
        found = self.layout.resolve(qualified, importer, self.used)
        if found is None:
            return self.through_stars(qualified, importer, depth, seen)
        return self._named_in(found, qualified, importer, depth, seen)

    def _named_in(self, found: tuple[str, list[str]], qualified: str, importer: str, depth: int,
                  seen: frozenset) -> Fact | None:
        module, names = found
        if not names:
            return None  # a module object: its attributes are asked by their full names
        return self.symbol(module, names, depth + 1, seen | {(qualified, importer)})

    def through_stars(self, qualified: str, importer: str, depth: int, seen: frozenset) -> Fact | None:
        """`qualified` as a name the importer has from one of its `from <module> import *`. A
        starred module outside the project tells nothing: the name is not sought again through
        the importer's other stars (`tsai.imports.fastai.imports.name`), a search that grows with
        the power of their number."""
        summary = self.summary(importer)
        for star in summary.stars if summary is not None else ():
            target = f"{star}{'' if star.endswith('.') else '.'}{qualified}"
            if depth + 1 > MAX_DEPTH or (target, importer) in seen:
                continue
            found = self.layout.resolve(target, importer, self.used)
            fact = self._named_in(found, target, importer, depth + 1, seen) if found is not None else None
            if fact is not None:
                return fact
        return None

    def symbol(self, module: str, names: list[str], depth: int, seen: frozenset) -> Fact | None:
        """`names[0]` of `module` (a file or a namespace directory), then its attributes."""
        name, rest = names[0], names[1:]
        summary = self.summary(module)
        if summary is None or (name not in summary.classes and name not in summary.functions
                               and name not in summary.constants and name not in summary.imports):
            starred = self.through_stars(".".join(names), module, depth, seen) if summary is not None else None
            if starred is not None:
                return starred
            directory = os.path.dirname(module) if module.endswith(".py") else module
            if module.endswith(".py") and not module.endswith("__init__.py"):
                return None
            submodule = self.layout.module_path(directory, [name], self.used)
            return self.symbol(submodule, rest, depth + 1, seen) if submodule is not None and rest else None
        if name in summary.imports:
            target = summary.imports[name] + "".join(f".{part}" for part in rest)
            return self.imported(target, module, depth, seen)
        if rest:  # an attribute: of a class, a method; of a function, nothing known
            return self.method(module, summary, name, rest[0], depth, seen) if (
                len(rest) == 1 and name in summary.classes) else None
        if name in summary.classes:
            is_module = self.is_module_class(module, summary, name, depth, seen)
            row = summary.classes[name].row if summary.classes[name] is not None else 1
            note = Note(module, row, 1, f"`{name}` is an `nn.Module` subclass" if is_module else f"class `{name}`")
            return Fact("module class" if is_module else "class", name, (note,), output=_output(module, summary, name))
        if name in summary.functions:
            return self.function(module, summary, name, depth, seen)
        return Fact("constant", name, value=summary.constants[name])

    def is_module_class(self, module: str, summary: ModuleSummary, name: str, depth: int, seen: frozenset) -> bool:
        key = ("class", module, name)
        if depth > MAX_DEPTH or key in seen:
            return False
        seen = seen | {key}
        definition = summary.classes[name]
        if definition is None:
            return False
        unknown_base = False
        for base in definition.bases:
            if is_torch_module_class(base):
                return True
            if base in summary.classes and base != name:
                if self.is_module_class(module, summary, base, depth + 1, seen):
                    return True
                continue
            known = base in _NOT_BASES or base.startswith(_NO_MODULE_PACKAGES)
            fact = self.imported(base, module, depth, seen) if not known else None
            if fact is not None and fact.kind == "module class":
                return True
            unknown_base = unknown_base or (fact is None and not known and not base.startswith("torch."))
        # Like a Module class of the checked file: a class over an unknowable base that defines forward.
        return unknown_base and definition.defines_forward

    def method(self, module: str, summary: ModuleSummary, class_name: str, method: str, depth: int,
               seen: frozenset) -> Fact | None:
        """A method of a class of the project, its own or inherited from a base of the project; or
        an attribute its `__init__` sets on the instance (kind "attribute")."""
        key = ("method", module, class_name, method)
        definition = summary.classes[class_name]
        if definition is None or depth > MAX_DEPTH or key in seen:
            return None
        seen = seen | {key}
        if method in definition.methods:
            return self.function(module, summary, f"{class_name}.{method}", depth, seen)
        if method in definition.assigned:
            note = Note(module, definition.assigned[method], 1, f"`{class_name}.__init__` sets `self.{method}` here")
            return Fact("attribute", method, (note,))
        for base in definition.bases:
            if base in summary.classes and base != class_name:
                found = self.method(module, summary, base, method, depth + 1, seen)
            elif base not in _NOT_BASES and not base.startswith("torch."):
                found = self.imported(f"{base}.{method}", module, depth, seen)
            else:
                found = None
            if found is not None:
                return found
        return None

    def function(self, module: str, summary: ModuleSummary, name: str, depth: int, seen: frozenset) -> Fact:
        """A function of the module, or a method written `Class.method`."""
        key = ("function", module, name)
        definition = _definition(summary, name)
        if definition is None or depth > MAX_DEPTH or key in seen:
            return Fact("function", name, definition=(module, name))
        seen = seen | {key}
        kinds = [self.returned(module, summary, returned, depth, seen) for returned in definition.returns]
        where = (module, name)
        modules = [fact for fact in kinds if fact is not None and fact.kind == MODULE]
        if modules:
            return Fact(MODULE, name, (*modules[0].notes, _returned_by(module, definition, name)), definition=where)
        if kinds and all(fact is not None and fact.kind == kinds[0].kind for fact in kinds) \
                and kinds[0].kind in (TENSOR, *_ROLE_KINDS):
            return Fact(kinds[0].kind, name, (*kinds[0].notes, _returned_by(module, definition, name)), definition=where)
        return Fact("function", name, (Note(module, definition.row, 1, f"`{name}` is defined here"),), definition=where)

    def returned(self, module: str, summary: ModuleSummary, returned, depth: int, seen: frozenset) -> Fact | None:
        if returned.kind == TENSOR:
            note = Note(module, returned.row, returned.column,
                        f"created on the default device (CPU) here (`{returned.name}` without `device=`)")
            return Fact(TENSOR, returned.name, (note,))
        if returned.kind == MODULE or returned.kind in _ROLE_KINDS:
            return Fact(returned.kind, returned.name, (Note(module, returned.row, returned.column,
                                                            f"`{returned.name}(...)` is created here"),))
        if returned.kind != CALL:
            return None
        callee = returned.name
        if callee in summary.classes:
            fact = self.symbol(module, [callee], depth, seen)
        elif callee in summary.functions:
            fact = self.function(module, summary, callee, depth + 1, seen)
        else:
            fact = self.imported(callee, module, depth, seen)
        if fact is None:
            return None
        if fact.kind == "module class":
            return Fact(MODULE, callee, fact.notes)
        return fact if fact.kind in (MODULE, TENSOR, *_ROLE_KINDS) else None

    def function_events(self, module: str, name: str, depth: int, seen: frozenset) -> tuple[StepEvent, ...]:
        key = ("events", module, name)
        summary = self.summary(module)
        definition = _definition(summary, name) if summary is not None else None
        if definition is None or depth > MAX_DEPTH or key in seen:
            return ()
        seen = seen | {key}
        found: list[StepEvent] = []
        owner, is_method, _ = name.rpartition(".")
        for event, callee, row, flags in definition.events:
            # Flags are the asked function's parameters, which its caller passes: deeper ones are not.
            needed = _needed_flags(definition, flags) if depth == 0 else ()
            if event in (EVAL_MODE, TRAIN_MODE):
                if depth == 0 and callee in definition.params:
                    note = Note(module, row, 1, f"`{name}` puts `{callee}` in {event} here")
                    found.append(StepEvent(event, note, (definition.params.index(callee), callee), needed))
            elif event != CALL:
                note = Note(module, row, 1, f"`{name}` {_EVENT_TEXT.get(event, event)} here")
                found.append(StepEvent(event, note, flags=needed))
            elif callee.startswith("self."):  # another method of the class (else a submodule's call)
                sibling = f"{owner}.{callee[5:]}"
                if is_method and _definition(summary, sibling) is not None:
                    found.extend(self.function_events(module, sibling, depth + 1, seen))
            elif callee in summary.functions:
                found.extend(self.function_events(module, callee, depth + 1, seen))
            elif callee not in summary.classes:
                fact = self.imported(callee, module, depth, seen)
                if fact is not None and fact.definition is not None:
                    found.extend(self.function_events(*fact.definition, depth + 1, seen))
        return tuple(found)


def _needed_flags(
    definition: FunctionSummary, flags: tuple[tuple[str, bool], ...],
) -> tuple[tuple[int | None, str, bool, bool | None], ...]:
    """`StepEvent.flags` of an event under `flags`, (name, value) pairs of the parameters of `definition`."""
    defaults = dict(definition.flag_defaults)
    needed = []
    for flag, value in flags:
        position = definition.params.index(flag)
        needed.append((position if position < definition.positional else None, flag, value, defaults.get(flag)))
    return tuple(needed)


def _definition(summary: ModuleSummary, name: str) -> FunctionSummary | None:
    """The summary of a function of the module, or of a method written `Class.method`."""
    owner, is_method, method = name.partition(".")
    if is_method:
        definition = summary.classes[owner] if owner in summary.classes else None
        return definition.methods.get(method) if definition is not None else None
    return summary.functions[name] if name in summary.functions else None


def _returned_by(module: str, definition: FunctionSummary, name: str) -> Note:
    return Note(module, definition.row, 1, f"returned by `{name}`")


def _output(module: str, summary: ModuleSummary, name: str) -> tuple[str, Note] | None:
    """The activation the class's `forward` ends in, with where it is taken."""
    definition = summary.classes[name]
    output = definition.output if definition is not None else None
    if output is None:
        return None
    activation, row, column = output
    return activation, Note(module, row, column, f"`{name}.forward` returns `{activation}` here")
