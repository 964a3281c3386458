"""The summary of one module of the project, read with CPython's `ast` (about ten times faster
than libcst): what other files need to know about it, as plain picklable data.

    summary = summarize(source)        # ModuleSummary, or None for text that does not parse

Names are kept as written through the module's imports (`torch.optim.AdamW`, `.utils.make_mask`,
`Net` for a class of the module): the project index (index.py) resolves them across files.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from torchlint.analysis.loops import Role, role_from_name, role_of_constructor
from torchlint.analysis.modules import is_model_factory, is_torch_module_class
from torchlint.analysis.top_level import DEFINITION, top_level_pieces
from torchlint.analysis.tensors import LEGACY_CONSTRUCTORS
from torchlint.analysis.torch_api import ACTIVATION_LAYERS, SCORE_LAYERS, SIGMOID_FUNCTIONS, SOFTMAX_FUNCTIONS
from torchlint.analysis.values import DATA_FACTORIES, SIZE_FACTORIES

# Returned-value kinds a function summary can hold.
MODULE, TENSOR, CALL, OTHER = "module", "tensor", "call", "other"
ROLES = {Role.OPTIMIZER: "optimizer", Role.SCHEDULER: "scheduler", Role.SCALER: "scaler"}
# Training-step events of a function body, in source order.
BACKWARD, OPTIMIZER_STEP, SCHEDULER_STEP, ZERO_GRAD, ITEM = "backward", "optimizer step", "scheduler step", "zero_grad", "item"
# A module switched to evaluation or training mode (`model.eval()`, `model.train()`).
EVAL_MODE, TRAIN_MODE = "eval mode", "train mode"

_CLEARING_WORDS = ("zero_grad", "reset_grad", "clear_grad")
# Methods that keep a tensor on its device (and at least one dimension): `torch.ones(n, n).tril()`.
_KEEPING_METHODS = frozenset(
    {"tril", "triu", "bool", "float", "long", "int", "half", "double", "byte", "view", "reshape", "unsqueeze",
     "expand", "flip", "t", "transpose", "permute", "contiguous", "clone", "repeat", "cumsum", "logical_not"}
)
# torch functions whose result stays where their first argument is (the others being sizes or numbers).
_KEEPING_FUNCTIONS = frozenset(f"torch.{name}" for name in ("tril", "triu", "flip", "logical_not", "cumsum", "outer"))


@dataclass(frozen=True)
class Returned:
    """One `return` of a function: `kind` is module/tensor/optimizer/scheduler/scaler/call/other;
    `name` the callee for a call (resolved by the index) or the factory that made a tensor."""

    kind: str
    name: str
    row: int
    column: int


@dataclass(frozen=True)
class FunctionSummary:
    row: int
    returns: tuple[Returned, ...]
    # (event, callee, row, flags) in source order; event is one of the constants above, or CALL
    # with its callee (`self.<method>` for a method of the same class); for a mode switch, the
    # module as written (`model`, `self.net`) in place of the callee. `flags` are the values of
    # parameters the function never reassigns that the `if`s around the event require
    # (`("is_training", False)` under `if not is_training:`).
    events: tuple[tuple[str, str, int, tuple[tuple[str, bool], ...]], ...]
    # The parameters' names in order (a method's first one is its instance).
    params: tuple[str, ...] = ()
    # The parameters that default to `True` or `False`, with that default.
    flag_defaults: tuple[tuple[str, bool], ...] = ()
    # How many of `params` a call can pass by position (the others are keyword-only).
    positional: int = 0


@dataclass(frozen=True)
class ClassSummary:
    row: int
    bases: tuple[str, ...]
    # Its methods (`forward`'s parameters are `methods["forward"].params`).
    methods: dict[str, FunctionSummary] = field(default_factory=dict)
    # What `__init__` sets up: buffers registered by name, and `self.<name> = <callee>(...)` with the
    # callee as written through the imports (submodules: `torch.nn.Linear`, `.encoder.Encoder`; an
    # optimizer: `torch.optim.SGD`).
    buffers: tuple[str, ...] = ()
    attributes: dict[str, str] = field(default_factory=dict)
    # The activation every `return` of `forward` ends in ("softmax", "sigmoid"), with the row and
    # column of the first such return: what a loss that wants logits must not be given.
    output: tuple[str, int, int] | None = None
    # Every `self.<name> = ...` of `__init__`, with its row: the names it sets on the instance.
    assigned: dict[str, int] = field(default_factory=dict)

    @property
    def defines_forward(self) -> bool:
        return "forward" in self.methods


@dataclass(frozen=True)
class ModuleSummary:
    imports: dict[str, str] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    # Module-level names assigned a literal once (`DEVICE = "cuda"`, `BLOCK_SIZE = 256`).
    constants: dict[str, object] = field(default_factory=dict)

    @property
    def stars(self) -> tuple[str, ...]:
        """The modules it imports `*` from, as written (`layers`, `.functions`), in order."""
        return tuple(module for name, module in self.imports.items() if name.startswith("*"))


def summarize(source: str | bytes) -> ModuleSummary | None:
    """The whole module's summary, from one parse of the whole text."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return summarize_statements(tree.body, _imports(tree.body))


def summarize_statements(body: list[ast.stmt], imports: dict[str, str], offset: int = 0) -> ModuleSummary:
    """The summary of these top-level statements, names read through `imports` (`offset`: rows
    to add to the nodes' own)."""
    summary = ModuleSummary(imports=imports)
    assigned: dict[str, object] = {}
    for statement in _top_statements(body):
        if isinstance(statement, ast.ClassDef):
            summary.classes.setdefault(statement.name, _class(statement, imports, offset))
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            summary.functions.setdefault(statement.name, _function(statement, imports, offset))
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            name = statement.targets[0].id
            literal = statement.value.value if isinstance(statement.value, ast.Constant) else None
            assigned[name] = None if name in assigned else literal
    summary.constants.update((name, value) for name, value in assigned.items() if value is not None)
    return summary


# Lazy summaries ------------------------------------------------------------------------------
#
# Most questions are about one or two names of a module, so only the statements that answer them
# are parsed: the text is cut where a line starts in column 0 (a top-level statement), imports and
# constants are read at once, and a class or function is parsed when first asked about. A piece
# that does not parse alone (a string spanning a cut) falls back to parsing the whole module.

_ASSIGNED = re.compile(r"(\w+)[ \t]*(?::[^=\n]*)?=[^=]")
_CONSTANT = re.compile(r"(\w+)[ \t]*=[ \t]*([-+]?\d[\w.]*|'[^'\n\\\\]*'|\"[^\"\n\\\\]*\"|True|False)[ \t]*(?:#.*)?\s*")


class _Unparsable(Exception):
    pass


def summarize_lazily(source: bytes) -> ModuleSummary | None:
    """`summarize`, parsing each class or function only when it is asked about."""
    try:
        text = source.decode("utf-8")
        pieces = top_level_pieces(text)
        imports: dict[str, str] = {}
        constants: dict[str, object] = {}
        definitions: dict[str, tuple[str, str, int]] = {}
        nested: list[ast.Module] = []
        plain_imports: list[str] = []
        for piece, row in pieces:
            found = DEFINITION.match(piece)
            if found is not None:
                definitions.setdefault(found.group(2), (found.group(1), piece, row))
            elif piece.startswith(("from", "import")):
                plain_imports.append(piece)
            elif piece.startswith(("if", "try")) and ("import" in piece or "def " in piece or "class " in piece):
                tree = _parse(piece, row)
                imports.update(_imports(tree.body))
                nested.append(tree)
            elif (constant := _CONSTANT.fullmatch(piece)) is not None:
                value = ast.literal_eval(constant.group(2))
                constants[constant.group(1)] = None if constant.group(1) in constants else value
            elif (assigned := _ASSIGNED.match(piece)) is not None:
                constants[assigned.group(1)] = None  # assigned something else: not a constant
        imports = {**_imports(_parse("\n".join(plain_imports), 1).body), **imports} if plain_imports else imports
        constants = {name: value for name, value in constants.items() if value is not None}
        lazy = _Definitions(definitions, imports, text)
        for tree in nested:  # classes and functions defined under `if`/`try`, next to imports
            lazy.add(summarize_statements(tree.body, imports, tree.offset))
        return ModuleSummary(imports, lazy.of_kind("class"), lazy.of_kind("def"), constants)
    except (_Unparsable, UnicodeDecodeError, ValueError, SyntaxError):
        return summarize(source)


def _parse(piece: str, row: int) -> ast.Module:
    try:
        tree = ast.parse(piece)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _Unparsable from None
    tree.offset = row - 1  # rows of the piece's nodes are relative to it (cheaper than renumbering)
    return tree


class _Definitions:
    """The module's top-level classes and functions, each summarized when first asked."""

    def __init__(self, definitions: dict[str, tuple[str, str, int]], imports: dict[str, str], text: str) -> None:
        self._definitions = definitions
        self._imports = imports
        self._text = text
        self._summaries: dict[str, object] = {}
        self._whole: ModuleSummary | None = None

    def add(self, summary: ModuleSummary) -> None:
        for kind, table in (("class", summary.classes), ("def", summary.functions)):
            for name, found in table.items():
                if name not in self._definitions:
                    self._definitions[name] = (kind, "", found.row)
                    self._summaries[name] = found

    def of_kind(self, kind: str) -> "_LazyMapping":
        return _LazyMapping(self, kind)

    def has(self, name: str, kind: str) -> bool:
        found = self._definitions.get(name)
        return found is not None and found[0] == kind

    def summary(self, name: str) -> object:
        if name not in self._summaries:
            kind, piece, row = self._definitions[name]
            try:
                self._summaries[name] = self._class(piece, row) if kind == "class" else self._function(piece, row)
            except _Unparsable:
                whole = self._whole = self._whole or summarize(self._text)
                table = {} if whole is None else whole.classes if kind == "class" else whole.functions
                self._summaries[name] = table.get(name)
        return self._summaries[name]

    def _class(self, piece: str, row: int) -> ClassSummary | None:
        tree = _parse(piece, row)
        classdef = tree.body[0] if tree.body and isinstance(tree.body[0], ast.ClassDef) else None
        return None if classdef is None else _class(classdef, self._imports, tree.offset)

    def _function(self, piece: str, row: int) -> FunctionSummary | None:
        tree = _parse(piece, row)
        function = tree.body[0] if tree.body else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        return _function(function, self._imports, tree.offset)


class _LazyMapping:
    """`name in summary.functions`, `summary.functions[name]`: a read-only view of one kind."""

    def __init__(self, definitions: _Definitions, kind: str) -> None:
        self._definitions = definitions
        self._kind = kind

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._definitions.has(name, self._kind)

    def __getitem__(self, name: str):
        """The summary, or None for a definition that cannot be read alone or at all."""
        if not self._definitions.has(name, self._kind):
            raise KeyError(name)
        return self._definitions.summary(name)


def _top_statements(body: list[ast.stmt]):
    """Module-level statements, also under `if`/`try` (a `try: import` fallback, a version gate)."""
    for statement in body:
        if isinstance(statement, (ast.If, ast.Try)):
            for block in (statement.body, statement.orelse, getattr(statement, "finalbody", [])):
                yield from _top_statements(block)
            for handler in getattr(statement, "handlers", []):
                yield from _top_statements(handler.body)
        else:
            yield statement


def _imports(body: list[ast.stmt]) -> dict[str, str]:
    """Local name -> the name it imports, as `analysis/imports.py` writes it (`.utils.mask`); a
    star import as `*<module>` -> `<module>` (see `ModuleSummary.stars`)."""
    bound: dict[str, str] = {}
    for statement in _top_statements(body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    bound[head] = head
        elif isinstance(statement, ast.ImportFrom):
            module = "." * statement.level + (statement.module or "")
            separator = "" if not module or module.endswith(".") else "."
            for alias in statement.names:
                if alias.name == "*":
                    bound[f"*{module}"] = module
                else:
                    bound[alias.asname or alias.name] = f"{module}{separator}{alias.name}"
    return bound


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _written(node: ast.expr, imports: dict[str, str]) -> str | None:
    """The name through the imports (`torch.nn.Module` for `nn.Module`), else as written."""
    dotted = _dotted(node)
    if dotted is None:
        return None
    head, dot, rest = dotted.partition(".")
    target = imports.get(head)
    if target is None:
        return dotted
    return f"{target}.{rest}" if dot else target


def _class(classdef: ast.ClassDef, imports: dict[str, str], offset: int) -> ClassSummary:
    methods = {
        statement.name: _function(statement, imports, offset)
        for statement in classdef.body if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    initializer = next((s for s in classdef.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    buffers, attributes, assigned = _instance_setup(initializer, imports, offset) if initializer is not None \
        else ((), {}, {})
    # A generic base is its class: `Model` of `Model[DT]`.
    bases = tuple(_written(base.value if isinstance(base, ast.Subscript) else base, imports) or "?"
                  for base in classdef.bases)
    forward = next((s for s in classdef.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
    output = _output_activation(forward, attributes, imports, offset) if forward is not None else None
    return ClassSummary(classdef.lineno + offset, bases, methods, buffers, attributes, output, assigned)


_ACTIVATION_FUNCTIONS = {**dict.fromkeys(SOFTMAX_FUNCTIONS, "softmax"), **dict.fromkeys(SIGMOID_FUNCTIONS, "sigmoid")}
# A class's output kind is what a loss must not be given: probabilities where it wants logits,
# raw scores ("logits") where it wants log-probabilities. Never log-probabilities themselves.
_ACTIVATION_LAYERS = {
    **{layer: kind for layer, kind in ACTIVATION_LAYERS.items() if kind != "log_softmax"},
    **dict.fromkeys(SCORE_LAYERS, "logits"),
}


def _output_activation(forward: ast.FunctionDef, attributes: dict[str, str], imports: dict[str, str],
                       offset: int) -> tuple[str, int, int] | None:
    """What every `return` of `forward` ends in: `F.softmax(x, 1)`, `x.sigmoid()`, a
    `self.softmax = nn.Softmax(1)` layer, a `self.fc = nn.Linear(...)` layer (raw scores), or a local last assigned one of these in the function's
    own straight-line statements (`out = F.softmax(out, dim=1)` then `return out`)."""
    last: dict[str, ast.expr] = {}
    found: set[str] = set()
    first = None
    for statement in forward.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            last[statement.targets[0].id] = statement.value
        for node in _own_nodes(statement):
            if isinstance(node, ast.Return) and node.value is not None:
                value = last.get(node.value.id, node.value) if (
                    isinstance(node.value, ast.Name) and node is statement) else node.value
                found.add(_activation_of(value, attributes, imports))
                first = first or (value.lineno + offset, value.col_offset + 1)
    activation = found.pop() if len(found) == 1 else None
    return (activation, *first) if activation is not None else None


def _own_nodes(statement: ast.stmt):
    """The statement's nodes, nested functions and classes left out."""
    pending = [statement]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(child for child in ast.iter_child_nodes(node) if not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)))


def _activation_of(value: ast.expr, attributes: dict[str, str], imports: dict[str, str]) -> str | None:
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    written = _written(func, imports) or ""
    if written in _ACTIVATION_FUNCTIONS:
        return _ACTIVATION_FUNCTIONS[written]
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "self":
        return _ACTIVATION_LAYERS.get(attributes.get(func.attr, ""))
    return func.attr if func.attr in ("softmax", "sigmoid") and not written.startswith("torch.") else None


def _instance_setup(initializer: ast.FunctionDef, imports: dict[str, str], offset: int):
    """The buffers `__init__` registers by name, what it assigns from calls (`self.x = Callee(...)`)
    and every name it assigns (`self.device = config["device"]`), with the row."""
    self_name = initializer.args.args[0].arg if initializer.args.args else "self"
    buffers: list[str] = []
    attributes: dict[str, str] = {}
    assigned: dict[str, int] = {}
    for node in ast.walk(initializer):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            buffers.append(node.args[0].value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [target.attr for target in targets if _on_instance(target, self_name)]
            for name in names:
                assigned.setdefault(name, node.lineno + offset)
            callee = _written(node.value.func, imports) if isinstance(node.value, ast.Call) else None
            if isinstance(node, ast.Assign) and len(targets) == 1 and names and callee is not None:
                attributes.setdefault(names[0], callee)
    return tuple(buffers), attributes, assigned


def _on_instance(target: ast.expr, self_name: str) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name


def _function(function: ast.FunctionDef | ast.AsyncFunctionDef, imports: dict[str, str], offset: int = 0) -> FunctionSummary:
    """`offset`: rows to add to the nodes' own (for a function parsed alone)."""
    body = _Body(imports, offset)
    body.visit_block(function.body)
    returns = tuple(body.returned(value) for value in body.returns)
    arguments = function.args
    positional = (*arguments.posonlyargs, *arguments.args)
    params = tuple(arg.arg for arg in (*positional, *arguments.kwonlyargs))
    # A flag the function reassigns may differ from what the call passed.
    fixed = set(params) - {node.id for node in ast.walk(function) if isinstance(node, ast.Name)
                           and isinstance(node.ctx, ast.Store)}
    events = tuple((event, callee, row, tuple(flag for flag in flags if flag[0] in fixed))
                   for event, callee, row, flags in body.events)
    return FunctionSummary(function.lineno + offset, returns, events, params, _flag_defaults(arguments), len(positional))


def _flag_defaults(arguments: ast.arguments) -> tuple[tuple[str, bool], ...]:
    positional = (*arguments.posonlyargs, *arguments.args)
    defaults = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults),
                *zip(arguments.kwonlyargs, arguments.kw_defaults)]
    return tuple((arg.arg, default.value) for arg, default in defaults
                 if isinstance(default, ast.Constant) and isinstance(default.value, bool))


def _flag_values(test: ast.expr, holds: bool) -> tuple[tuple[str, bool], ...]:
    """The plain names `test` fixes when it is `holds`: `train` True for `if train:`, False for
    `if not train and valid:`; nothing for what it does not fix (`if a or b:` that holds). The
    summaries read `ast`; the loop analysis asks the same of libcst trees (`loops._flag_values`)."""
    if isinstance(test, ast.Name):
        return ((test.id, holds),)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _flag_values(test.operand, not holds)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if holds else ast.Or):
        return tuple(flag for value in test.values for flag in _flag_values(value, holds))
    return ()


class _Body(ast.NodeVisitor):
    """Returns, local assignments and training-step events of one function body (not nested ones)."""

    def __init__(self, imports: dict[str, str], offset: int) -> None:
        self.imports = imports
        self.offset = offset
        self.returns: list[ast.expr] = []
        self.assigned: dict[str, ast.expr | None] = {}
        self.events: list[tuple[str, str, int, tuple[tuple[str, bool], ...]]] = []
        # The flag values the `if`s around the visited node require.
        self.flags: tuple[tuple[str, bool], ...] = ()

    def emit(self, event: str, callee: str, node: ast.AST) -> None:
        self.events.append((event, callee, node.lineno + self.offset, self.flags))

    def visit_block(self, statements: list[ast.stmt]) -> None:
        """The statements of a block in order. After `if eval: return loss` (an `if` whose body
        leaves the function), the rest of the block runs only where its test is false."""
        around = self.flags
        for statement in statements:
            self.visit(statement)
            if isinstance(statement, ast.If) and not statement.orelse and statement.body \
                    and isinstance(statement.body[-1], (ast.Return, ast.Raise)):
                self.flags += _flag_values(statement.test, False)
        self.flags = around

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        around = self.flags
        for branch, holds in ((node.body, True), (node.orelse, False)):
            self.flags = around + _flag_values(node.test, holds)
            self.visit_block(branch)
        self.flags = around

    def visit_FunctionDef(self, node) -> None:
        return  # a nested function runs only when called

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)
            self.visit(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.assigned[target.id] = None if target.id in self.assigned else node.value
            elif _is_grad(target):
                self.emit(ZERO_GRAD if _is_none(node.value) else "grad set", "", node)
            else:
                self.visit(target)

    def visit_Delete(self, node: ast.Delete) -> None:
        if any(_is_grad(target) for target in node.targets):
            self.emit(ZERO_GRAD, "", node)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute):
            mode = _mode_switch(node, func)
            if mode is not None and _dotted(func.value) is not None:
                self.emit(mode, _dotted(func.value), node)
                return
            event = self._method_event(node, func)
            if event is not None:
                self.emit(event, "", node)
                return
        dotted = _dotted(func)
        # Only calls that can reach another function of the project: local or imported names, and
        # `self.<method>(...)`, a method of the same class.
        if dotted is not None and ("." not in dotted or dotted.split(".", 1)[0] in self.imports or (
                dotted.startswith("self.") and dotted.count(".") == 1)):
            written = _written(func, self.imports) or dotted
            if not written.startswith("torch."):
                self.emit(CALL, written, node)

    def _method_event(self, call: ast.Call, func: ast.Attribute) -> str | None:
        method, receiver = func.attr, func.value
        if method == "backward":
            return BACKWARD
        if method == "item" and not call.args:
            return ITEM
        if any(word in method for word in _CLEARING_WORDS) or (method == "zero_" and _is_grad(receiver)):
            return ZERO_GRAD
        if method == "step":
            role = self._role(receiver)
            if role in (Role.OPTIMIZER, Role.SCALER):
                return OPTIMIZER_STEP
            if role is Role.SCHEDULER:
                return SCHEDULER_STEP
        return None

    def _role(self, receiver: ast.expr) -> Role | None:
        made = self.assigned.get(receiver.id) if isinstance(receiver, ast.Name) else None
        if isinstance(made, ast.Call):
            callee = _written(made.func, self.imports)
            role = role_of_constructor(callee) if callee else None
            if role is not None:
                return role
        hint = receiver.id if isinstance(receiver, ast.Name) else receiver.attr if isinstance(receiver, ast.Attribute) else ""
        return role_from_name(hint)

    # Returned values ----------------------------------------------------------------------

    def returned(self, value: ast.expr) -> Returned:
        row, column = value.lineno + self.offset, value.col_offset + 1
        value = self._local(value)
        tensor = self._default_tensor(value, 0)
        if tensor is not None:
            return Returned(TENSOR, _written(tensor.func, self.imports) or "", tensor.lineno + self.offset, tensor.col_offset + 1)
        value = _without_fluent_calls(self._local(value), self)
        if not isinstance(value, ast.Call):
            return Returned(OTHER, "", row, column)
        callee = _written(value.func, self.imports)
        if callee is None:
            return Returned(OTHER, "", row, column)
        if is_torch_module_class(callee) or is_model_factory(callee):
            return Returned(MODULE, callee, row, column)
        role = role_of_constructor(callee) if callee.startswith("torch.") or callee[:1].isupper() else None
        if role is not None:
            return Returned(ROLES[role], callee, row, column)
        if callee.startswith("torch."):
            return Returned(OTHER, callee, row, column)
        return Returned(CALL, callee, row, column)

    def _local(self, value: ast.expr) -> ast.expr:
        """A local name assigned once in the function: the value it was assigned."""
        if isinstance(value, ast.Name):
            assigned = self.assigned.get(value.id)
            if assigned is not None:
                return assigned
        return value

    def _default_tensor(self, value: ast.expr, depth: int) -> ast.Call | None:
        """The factory call that put the tensor `value` on the default device, when it did."""
        value = self._local(value)
        if not isinstance(value, ast.Call) or depth > 4:
            return None
        callee = _written(value.func, self.imports)
        if callee in SIZE_FACTORIES or callee in DATA_FACTORIES or callee in LEGACY_CONSTRUCTORS:
            return value if _placed_nowhere(value, callee) else None
        if callee in _KEEPING_FUNCTIONS and value.args and _only_numbers(value.args[1:]):
            return self._default_tensor(value.args[0], depth + 1)
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in _KEEPING_METHODS and not (callee or "").startswith("torch."):
            return self._default_tensor(func.value, depth + 1) if _only_numbers(value.args) else None
        return None


def _placed_nowhere(call: ast.Call, callee: str) -> bool:
    """No `device=` (nor `**kwargs` that may hold one), and at least one dimension."""
    if any(keyword.arg in ("device", None) for keyword in call.keywords):
        return False
    if callee in DATA_FACTORIES:
        return bool(call.args) and isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp))
    return bool(call.args) and not (len(call.args) == 1 and isinstance(call.args[0], ast.Tuple) and not call.args[0].elts)


def _only_numbers(args: list[ast.expr]) -> bool:
    """Sizes and numbers: literals, names, `x.shape[1]`, `n + 1` (never a tensor-making call)."""
    return all(not isinstance(node, ast.Call) for arg in args for node in ast.walk(arg))


def _without_fluent_calls(value: ast.expr, body: _Body) -> ast.expr:
    """`Net()` for `Net().to(device).eval()` (a few steps: `x = x.to(device)` names itself)."""
    for _ in range(8):
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in (
            "to", "cuda", "cpu", "eval", "train", "float", "half", "double", "bfloat16", "requires_grad_"
        )):
            break
        value = body._local(value.func.value)
    return value


def _mode_switch(call: ast.Call, func: ast.Attribute) -> str | None:
    """`m.eval()`, `m.train(False)`: EVAL_MODE; `m.train()`, `m.train(flag)`: TRAIN_MODE (a flag,
    `True` by default in the training code that passes one, is taken as training: no eval switch
    is ever inferred from it)."""
    mode = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if func.attr == "eval" and mode is None:
        return EVAL_MODE
    if func.attr == "train":
        return EVAL_MODE if isinstance(mode, ast.Constant) and mode.value is False else TRAIN_MODE
    return None


def _is_grad(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


# Calls that pass tensors on the GPU ----------------------------------------------------------


@dataclass(frozen=True)
class PlacingCall:
    """A call of `callee` (as written through the imports) that passes a tensor moved to the
    GPU or the working device as the arguments `placed` (positions and keywords)."""

    callee: str
    placed: tuple[int | str, ...]
    row: int
    column: int


def placing_calls(pieces: list[tuple[str, int]], imports: dict[str, str]) -> dict[str, tuple[PlacingCall, ...]]:
    """The calls in these top-level statements (pieces of a module's text, with their first rows;
    names read through the module's `imports`) that pass a placed tensor (`x.cuda()`,
    `x.to(device)`, a local name last assigned one, or a value computed from one), by the called
    name (`f` of `f(...)` and of `mod.f(...)`). A piece that does not parse is left out."""
    tree = _parsed(pieces)
    found: dict[str, list[PlacingCall]] = {}
    for scope in (tree, *(node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))):
        for name, call in _ScopeCalls(imports).calls(scope):
            found.setdefault(name, []).append(call)
    return {name: tuple(calls) for name, calls in found.items()}


def _parsed(pieces: list[tuple[str, int]]) -> ast.Module:
    """One module of these pieces of a module's text, at their rows; a piece that does not parse is left out."""
    tree = ast.Module(body=[], type_ignores=[])
    for piece, row in pieces:
        try:
            parsed = ast.parse(piece)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        tree.body.extend(ast.increment_lineno(parsed, row - 1).body)
    return tree


@dataclass(frozen=True)
class WrittenArguments:
    """A call of `callee` (as written through the imports) and the arguments it writes out."""

    callee: str
    positional: int
    keywords: frozenset[str]
    unpacks: bool  # `f(*args)` or `f(**options)`: it may pass any parameter
    row: int
    column: int


def calls_named(pieces: list[tuple[str, int]], imports: dict[str, str], function: str) -> tuple[WrittenArguments, ...]:
    """The calls of `function` (`function(...)`, `module.function(...)`) in these pieces of a
    module's text, at any depth, with the arguments each writes out."""
    found = []
    for node in ast.walk(_parsed(pieces)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        callee = _written(func, imports) if called == function else None
        if callee is not None:
            keywords = frozenset(keyword.arg for keyword in node.keywords if keyword.arg)
            unpacks = any(isinstance(arg, ast.Starred) for arg in node.args) or len(keywords) < len(node.keywords)
            found.append(WrittenArguments(callee, len(node.args), keywords, unpacks, node.lineno, node.col_offset + 1))
    return tuple(sorted(found, key=lambda call: (call.row, call.column)))


class _ScopeCalls(ast.NodeVisitor):
    """The placing calls of one scope's own statements, in source order."""

    def __init__(self, imports: dict[str, str]) -> None:
        self.imports = imports
        self.placed_names: set[str] = set()
        self.found: list[tuple[str, PlacingCall]] = []

    def calls(self, scope: ast.AST) -> list[tuple[str, PlacingCall]]:
        for statement in scope.body:
            self.visit(statement)
        return self.found

    def visit_FunctionDef(self, node) -> None:
        return  # its own scope

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        placed = _places(node.value, self.placed_names)
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = node.value.elts if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) else None
            for index, element in enumerate(names):
                if isinstance(element, ast.Name):
                    moved = _places(values[index], self.placed_names) if values is not None and index < len(values) else placed
                    (self.placed_names.add if moved else self.placed_names.discard)(element.id)

    def visit_For(self, node: ast.For) -> None:
        for target in ast.walk(node.target):
            if isinstance(target, ast.Name):
                self.placed_names.discard(target.id)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called is None:
            return
        placed = [index for index, arg in enumerate(node.args) if _places(arg, self.placed_names)]
        placed += [keyword.arg for keyword in node.keywords if keyword.arg and _places(keyword.value, self.placed_names)]
        callee = _written(func, self.imports)
        if placed and callee is not None:
            self.found.append((called, PlacingCall(callee, tuple(placed), node.lineno, node.col_offset + 1)))


def _places(value: ast.expr, placed_names: set[str]) -> bool:
    """`x.cuda()`, `x.to(device)` / `x.to("cuda")`, a name last assigned one of them, or what is
    computed from such a name (`model(imgs)`, `pred[i]`), short of leaving the device."""
    if isinstance(value, ast.Name):
        return value.id in placed_names
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        method = value.func.attr
        if method == "cuda":
            return True
        if method in _LEAVING_THE_DEVICE:
            return False
        if method == "to" and value.args:
            target = ast.unparse(value.args[0])
            return ("device" in target or "cuda" in target) and "cpu" not in target
    if isinstance(value, ast.Call):
        called = _dotted(value.func) or ""
        if called in _NOT_TENSORS or called.rsplit(".", 1)[-1][:1].isupper():
            return False  # `len(x)`, or an object built from the tensor (`DataParallel(net)`)
    return bool(placed_names) and isinstance(value, (ast.Call, ast.BinOp, ast.Subscript, ast.Attribute)) and any(
        isinstance(node, ast.Name) and node.id in placed_names for node in ast.walk(value))


_LEAVING_THE_DEVICE = frozenset({"cpu", "numpy", "item", "tolist"})
_NOT_TENSORS = frozenset({"len", "float", "int", "str", "print", "range", "enumerate"})


def attributes_moved_by_apply(source: bytes) -> frozenset[str]:
    """The attribute names that an `_apply(self, fn)` override of the file moves on another
    object: `m.stride = fn(m.stride)`, `m.grid = list(map(fn, m.grid))` (YOLO's Model moving its
    Detect head's plain tensors, which `nn.Module._apply` leaves behind)."""
    if b"def _apply(" not in source:
        return frozenset()
    found: set[str] = set()
    for piece, _ in top_level_pieces(source.decode("utf-8", "replace")):
        if "def _apply(" not in piece:
            continue
        try:
            tree = ast.parse(piece)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for method in ast.walk(tree):
            if isinstance(method, ast.FunctionDef) and method.name == "_apply" and len(method.args.args) >= 2:
                found.update(_moved_with(method, method.args.args[1].arg))
    return frozenset(found)


def _moved_with(method: ast.FunctionDef, function: str) -> set[str]:
    """The attributes `method` assigns a value made with `function` (`x.a = fn(x.a)`)."""
    found = set()
    for node in ast.walk(method):
        if isinstance(node, ast.Assign) and any(
                isinstance(name, ast.Name) and name.id == function for name in ast.walk(node.value)):
            found.update(target.attr for target in node.targets if isinstance(target, ast.Attribute))
    return found


def grad_modes_of_calls(source: bytes, name: str) -> tuple[bool, ...]:
    """Whether autograd is off at each call of `name` in the file, as a function or a method of
    anything (`self.model.label_sentences(batch)`): inside `with torch.no_grad():`,
    `torch.inference_mode()` or `torch.set_grad_enabled(False)`, or a function decorated with one
    (a helper named so too: `@smart_inference_mode()`)."""
    try:
        tree = ast.parse(source)  # whole: a decorator is a piece of its own in `top_level_pieces`
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return (False,)  # calls that cannot be read may run with autograd on
    found: list[bool] = []
    _collect_grad_modes(tree, name, False, found)
    return tuple(found)


def _collect_grad_modes(node: ast.AST, name: str, off: bool, found: list[bool]) -> None:
    for child in ast.iter_child_nodes(node):
        inner = off
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = any(_switches_grad_off(decorator) for decorator in child.decorator_list)
        elif isinstance(child, (ast.With, ast.AsyncWith)):
            inner = off or any(_switches_grad_off(item.context_expr) for item in child.items)
        elif isinstance(child, ast.Call):
            func = child.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called == name:
                found.append(off)
        if isinstance(child, ast.withitem):
            continue  # the context managers themselves run before the block
        _collect_grad_modes(child, name, inner, found)


def _switches_grad_off(expr: ast.expr) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `@torch.no_grad`, `torch.set_grad_enabled(False)`,
    or a helper named for one of them (`smart_inference_mode()`)."""
    call = expr if isinstance(expr, ast.Call) else None
    func = call.func if call is not None else expr
    written = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if written == "set_grad_enabled":
        return call is not None and bool(call.args) and isinstance(call.args[0], ast.Constant) \
            and call.args[0].value is False
    return written.endswith(("no_grad", "inference_mode"))
