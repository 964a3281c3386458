from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.call_edits import keyword, with_arguments
from torchlint.analysis.names import (
    argument, dotted_name, is_name, keyword_arg, method_name, parameter_named, positional_args, single_index,
)
from torchlint.analysis.tensor_facts.domain import ModuleValue
from torchlint.analysis.torch_api import LOAD_FUNCTIONS
from torchlint.analysis.values import string_value
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec, RelatedNode
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# The environment variable that makes every `torch.load` without `weights_only` use `weights_only=False`.
_FORCE_UNSAFE_LOADS = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
# From this version on, a missing `weights_only` means `weights_only=True`.
_SAFE_DEFAULT_SINCE = (2, 6)
_SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})
# What a function can make, save into and load back, holding nothing from outside.
_FRESH_FILES = frozenset({
    "io.BytesIO", "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile", "tempfile.SpooledTemporaryFile",
})
# What only a Module answers: a loaded object used so is a whole pickled model.
_MODULE_METHODS = frozenset({"eval", "train", "parameters", "named_parameters", "state_dict", "forward", "modules"})
# Helpers that build a path from a directory given first: `os.path.join(root, name)`, `Path(root)`.
_PATH_BUILDERS = frozenset({"os.path.join", "osp.join", "path.join", "Path", "pathlib.Path"})
_PICKLED_MODULE = (
    "a whole pickled module loads only with `weights_only=False`, which runs any code in the file: "
    "save and load its `state_dict()` instead, or pass `weights_only=False` for a file you trust"
)


class UnsafeTorchLoad(Rule):
    """
    ## What it does
    Flags `torch.load(..., weights_only=False)`, and `torch.load(...)` without `weights_only` unless
    the configured `target-torch-version` is 2.6 or newer (from 2.6 on, the default is
    `weights_only=True`; without a configured version the missing argument is reported, as
    TorchFix's TOR102 does). A variable passed as `weights_only`, calls with `**kwargs` (which may carry it;
    `*args` cannot, `weights_only` is keyword-only),
    version-gated fallbacks (also the load after `if WITH_PT24:` whose every path returns a
    `weights_only=True` load or raises), `try`/`except` fallbacks and a load of what the same function saved
    just before into an `io.BytesIO()` or a temporary file it made (`torch.save(module, buffer)`
    then `torch.load(buffer)`: a copy through memory, a round trip in a test) are not flagged,
    nor are the loads of test code (a test module, or a module of a test folder such as
    `tests/helpers.py`), which reads files the test suite controls. A whole pickled Module is
    reported there too: its load fails from torch 2.6 on.

    Also flags `os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"` run on import (at the top of
    a module, such as a package's `__init__.py`): from then on every `torch.load` without
    `weights_only` in the process unpickles arbitrary code, those of the code that imports the
    package too. Set inside a function around one load, or in test code, it is not flagged.

    ## Why is this bad?
    With `weights_only=False` (the default before torch 2.6), `torch.load` unpickles arbitrary
    Python objects: a checkpoint downloaded from the internet can run any code on the machine
    that loads it. `weights_only=True` restricts loading to tensors, primitive types and
    allow-listed classes.

    ## Example
    ```python
    state = torch.load("model.pt", map_location="cpu")
    ```

    ## Use instead
    ```python
    state = torch.load("model.pt", map_location="cpu", weights_only=True)
    ```
    For files you trust that hold other objects, allow-list their classes with
    `torch.serialization.add_safe_globals([...])`, or pass `weights_only=False`: an explicit
    opt-out is a choice the code shows, reported as a hint (see Severity).

    Where the file holds a whole pickled Module (the loaded object is used as a model:
    `model = torch.load(path)` then `model.eval()` or `model(x)`, or an entry of it so,
    `ckpt["model"].float().state_dict()` of a checkpoint that holds whole models; or the same file
    saves one:
    `torch.save(model, path)`, but not what the function loaded and saves again, edited: `model =
    torch.load(path)` then `torch.save(model, out)`), `weights_only=True` cannot load it: the
    finding says so, asks for a `state_dict()` or an explicit `weights_only=False` for a trusted
    file, and offers no fix. It is reported under a `target-torch-version` of 2.6 or newer too:
    there the load fails.

    ## Severity
    An error, except where one method of a class loads the file that another method of the
    class saves with `torch.save`, a storage format of its own: a `save(self, filename)` /
    `load(cls, filename)` pair (also through `with open(filename) as f`), or a path built on the
    same directory of the object (`os.path.join(self.processed_dir, name)`). There the finding is
    a note (failing a run only under `fail-on = "note"`) that points at the save: the load is safe
    for the files this code writes, and runs any code in a file a user hands it from elsewhere.
    An explicit `weights_only=False` is a hint (reported under `show-hints = true` or
    `--show-hints`, and in the editor): the author chose it, and the choice is in plain sight of a
    reviewer. It is a warning where all the load reads goes to `load_state_dict`
    (`model.load_state_dict(torch.load(path, weights_only=False))`, or a name passed whole to it
    and used nowhere else): a state dict loads under `weights_only=True` too, so the opt-out buys
    nothing and lets a planted file run code.
    Still errors: a saved dict display (`torch.save({"docs": docs, "emb": emb}, path)`), plain
    data that `weights_only=True` would load (one holding what NumPy makes, such as
    `np.random.get_state()` in a training loop's checkpoint, is not: `weights_only=True` rejects
    it); one function that saves a file and loads it on another call (a cache, which an earlier
    run or another user may have filled); two module-level functions that take a `path` each.

    ## Fix safety
    The fix adds `weights_only=True` and is unsafe: loading a file that holds objects other than
    tensors and primitive containers will then raise. It is not offered when a `pickle_module` is
    passed (that requires `weights_only=False`) nor for an explicit `weights_only=False`.

    Bug left in place: no. Computation changed: only for checkpoints holding arbitrary Python
    objects, which then fail to load (add their classes with
    `torch.serialization.add_safe_globals`).
    """

    code = "TL502"
    name = "unsafe-torch-load"
    summary = "torch.load without weights_only=True unpickles arbitrary code"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._saved_module: cst.Call | None = None  # the file's first `torch.save(model, path)`
        # The file's `torch.save` calls of more than a dict display, and where they write.
        self._saves: list[tuple[cst.Call, _FilePlace]] = []
        # Loads judged once the whole file is read: those with an explicit `weights_only=False` (and
        # whether all they load goes to `load_state_dict`), and those without `weights_only` (with the fix).
        self._unsafe: list[tuple[cst.Call, _FilePlace | None, bool]] = []
        self._unmarked: list[tuple[cst.Call, FixSpec | None, _FilePlace | None]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        """`os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"` on import: every `torch.load` of
        the process, those of code that imports this one too, then unpickles arbitrary code."""
        if len(node.targets) != 1 or self.ctx.enclosing_function() is not None or self.ctx.serves_tests:
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Subscript) and self.ctx.qualified_name(target.value) == "os.environ"):
            return
        variable = single_index(target)
        if variable is not None and string_value(variable) == _FORCE_UNSAFE_LOADS \
                and (string_value(node.value) or "0").lower() not in ("0", "false"):
            self.report(
                node,
                f"`{_FORCE_UNSAFE_LOADS}` set on import makes every `torch.load` in the process, the loads of "
                "code that imports this module too, unpickle arbitrary code; pass `weights_only=False` to the "
                "loads of the files you trust instead",
            )

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.ctx.callee(node)
        if callee in _SAVE_FUNCTIONS:
            if self._saved_module is None and self._saves_module(node):
                self._saved_module = node
            written = self._place(argument(node, 1, "f"))
            if written is not None and not self._saves_plain_dict(node):
                self._saves.append((node, written))
        if callee not in LOAD_FUNCTIONS or any(arg.star == "**" for arg in node.args) or self._reads_back(node):
            return
        weights_only = keyword_arg(node, "weights_only")
        if weights_only is not None:
            value = weights_only.value
            if not (isinstance(value, cst.Name) and value.value == "False"):
                return  # True, or a variable the caller chose; `None` is handled below
            if not self.ctx.guards.in_compat_code(node, fallback_only=True):
                self._unsafe.append((node, self._place(argument(node, 0, "f")), self._loads_state_dict(node)))
            return
        if self.ctx.guards.in_compat_code(node, fallback_only=True):
            return
        used = self._used_as_module(node)
        if used is not None:
            self._report_pickled_module(node, RelatedNode(used, "the loaded object is used as a model here"))
            return
        fix = None
        if argument(node, 2, "pickle_module") is None:
            fixed = with_arguments(node, last=[keyword("weights_only", "True")])
            fix = FixSpec("Add `weights_only=True`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE)
        self._unmarked.append((node, fix, self._place(argument(node, 0, "f"))))

    def leave_Module(self, node: cst.Module) -> None:
        # The test suite loads files it controls: no file from elsewhere reaches its loads.
        trusted = self.ctx.serves_tests
        for load, place, state_dict in self._unsafe if not trusted else ():
            self._report_unsafe(load, self._save_of(place), state_dict)
        for load, fix, place in self._unmarked:
            if self._saved_module is not None:
                self._report_pickled_module(load, RelatedNode(self._saved_module, "a whole module is saved here"))
            elif not self._safe_by_default() and not trusted:
                self._report_unmarked(load, fix, self._save_of(place))

    def _report_unsafe(self, load: cst.Call, save: cst.Call | None, state_dict: bool) -> None:
        """An explicit `weights_only=False` is a choice the code shows (a hint), unless all it loads
        is a state dict, which `weights_only=True` loads as well (a warning)."""
        message = "`torch.load(..., weights_only=False)` can run arbitrary code from the file"
        if state_dict:
            self.report(load, f"{message}, and need not: all it loads goes to `load_state_dict`, a state dict that "
                              "`weights_only=True` loads too", severity=Severity.WARNING)
        elif save is None:
            self.report(load, f"{message}; load only trusted files, or use `weights_only=True` with "
                              "`torch.serialization.add_safe_globals`", severity=Severity.HINT)
        else:
            self.report(load, f"{message}: it reads back what this code saves, so it is safe until a user "
                              "hands it a file from elsewhere",
                        related=(RelatedNode(save, "the file is saved here"),), severity=Severity.HINT)

    def _report_unmarked(self, load: cst.Call, fix: FixSpec | None, save: cst.Call | None) -> None:
        message = "`torch.load` without `weights_only` unpickles arbitrary code before torch 2.6"
        if save is None:
            self.report(load, f"{message}; pass `weights_only=True`", fix=fix)
        else:
            self.report(load, f"{message}; it reads back what this code saves, so pass `weights_only=True` if "
                              "that holds only tensors and plain containers",
                        fix=fix, related=(RelatedNode(save, "the file is saved here"),), severity=Severity.NOTE)

    def _place(self, path: cst.BaseExpression | None) -> _FilePlace | None:
        """Where a load reads or a save writes, with the code around it. A handle opened in the
        same function (`with open(filename, "rb") as f`) stands for the path it opened."""
        if path is None:
            return None
        function = self.ctx.enclosing_function()
        if isinstance(path, cst.Name) and function is not None:
            path = _opened_path(function, path.value) or path
        text = _SELF_SPELLINGS.sub("self.", self.ctx.code_for(path))
        parameter = isinstance(path, cst.Name) and function is not None and parameter_named(function, path.value) is not None
        return _FilePlace(text, _directory_attribute(path), parameter, function, self.ctx.enclosing_class())

    def _saves_plain_dict(self, save: cst.Call) -> bool:
        """`torch.save({"docs": docs, "embeddings": emb}, path)`, or a name assigned such a dict:
        plain data the code chose, which `weights_only=True` loads when it holds tensors and
        Python values, so its load stays an error. A dict holding what NumPy makes
        (`np.random.get_state()`, an array) is not: `weights_only=True` rejects NumPy's classes."""
        saved = argument(save, 0, "obj")
        made = self.ctx.kinds.resolve(saved) if saved is not None else None
        return isinstance(made, cst.Dict) and not any(
            isinstance(element, cst.DictElement) and self._made_by_numpy(element.value) for element in made.elements
        )

    def _made_by_numpy(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Call) and (self.ctx.callee(value) or "").startswith("numpy.")

    def _save_of(self, load: _FilePlace | None) -> cst.Call | None:
        """The file's `torch.save` that writes what `load` reads, if any."""
        if load is None:
            return None
        return next((save for save, place in self._saves if place.same_file(load)), None)

    def _safe_by_default(self) -> bool:
        target = self.ctx.settings.target_torch_version
        return target is not None and tuple(target[:2]) >= _SAFE_DEFAULT_SINCE

    def _report_pickled_module(self, node: cst.Call, evidence: RelatedNode) -> None:
        """`weights_only=True` would break this load of a whole pickled Module: say what works
        instead, with no fix."""
        if self._safe_by_default():
            message = f"`torch.load` fails here from torch 2.6 on, where `weights_only` defaults to True: {_PICKLED_MODULE}"
        else:
            message = f"`torch.load` without `weights_only` unpickles arbitrary code before torch 2.6, and {_PICKLED_MODULE}"
        self.report(node, message, related=(evidence,))

    def _saves_module(self, save: cst.Call) -> bool:
        """The save writes a Module, not what the function loaded and saves again (`model =
        torch.load(path)`, edited, then `torch.save(model, out)`: a name proves nothing there)."""
        saved = positional_args(save)[:1]
        return bool(saved) and isinstance(self.ctx.tensors.facts(saved[0].value), ModuleValue) \
            and not self._loaded_into(saved[0].value)

    def _loaded_into(self, saved: cst.BaseExpression) -> bool:
        """The function assigns the saved name from a `torch.load(...)`."""
        function = self.ctx.enclosing_function()
        return isinstance(saved, cst.Name) and function is not None and any(
            isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
            and self.ctx.callee(node.value) in LOAD_FUNCTIONS
            and any(is_name(target.target, saved.value) for target in node.targets)
            for node in nodes_in_order(function))

    def _reads_back(self, load: cst.Call) -> bool:
        """`torch.save(state, buffer)` then `torch.load(buffer)` of an `io.BytesIO()` or a
        temporary file (`f` or `f.name`) made in the same function: a copy through memory or a
        round trip in a test, whose load reads what this very code just saved. A file path does
        not count: it may hold what an earlier run left there."""
        source = argument(load, 0, "f")
        holder = source.value if isinstance(source, cst.Attribute) and source.attr.value == "name" else source
        function = self.ctx.enclosing_function()
        if not isinstance(holder, cst.Name) or function is None:
            return False
        written = self.ctx.code_for(source)
        fresh = saved = False
        for node in nodes_in_order(function):
            if node is load:
                return fresh and saved
            if isinstance(node, cst.WithItem) and isinstance(node.asname, cst.AsName):
                fresh |= is_name(node.asname.name, holder.value) and self._is_fresh(node.item)
            elif isinstance(node, cst.Assign) and len(node.targets) == 1:
                fresh |= is_name(node.targets[0].target, holder.value) and self._is_fresh(node.value)
            elif isinstance(node, cst.Call) and self.ctx.callee(node) in _SAVE_FUNCTIONS:
                target = argument(node, 1, "f")
                saved |= target is not None and self.ctx.code_for(target) == written
        return False

    def _is_fresh(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.ctx.callee(expr) in _FRESH_FILES

    def _loads_state_dict(self, load: cst.Call) -> bool:
        """All the load reads goes to `load_state_dict`: `model.load_state_dict(torch.load(path))`,
        or the name it is assigned to passed whole to it (and to nothing else) in the same function."""
        ancestors = self.ctx.ancestors
        if len(ancestors) >= 2 and isinstance(ancestors[-1], cst.Arg) and isinstance(ancestors[-2], cst.Call):
            return method_name(ancestors[-2]) == "load_state_dict"
        name = _assigned_name(ancestors[-1] if ancestors else None)
        if name is None:
            return False
        scope = self.ctx.enclosing_function() or self.ctx.module
        nodes = list(nodes_in_order(scope))
        written = {id(target.target) for node in nodes if isinstance(node, cst.Assign) for target in node.targets}
        reads = [node for node in nodes if is_name(node, name) and id(node) not in written]
        loaded = [node for node in nodes if isinstance(node, cst.Call)
                  and method_name(node) == "load_state_dict" and node.args and is_name(node.args[0].value, name)]
        # One read of the name (in either branch that assigns it): the argument of `load_state_dict`.
        return len(loaded) == 1 and len(reads) == 1

    def _used_as_module(self, load: cst.Call) -> cst.CSTNode | None:
        """`torch.load(path).eval()`, or the name it is assigned to (through `.to(device)`) called
        or asked for what only a Module has in the same function."""
        ancestors = self.ctx.ancestors
        index = len(ancestors) - 1
        while index >= 1 and isinstance(ancestors[index], cst.Attribute) and isinstance(ancestors[index - 1], cst.Call):
            if ancestors[index].attr.value in _MODULE_METHODS:
                return ancestors[index - 1]
            index -= 2
        name = _assigned_name(ancestors[index] if index >= 0 else None)
        if name is None:
            return None
        scope = self.ctx.enclosing_function() or self.ctx.module
        for node in nodes_in_order(scope):
            if isinstance(node, cst.Call) and _uses_as_module(node.func, name):
                return node
        return None


# `cls.base_name` in a classmethod and `self.base_name` in a method name the same attribute.
_SELF_SPELLINGS = re.compile(r"\bcls\.")


@dataclass(frozen=True)
class _FilePlace:
    """A path a `torch.save` writes or a `torch.load` reads, as written (`cls.` read as `self.`),
    the attribute of the object it is built on (`self.processed_dir`), whether it is a parameter of
    its function as a whole, and the method and class around it."""

    text: str
    directory: str | None
    parameter: bool
    function: cst.FunctionDef | None
    owner: cst.ClassDef | None

    def same_file(self, other: _FilePlace) -> bool:
        """The same path in two methods of one class: written alike (a bare name only where both
        methods take it as a parameter: `save(self, fname)` and `load(cls, fname)`), or built on
        the same directory of the object (`osp.join(self.processed_dir, name)`). One function
        that saves a file and loads it on another call is a cache, which an earlier run or
        another user may have filled."""
        if self.owner is None or self.owner is not other.owner or self.function is other.function:
            return False
        if self.directory is not None and self.directory == other.directory:
            return True
        bare = self.text.isidentifier()
        return self.text == other.text and (not bare or self.parameter and other.parameter)


def _assigned_name(statement: cst.CSTNode | None) -> str | None:
    """The one name `statement` assigns the loaded object to (`state = torch.load(path)`)."""
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0].target, cst.Name):
        return statement.targets[0].target.value
    return None


def _opened_path(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The path of `with open(path, ...) as name` in `function`."""
    for node in nodes_in_order(function):
        if isinstance(node, cst.WithItem) and isinstance(node.asname, cst.AsName) and is_name(node.asname.name, name) \
                and isinstance(node.item, cst.Call) and dotted_name(node.item.func) == "open" and node.item.args:
            return node.item.args[0].value
    return None


def _directory_attribute(path: cst.BaseExpression) -> str | None:
    """`self.processed_dir` for a path built on it: `osp.join(self.processed_dir, name)`,
    `self.root / "cache.pt"`, `self.root.joinpath(name)`, `Path(self.root)`."""
    while True:
        if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Divide):
            path = path.left
        elif isinstance(path, cst.Call) and dotted_name(path.func) in _PATH_BUILDERS and path.args:
            path = path.args[0].value
        elif isinstance(path, cst.Call) and isinstance(path.func, cst.Attribute) and path.func.attr.value == "joinpath":
            path = path.func.value
        else:
            break
    if isinstance(path, cst.Attribute) and isinstance(path.value, cst.Name) and path.value.value in ("self", "cls"):
        return f"self.{path.attr.value}"
    return None


def _uses_as_module(func: cst.BaseExpression, name: str) -> bool:
    """`model(x)`, `model.eval()`, `model.parameters()`, also of an entry of a loaded checkpoint
    (`ckpt["model"].float().state_dict()`, `(ckpt.get("ema") or ckpt["model"]).eval()`)."""
    if isinstance(func, cst.Name):
        return func.value == name
    return isinstance(func, cst.Attribute) and func.attr.value in _MODULE_METHODS and _rooted_at(func.value, name)


def _rooted_at(expr: cst.BaseExpression, name: str) -> bool:
    """`expr` is `name`, an entry, attribute or method result of it, or the first of an `or`."""
    while not isinstance(expr, cst.Name):
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        elif isinstance(expr, cst.BooleanOperation):
            expr = expr.left
        else:
            return False
    return expr.value == name
