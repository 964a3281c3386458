"""Loop and training-step structure: what one iteration of each loop calls, and in which order.

For every `for`/`while` loop the analysis lists the training-step events of one iteration in
evaluation order: `backward()`, optimizer `step()`, scheduler `step()`, `zero_grad()` (and other
ways to clear gradients), `GradScaler` calls, gradient clipping, and calls that need gradients
(`torch.autograd.grad`, `requires_grad_`). Nested loops are part of the iteration of the loops
around them, and so are the bodies of functions defined in the same file and called from the loop
(`train_step(batch)`, `self.train_step(batch)`), up to a few calls deep. Each event knows the `if`
statements it sits under (relative to the loop), whether one of them is a throttle
(`if step % log_every == 0`), the nested loops it is in, and the local calls it was reached
through.

Who is an optimizer, a scheduler or a GradScaler is read from how the name was created anywhere in
the file (`torch.optim.AdamW(...)`, `get_scheduler(...)`, `GradScaler(...)`) and, when unknown,
from the name itself (`optimizer`, `opt_g`, `lr_scheduler`, `scaler`).

Everything is computed lazily, the first time a rule asks: files with no loop question pay
nothing, and `training_loops()` answers at once for files that never call `backward(` or
`.step(`. The analysis reads the tree itself (it is asked about whole loops, not about the point
of the walk), skipping the bodies of nested functions, classes and lambdas, which a loop defines
but does not run.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.dataflow import assigned_names
from torchlint.analysis.imports import ImportTable
from torchlint.analysis.names import (
    argument, dotted_name, keyword_arg, nested_statement_lists, positional_args, suite_statements,
)
from torchlint.walker import child_nodes

if TYPE_CHECKING:
    from torchlint.analysis.project_facts import Fact, Note, ProjectFacts, StepEvent

Loop = cst.For | cst.While

# How deep calls to functions of this file are followed from a loop.
MAX_CALL_DEPTH = 4

# A file can hold a training step only if it calls backward, or steps something next to a word
# that names an optimizer or a GradScaler (diffusion pipelines step noise schedulers only).
_BACKWARD_TEXT = re.compile(r"backward\(")
_STEP_TEXT = re.compile(r"\.step\(")
_OPTIMIZER_TEXT = re.compile(r"[oO]ptim|[sS]caler|\bopts?(?:\b|_|\d|[A-Z])|_opts?\b")


class Kind(enum.Enum):
    BACKWARD = "backward"
    OPTIMIZER_STEP = "optimizer step"
    SCHEDULER_STEP = "scheduler step"
    ZERO_GRAD = "zero_grad"  # any way of clearing gradients: zero_grad(), p.grad = None, p.grad.zero_()
    GRAD_SET = "grad set"  # gradients written by hand: p.grad = g, p.grad.copy_(g) (gradient surgery)
    SCALER_SCALE = "scaler.scale"
    SCALER_UNSCALE = "scaler.unscale_"
    SCALER_UPDATE = "scaler.update"
    CLIP = "clip"
    NEEDS_GRAD = "needs grad"  # autograd.grad, requires_grad_(), enable_grad(): code that wants gradients
    OPTIMIZER_CREATED = "optimizer created"  # `opt = torch.optim.SGD(...)` inside the loop
    EVAL_MODE = "eval mode"  # `model.eval()`, `model.train(False)`: target is the module
    TRAIN_MODE = "train mode"  # `model.train()`, `model.train(True)`


class Role(enum.Enum):
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    SCALER = "scaler"


@dataclass(frozen=True)
class Condition:
    """One branch of an `if` (or `try` handler, `match` case) an event sits under."""

    node: cst.CSTNode
    branch: int
    throttle: bool
    # What the branch requires of flags of the function it is in: parameters the function never
    # assigns (`if train:` of `def run_epoch(self, epoch, train=True)`), as (id of the function, name, value).
    requires: tuple[tuple[int, str, bool], ...] = ()


@dataclass(frozen=True)
class Event:
    kind: Kind
    node: cst.CSTNode  # the call (or the assignment, for `p.grad = None`)
    # What the event acts on, as written: the optimizer of a step or a zero_grad (`opt`, `self.optimizer`,
    # the argument of `scaler.step(opt)`), the tensor of a backward (`loss`); None when not known.
    target: cst.BaseExpression | None = None
    conditions: tuple[Condition, ...] = ()
    loops: tuple[Loop, ...] = ()  # nested loops between the iteration's loop and the event
    via: tuple[cst.Call, ...] = ()  # calls of functions of this file through which it is reached
    scaled: bool = False  # a backward through `scaler.scale(loss).backward()`
    has_args: bool = False  # the step/zero_grad call passes arguments
    # Where an event of a function of another project file happens there (torchlint/project/).
    elsewhere: "Note | None" = None

    @property
    def conditional(self) -> bool:
        return bool(self.conditions)

    @property
    def throttled(self) -> bool:
        return any(condition.throttle and condition.branch == 0 for condition in self.conditions)

    @property
    def target_text(self) -> str | None:
        return _text(self.target)

    def exclusive_with(self, other: "Event") -> bool:
        """The two events sit in different branches of one `if`: never both in one iteration."""
        branches = {id(condition.node): condition.branch for condition in self.conditions}
        return any(
            id(condition.node) in branches and branches[id(condition.node)] != condition.branch
            for condition in other.conditions
        )

    def _nested(self, conditions, loops, via) -> "Event":
        return Event(
            self.kind, self.node, self.target, conditions + self.conditions, loops + self.loops,
            via + self.via, self.scaled, self.has_args, self.elsewhere,
        )


@dataclass
class Iteration:
    """The events of one iteration of a loop (or one call of a function), in evaluation order."""

    owner: Loop | cst.FunctionDef
    events: tuple[Event, ...]

    def of_kind(self, *kinds: Kind) -> list[Event]:
        return [event for event in self.events if event.kind in kinds]

    @property
    def calls_backward(self) -> bool:
        return any(event.kind is Kind.BACKWARD for event in self.events)

    @property
    def steps_optimizer(self) -> bool:
        return any(event.kind is Kind.OPTIMIZER_STEP for event in self.events)

    @property
    def is_training_step(self) -> bool:
        """The loop runs training steps: it calls `backward()` or an optimizer `step()`."""
        return self.calls_backward or self.steps_optimizer

    @property
    def steps_each_iteration(self) -> bool:
        """A backward or an optimizer step runs in the iteration itself, not only in a nested loop:
        an epoch loop around the batch loop runs no step of its own."""
        return any(event.kind in (Kind.BACKWARD, Kind.OPTIMIZER_STEP) and not event.loops for event in self.events)

    @property
    def clears_gradients(self) -> bool:
        return any(event.kind in (Kind.ZERO_GRAD, Kind.GRAD_SET) for event in self.events)

    @property
    def needs_grad(self) -> bool:
        """The loop wants gradients (backward, autograd.grad, requires_grad_...)."""
        return any(event.kind in (Kind.BACKWARD, Kind.NEEDS_GRAD) for event in self.events)

    def backward_subjects(self) -> set[str]:
        """The names whose `backward()` this loop calls itself (`loss` for `scaler.scale(loss).backward()`).

        Backward calls reached through a called function are left out: their names are the callee's.
        """
        return {
            name for event in self.of_kind(Kind.BACKWARD) if not event.via and (name := _text(event.target))
        }


# Names and roles ---------------------------------------------------------------------------------


def _text(expr: cst.BaseExpression | None) -> str | None:
    if expr is None:
        return None
    if isinstance(expr, cst.Subscript):
        # `optimizers[0]`, `opts[name]`, `optim["g"]`: the same text is the same optimizer.
        base = dotted_name(expr.value)
        element = expr.slice[0].slice if len(expr.slice) == 1 else None
        index = element.value if isinstance(element, cst.Index) else None
        if base is None or not isinstance(index, (cst.Integer, cst.Name, cst.SimpleString)):
            return None
        return f"{base}[{index.value}]"
    return dotted_name(expr)


def name_hint(expr: cst.BaseExpression | None) -> str:
    """The last word of an expression's name, lower-cased: `optimizer` for `self.optimizer`."""
    while True:
        if isinstance(expr, cst.Attribute):
            return expr.attr.value.lower()
        if isinstance(expr, cst.Name):
            return expr.value.lower()
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        else:
            return ""


_OPTIMIZER_NAME = re.compile(r"(\w+_)?opts?(_\w+|\d+|[gd])?")


def role_from_name(hint: str) -> Role | None:
    hint = hint.lower()
    if "sched" in hint:
        return Role.SCHEDULER
    if "scaler" in hint:
        return Role.SCALER
    if "optim" in hint or _OPTIMIZER_NAME.fullmatch(hint):
        return Role.OPTIMIZER
    return None


_OPTIMIZER_CLASSES = re.compile(
    r"(Adam|AdamW|SGD|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|LBFGS|SparseAdam|ASGD|Rprop|Adafactor"
    r"|Lion|Lamb|LAMB|Fused\w+|\w*Adam\w*8bit|Muon|Shampoo|Prodigy|Sophia\w*|Novograd|NovoGrad|Lars|LARS)"
)
_SCHEDULER_CLASSES = re.compile(r"[A-Z]\w*LR|\w*Plateau|\w*WarmRestarts|[A-Z]\w*Scheduler\w*|get_\w*schedule\w*")


def role_of_constructor(qualified: str) -> Role | None:
    """The role of what a call creates: `torch.optim.SGD` -> optimizer, `get_scheduler` -> scheduler."""
    last = qualified.rsplit(".", 1)[-1].lstrip("_")
    lowered = last.lower()
    if ".lr_scheduler." in qualified or _SCHEDULER_CLASSES.fullmatch(last) or (
        _FACTORY.fullmatch(lowered) and "sched" in lowered
    ):
        return Role.SCHEDULER
    if "scaler" in lowered and (last[:1].isupper() or _FACTORY.fullmatch(lowered)):
        return Role.SCALER
    if qualified.startswith("torch.optim.") and last[:1].isupper():
        return Role.OPTIMIZER
    if _OPTIMIZER_CLASSES.fullmatch(last) or (last[:1].isupper() and last.endswith(("Optimizer", "Optimiser"))):
        return Role.OPTIMIZER
    if lowered in ("optimizers", "optimizer") or (_FACTORY.fullmatch(lowered) and "optim" in lowered):
        return Role.OPTIMIZER
    return None


# What functions of other project files return and do (torchlint/project/summary.py's names).
_PROJECT_ROLES = {"optimizer": Role.OPTIMIZER, "scheduler": Role.SCHEDULER, "scaler": Role.SCALER}
_PROJECT_EVENTS = {
    "backward": Kind.BACKWARD, "optimizer step": Kind.OPTIMIZER_STEP, "scheduler step": Kind.SCHEDULER_STEP,
    "zero_grad": Kind.ZERO_GRAD, "grad set": Kind.GRAD_SET, "eval mode": Kind.EVAL_MODE, "train mode": Kind.TRAIN_MODE,
}

# `create_optimizer`, `build_lr_scheduler`, `get_scheduler`: functions that make one.
_FACTORY = re.compile(r"(create|build|get|make|init|setup|configure|instantiate|new)_\w+")


# Throttles -----------------------------------------------------------------------------------------


def is_throttle(test: cst.BaseExpression) -> bool:
    """`step % N == 0`, `(i + 1) % accum == 0`, `not step % N`, alone or inside `and`/`or`."""
    if isinstance(test, cst.BooleanOperation):
        return is_throttle(test.left) or is_throttle(test.right)
    if isinstance(test, cst.UnaryOperation):
        return is_throttle(test.expression)
    if isinstance(test, cst.Comparison):
        return _is_modulo(test.left) or any(_is_modulo(target.comparator) for target in test.comparisons)
    return _is_modulo(test)


def is_limited(statement: cst.If) -> bool:
    """`if shown < 3: ...; shown += 1`: the body runs a bounded number of times, whatever the loop."""
    counters = {
        small.target.value
        for line in suite_statements(statement.body) if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
        if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) and isinstance(small.target, cst.Name)
    }
    return bool(counters) and _compares_below(statement.test, counters)


def _compares_below(test: cst.BaseExpression, counters: set[str]) -> bool:
    if isinstance(test, cst.BooleanOperation):
        return _compares_below(test.left, counters) or _compares_below(test.right, counters)
    return (
        isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value in counters
        and any(isinstance(target.operator, (cst.LessThan, cst.LessThanEqual)) for target in test.comparisons)
    )


def _unthrottled_calls(node: cst.CSTNode) -> list[cst.Call]:
    """The calls a block runs each time it runs: not under a throttle or a limit, not in a nested
    function, class or lambda."""
    found: list[cst.Call] = []
    pending: list[cst.CSTNode] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, cst.If) and (is_throttle(current.test) or is_limited(current)):
            pending.append(current.test)
            continue
        if isinstance(current, cst.Call):
            found.append(current)
        pending.extend(child_nodes(current))
    return found


def _is_modulo(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.Modulo)
        and not isinstance(expr.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
    )


# Where things are ----------------------------------------------------------------------------------


@dataclass
class _Scope:
    """A function (or the module) and the functions defined directly in it."""

    node: cst.CSTNode | None  # FunctionDef, or None for module level
    parent: "_Scope | None"
    classdef: cst.ClassDef | None  # the class a method is defined in
    functions: dict[str, cst.FunctionDef]


class _Index:
    """One pass over the statements of the file (never into expressions)."""

    def __init__(self, module: cst.Module, imports: ImportTable, project: ProjectFacts | None) -> None:
        self.imports = imports
        self.project = project
        self.scope_of_function: dict[int, _Scope] = {}  # the scope a FunctionDef's body opens
        self.scope_of_loop: dict[int, _Scope] = {}
        self.methods: dict[int, dict[str, cst.FunctionDef]] = {}  # id(ClassDef) -> name -> def
        self.classes: dict[str, cst.ClassDef] = {}
        self.loops: list[Loop] = []
        self.functions: list[cst.FunctionDef] = []
        self.roles: dict[str, set[Role | None]] = {}
        # Written name -> (the function it is assigned in, or None, the call assigned to it).
        self.creations: dict[str, list[tuple[cst.FunctionDef | None, cst.Call]]] = {}
        # Names bound to an instance of a class of another project file (`trainer = Trainer(...)`):
        # the class's name as the import table writes it (`engine.Trainer`), to ask for its methods.
        self.instances: dict[str, str] = {}
        root = _Scope(None, None, None, {})
        self.module_scope = root
        self._statements(module.body, root, None)

    def _statements(self, statements, scope: _Scope, classdef: cst.ClassDef | None) -> None:
        for statement in statements:
            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                        for target in small.targets:
                            self._record_creation(target.target, small.value, scope)
                    elif isinstance(small, cst.AnnAssign) and isinstance(small.value, cst.Call):
                        self._record_creation(small.target, small.value, scope)
                continue
            if isinstance(statement, cst.FunctionDef):
                if classdef is not None:
                    self.methods.setdefault(id(classdef), {})[statement.name.value] = statement
                else:
                    scope.functions[statement.name.value] = statement
                inner = _Scope(statement, scope, classdef, {})
                self.functions.append(statement)
                self.scope_of_function[id(statement)] = inner
                self._statements(statement.body.body, inner, None)
                continue
            if isinstance(statement, cst.ClassDef):
                self.classes.setdefault(statement.name.value, statement)
                self.methods.setdefault(id(statement), {})
                self._statements(statement.body.body, scope, statement)
                continue
            if isinstance(statement, (cst.For, cst.While)):
                self.loops.append(statement)
                self.scope_of_loop[id(statement)] = scope
            for block in nested_statement_lists(statement):
                self._statements(block, scope, classdef)

    def _record_creation(self, target: cst.BaseExpression, call: cst.Call, scope: _Scope) -> None:
        written = dotted_name(target)
        if written is None:
            return
        qualified = self.project_callable(call.func)
        fact = self._project_fact(qualified)
        if fact is not None and fact.kind in ("class", "module class"):
            self.instances[written] = qualified
        self.roles.setdefault(written, set()).add(_created_role(call.func, qualified, fact))
        self.creations.setdefault(written, []).append((scope.node, call))

    def role_of_call(self, call: cst.Call) -> Role | None:
        """What `call` creates: from the callee's name, else from what a project function (or a
        method of a project class) returns."""
        qualified = self.project_callable(call.func)
        return _created_role(call.func, qualified, self._project_fact(qualified))

    def _project_fact(self, qualified: str | None) -> Fact | None:
        return self.project.lookup(qualified) if qualified is not None and self.project is not None else None

    def project_callable(self, func: cst.BaseExpression) -> str | None:
        """The name to ask the project about for a callee: through the imports (`utils.build`),
        or a method of an instance of a project class (`engine.Trainer.train_step` for
        `trainer.train_step`)."""
        qualified = self.imports.qualified_name(func)
        if qualified is not None or not isinstance(func, cst.Attribute):
            return qualified
        owner = dotted_name(func.value)
        return f"{self.instances[owner]}.{func.attr.value}" if owner in self.instances else None


def _created_role(func: cst.BaseExpression, qualified: str | None, fact: Fact | None) -> Role | None:
    """The role of what a call creates: from the callee's name, else from the project's answer."""
    callee = qualified or dotted_name(func)
    role = role_of_constructor(callee) if callee else None
    return role if role is not None or fact is None else _PROJECT_ROLES.get(fact.kind)


# The analysis -------------------------------------------------------------------------------------


_CLIP_FUNCTIONS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
_GRAD_FUNCTIONS = frozenset(
    {"torch.autograd.grad", "torch.func.grad", "torch.func.vjp", "torch.func.jvp", "torch.func.jacrev",
     "torch.func.jacfwd", "torch.func.linearize", "torch.func.grad_and_value", "torch.func.hessian",
     "torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.functional.jacobian",
     "torch.autograd.functional.vjp", "torch.autograd.functional.jvp", "torch.autograd.functional.hessian",
     "torch.autograd.functional.hvp", "torch.autograd.functional.vhp"}
)
_CLEARING_WORDS = ("zero_grad", "reset_grad", "clear_grad", "zero_grads")
# `nn.Module` methods that return the module itself.
_SELF_RETURNING_MODULE_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "train", "eval", "requires_grad_", "to_empty"}
)
# Objects whose `backward(loss)` method back-propagates its argument.
_BACKWARD_OWNERS = ("accelerator", "fabric", "engine", "trainer", "strategy", "precision", "plugin")


class LoopAnalysis:
    """Loop questions for one file; see the module docstring."""

    def __init__(self, module: cst.Module, imports: ImportTable, source: str, project: ProjectFacts | None = None) -> None:
        self._module = module
        self._imports = imports
        self._source = source
        self.project = project
        self._has_training_text = _BACKWARD_TEXT.search(source) is not None or (
            _STEP_TEXT.search(source) is not None and _OPTIMIZER_TEXT.search(source) is not None
        )
        self._index: _Index | None = None
        self._loop_events: dict[int, tuple[Event, ...]] = {}
        self._function_events: dict[int, tuple[Event, ...]] = {}
        self._fixed_flags: dict[int, frozenset[str]] = {}
        self._in_progress: set[int] = set()
        self._iterations: dict[int, Iteration] = {}
        self._function_iterations: dict[int, Iteration] = {}
        self._roles: dict[str, Role | None] = {}
        self._step_calls: dict[int, list[tuple[Loop, cst.Call]]] | None = None

    @property
    def index(self) -> _Index:
        if self._index is None:
            self._index = _Index(self._module, self._imports, self.project)
        return self._index

    # Queries -----------------------------------------------------------------------------

    def loops(self) -> list[Loop]:
        """Every `for`/`while` statement of the file, outer loops before the loops they hold."""
        return self.index.loops

    def iteration(self, loop: Loop) -> Iteration:
        found = self._iterations.get(id(loop))
        if found is None:
            found = Iteration(loop, self._events_of_loop(loop, self.index.scope_of_loop.get(id(loop)), 0))
            self._iterations[id(loop)] = found
        return found

    def training_loops(self) -> list[Iteration]:
        """The loops that call `backward()` or an optimizer `step()` (directly or through calls).
        None in a file of another framework's autograd (NVIDIA Warp's tape, JAX), which imports
        nothing of torch."""
        if not self._has_training_text and not self._calls_project_training_step \
                or self._imports.other_autograd() is not None:
            return []
        return [iteration for loop in self.loops() if (iteration := self.iteration(loop)).is_training_step]

    @cached_property
    def _calls_project_training_step(self) -> bool:
        """The file calls a function of another project file that calls `backward()` or steps an
        optimizer (asked only of files with loops, and only about the imported names it calls;
        answered once per file, although every rule that asks for the training loops asks it)."""
        if self.project is None or not self.loops():
            return False
        for local, qualified in self._imports.bound_names():
            # A function called by name, or through its module (`engine.train_step(...)`).
            called = local[:1].islower() and (f"{local}(" in self._source or f"{local}." in self._source)
            if qualified.startswith("torch") or not called:
                continue
            if self._trains(qualified):
                return True
        for instance, qualified in self.index.instances.items():
            # A method called on an instance of a project class (`trainer.train_step(...)`). The
            # submodules a model keeps (`self.norm = LayerNorm(...)`), most instances in library
            # code, are not searched for: a training loop runs a step on a local name.
            if instance.startswith("self.") or f"{instance}." not in self._source:
                continue
            for method in re.findall(rf"(?<![\w.]){re.escape(instance)}\.(\w+)\(", self._source):
                if self._trains(f"{qualified}.{method}"):
                    return True
        return False

    def _trains(self, qualified: str) -> bool:
        return any(event.kind in ("backward", "optimizer step") for event in self.project.events(qualified))

    def step_functions(self) -> list[Iteration]:
        """Functions whose body calls `backward()` or an optimizer `step()`: the events of one call.

        Order questions that do not need a loop (zero_grad between backward and step, a clip
        before unscale_) hold for a training-step function whoever calls it.
        """
        if not self._has_training_text:
            return []
        return [iteration for function in self.index.functions if (iteration := self.body(function)).is_training_step]

    def body(self, function: cst.FunctionDef) -> Iteration:
        """The events of one call of a function of this file."""
        iteration = self._function_iterations.get(id(function))
        if iteration is None:
            iteration = Iteration(function, self._events_of_function(function, 0))
            self._function_iterations[id(function)] = iteration
        return iteration

    def step_sequences(self) -> list[Iteration]:
        """Training loops and training-step functions: every ordered sequence an order rule checks."""
        return self.training_loops() + self.step_functions()

    def is_training_loop(self, loop: Loop) -> bool:
        return self._has_training_text and self.iteration(loop).is_training_step

    def per_step_calls(self, function: cst.FunctionDef) -> list[tuple[Loop, cst.Call]]:
        """The training loops that call `function` (a function or method of this file) on every
        step, not under a throttle, each with its call: outer loops first."""
        if not _called_by_name(function.name.value, self._source):
            return []  # never called by its name in this file (most helpers of a library): no loop to build
        if self._step_calls is None:
            self._step_calls = {}
            for iteration in self.training_loops():
                loop = iteration.owner
                if not iteration.steps_each_iteration:
                    continue
                for call in _unthrottled_calls(loop.body):
                    called = self.function_called(call, loop)
                    if called is not None:
                        self._step_calls.setdefault(id(called), []).append((loop, call))
        return self._step_calls.get(id(function), [])

    def creation(self, expr: cst.BaseExpression | None, loop: Loop) -> cst.Call | None:
        """The call assigned to this name in the function that runs `loop`, else the one call the
        file assigns to it anywhere (`scheduler = StepLR(...)` in `main` for `scheduler.step()` in
        a training function); None when that is not one call."""
        found = self.index.creations.get(_text(expr) or "", [])
        scope = self.index.scope_of_loop.get(id(loop))
        here = [call for function, call in found if scope is not None and function is scope.node]
        calls = here or [call for _, call in found]
        return calls[0] if len(calls) == 1 else None

    def role(self, expr: cst.BaseExpression | None) -> Role | None:
        """Optimizer, scheduler or GradScaler: from how the name was created, else from the name."""
        written = _text(expr)
        if written is None:
            return role_from_name(name_hint(expr))
        if written not in self._roles:
            created = self.index.roles.get(written, set()) - {None}
            self._roles[written] = next(iter(created)) if len(created) == 1 else role_from_name(name_hint(expr))
        return self._roles[written]

    # Building events ---------------------------------------------------------------------

    def _events_of_loop(self, loop: Loop, scope: _Scope | None, depth: int) -> tuple[Event, ...]:
        key = id(loop)
        found = self._loop_events.get(key)
        if found is not None:
            return found
        events: list[Event] = []
        scanner = _Scanner(self, scope or self.index.module_scope, depth, events)
        if isinstance(loop, cst.While):
            scanner.expression(loop.test)
        scanner.block(loop.body)
        result = tuple(events)
        self._loop_events[key] = result
        return result

    def _events_of_function(self, function: cst.FunctionDef, depth: int) -> tuple[Event, ...]:
        key = id(function)
        found = self._function_events.get(key)
        if found is not None:
            return found
        if key in self._in_progress:
            return ()
        self._in_progress.add(key)
        events: list[Event] = []
        try:
            _Scanner(self, self.index.scope_of_function[key], depth, events).block(function.body)
        finally:
            self._in_progress.discard(key)
        result = tuple(events)
        self._function_events[key] = result
        return result

    def fixed_flags(self, function: cst.FunctionDef) -> frozenset[str]:
        """The parameters `function` never assigns: one value for the whole of a call."""
        found = self._fixed_flags.get(id(function))
        if found is None:
            names = {param.name.value for param in (*function.params.params, *function.params.kwonly_params)}
            found = self._fixed_flags[id(function)] = frozenset(names - assigned_names(suite_statements(function.body)))
        return found

    def never_together(self, iteration: Iteration, first: Event, second: Event) -> bool:
        """The two events need opposite values of a flag of the function the iteration runs in
        (`if not train:` and `if train:` of `def run_epoch(..., train=True)`), fixed for the
        whole call: no call runs both."""
        owner = iteration.owner if isinstance(iteration.owner, cst.FunctionDef) else \
            getattr(self.index.scope_of_loop.get(id(iteration.owner)), "node", None)
        if not isinstance(owner, cst.FunctionDef):
            return False
        needed = {(name, value) for condition in first.conditions for key, name, value in condition.requires if key == id(owner)}
        return any(
            key == id(owner) and (name, not value) in needed
            for condition in second.conditions for key, name, value in condition.requires
        )

    def function_called(self, call: cst.Call, within: Loop | cst.FunctionDef) -> cst.FunctionDef | None:
        """The function of this file that `call`, written in the loop or function `within`, runs."""
        if isinstance(within, cst.FunctionDef):
            scope = self.index.scope_of_function.get(id(within))
        else:
            scope = self.index.scope_of_loop.get(id(within))
        return self.resolve_call(call, scope or self.index.module_scope)

    def resolve_call(self, call: cst.Call, scope: _Scope) -> cst.FunctionDef | None:
        """The function of this file that a call runs: `helper(...)` or `self.method(...)`."""
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
            current: _Scope | None = scope
            while current is not None:
                found = current.functions.get(name)
                if found is not None:
                    return found
                current = current.parent
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            method = func.attr.value
            current = scope
            while current is not None and current.classdef is None:
                current = current.parent
            if current is None:
                return None
            return self._method(current.classdef, method, 0)
        return None

    def _method(self, classdef: cst.ClassDef, name: str, depth: int) -> cst.FunctionDef | None:
        found = self.index.methods.get(id(classdef), {}).get(name)
        if found is not None or depth > 3:
            return found
        for base in classdef.bases:
            base_name = dotted_name(base.value)
            base_class = self.index.classes.get(base_name or "")
            if base_class is not None and base_class is not classdef:
                found = self._method(base_class, name, depth + 1)
                if found is not None:
                    return found
        return None


class _Scanner:
    """Collects the events of one block in evaluation order."""

    def __init__(self, analysis: LoopAnalysis, scope: _Scope, depth: int, events: list[Event]) -> None:
        self.analysis = analysis
        self.scope = scope
        self.depth = depth
        self.events = events
        self.conditions: tuple[Condition, ...] = ()

    def emit(self, kind: Kind, node: cst.CSTNode, target=None, **flags) -> None:
        self.events.append(Event(kind, node, target, self.conditions, **flags))

    def extend(self, events: tuple[Event, ...], loops: tuple[Loop, ...] = (), via: tuple[cst.Call, ...] = ()) -> None:
        for event in events:
            self.events.append(event._nested(self.conditions, loops, via))

    # Statements ------------------------------------------------------------------------------

    def block(self, block: cst.CSTNode) -> None:
        body = getattr(block, "body", ())
        if isinstance(body, cst.CSTNode):
            self.node(body)
            return
        for statement in body:
            self.node(statement)

    def under(self, condition: Condition, block: cst.CSTNode) -> None:
        saved = self.conditions
        self.conditions = saved + (condition,)
        try:
            self.node(block) if isinstance(block, cst.If) else self.block(block)
        finally:
            self.conditions = saved

    def node(self, node: cst.CSTNode) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return
        if isinstance(node, cst.If):
            self.expression(node.test)
            throttle = is_throttle(node.test)
            self.under(Condition(node, 0, throttle, self._flags_required(node.test, True)), node.body)
            if node.orelse is not None:
                self.under(Condition(node, 1, False, self._flags_required(node.test, False)), node.orelse)
            return
        if isinstance(node, (cst.For, cst.While)):
            if isinstance(node, cst.For):
                self.expression(node.iter)
            self.extend(self.analysis._events_of_loop(node, self.scope, self.depth), loops=(node,))
            if node.orelse is not None:
                self.block(node.orelse)
            return
        if isinstance(node, cst.Try):
            self.block(node.body)
            for position, handler in enumerate(node.handlers, start=1):
                self.under(Condition(node, position, False), handler.body)
            for block in (node.orelse, node.finalbody):
                if block is not None:
                    self.block(block)
            return
        if isinstance(node, cst.Match):
            self.expression(node.subject)
            for position, case in enumerate(node.cases):
                self.under(Condition(node, position, False), case.body)
            return
        if isinstance(node, cst.Assign):
            self.expression(node.value)
            for target in node.targets:
                self._assigned(target.target, node, node.value)
            return
        if isinstance(node, cst.Del):
            if _is_grad_attribute(node.target):
                self.emit(Kind.ZERO_GRAD, node)
            return
        if isinstance(node, cst.Call):
            self.call(node)
            return
        for child in child_nodes(node):
            self.node(child)

    expression = node

    def _flags_required(self, test: cst.BaseExpression, holds: bool) -> tuple[tuple[int, str, bool], ...]:
        """The values of the function's fixed flags under which `test` is `holds`."""
        function = self.scope.node
        values = _flag_values(test, holds) if isinstance(function, cst.FunctionDef) else ()
        if not values:
            return ()  # most tests name no plain flag: the function's assignments are not read for them
        flags = self.analysis.fixed_flags(function)
        return tuple((id(function), name, value) for name, value in values if name in flags)

    def _assigned(self, target: cst.BaseExpression, assignment: cst.Assign, value: cst.BaseExpression) -> None:
        if _is_grad_attribute(target):
            cleared = isinstance(value, cst.Name) and value.value == "None"
            self.emit(Kind.ZERO_GRAD if cleared else Kind.GRAD_SET, assignment)
        elif isinstance(value, cst.Call) and dotted_name(target) is not None:
            if self.analysis.index.role_of_call(value) is Role.OPTIMIZER:
                self.emit(Kind.OPTIMIZER_CREATED, assignment, target)

    # Calls -----------------------------------------------------------------------------------

    def call(self, call: cst.Call) -> None:
        func = call.func
        if isinstance(func, cst.Attribute):
            self.node(func.value)
        for arg in call.args:
            self.node(arg.value)
        analysis = self.analysis
        if any(arg.keyword is not None and arg.keyword.value == "requires_grad" and _is_true(arg.value) for arg in call.args):
            self.emit(Kind.NEEDS_GRAD, call)
        qualified = analysis._imports.qualified_name(func)
        if qualified is not None:
            last = qualified.rsplit(".", 1)[-1]
            if qualified == "torch.autograd.backward":
                self.emit(Kind.BACKWARD, call, _first_argument(call))
            elif qualified in _GRAD_FUNCTIONS:
                self.emit(Kind.NEEDS_GRAD, call)
            elif last in _CLIP_FUNCTIONS and qualified.startswith("torch."):
                self.emit(Kind.CLIP, call)
            elif last == "_foreach_zero_" or any(word in last.lower() for word in _CLEARING_WORDS):
                self.emit(Kind.ZERO_GRAD, call)
            elif analysis.project is not None and self.depth < MAX_CALL_DEPTH:
                self._project_events(call, qualified)
            return
        if isinstance(func, cst.Attribute):
            if self._method_call(call, func.attr.value, func.value):
                return
        elif isinstance(func, cst.Name) and any(word in func.value.lower() for word in _CLEARING_WORDS):
            self.emit(Kind.ZERO_GRAD, call)
        if self.depth < MAX_CALL_DEPTH:
            function = analysis.resolve_call(call, self.scope)
            if function is not None:
                passed = _flags_passed(call, function)
                events = analysis._events_of_function(function, self.depth + 1)
                self.extend(tuple(event for event in events if not _ruled_out(event, id(function), passed)), via=(call,))

    def _project_events(self, call: cst.Call, qualified: str, method: bool = False) -> None:
        """The events of a function imported from another file of the project (a method of an
        instance of a project class, for `method`), at its call."""
        for event in self.analysis.project.events(qualified):
            kind = _PROJECT_EVENTS.get(event.kind)
            if _flags_rule_out(call, event, method):
                continue
            target = None
            if event.parameter is not None:  # a mode switch: of the module the call passes
                position, name = event.parameter
                position -= 1 if method else 0  # the instance is not among the call's arguments
                target = argument(call, position, name) if position >= 0 else None
                if target is None:
                    continue
            if kind is not None:
                self.events.append(Event(kind, call, target, self.conditions, via=(call,), elsewhere=event.note))

    def _method_call(self, call: cst.Call, method: str, receiver: cst.BaseExpression) -> bool:
        """Emits the event of a method call; True when the call is not a local-function call."""
        analysis = self.analysis
        has_args = bool(call.args)
        if method in ("eval", "train") and not _is_self(receiver):
            self._mode_switch(call, method, receiver)
            return True
        if method == "backward":
            if _is_super(receiver) or _is_function_class(receiver, call):
                return True
            if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                    and receiver.func.attr.value == "scale" and analysis.role(receiver.func.value) is Role.SCALER:
                self.emit(Kind.BACKWARD, call, _first_argument(receiver), scaled=True)
            elif analysis.role(receiver) is Role.SCALER:
                return True
            elif positional_args(call) and (_is_self(receiver) or any(w in name_hint(receiver) for w in _BACKWARD_OWNERS)):
                # `accelerator.backward(loss)`, `self.backward(loss)` (Lightning's hook)
                self.emit(Kind.BACKWARD, call, _first_argument(call))
            else:
                self.emit(Kind.BACKWARD, call, receiver)
            return True
        if method == "manual_backward":
            self.emit(Kind.BACKWARD, call, _first_argument(call))
            return True
        if method == "step":
            role = analysis.role(receiver)
            if role is Role.OPTIMIZER:
                self.emit(Kind.OPTIMIZER_STEP, call, receiver, has_args=has_args)
            elif role is Role.SCHEDULER:
                self.emit(Kind.SCHEDULER_STEP, call, receiver, has_args=has_args)
            elif role is Role.SCALER:
                self.emit(Kind.OPTIMIZER_STEP, call, _first_argument(call), has_args=has_args)
            return role is not None or not _is_self(receiver)
        if method == "zero_grad" or any(word in method.lower() for word in _CLEARING_WORDS):
            self.emit(Kind.ZERO_GRAD, call, receiver, has_args=has_args)
            if method == "zero_grad" or not _is_self(receiver):
                return True
            return False  # `self.reset_grad()`: also follow it when it is a method of this class
        if method in ("zero_", "fill_") and _is_grad_attribute(receiver):
            self.emit(Kind.ZERO_GRAD, call)
            return True
        if method in ("copy_", "add_", "set_") and _is_grad_attribute(receiver):
            self.emit(Kind.GRAD_SET, call)
            return True
        if method == "requires_grad_":
            if not call.args or _is_true(call.args[0].value):
                self.emit(Kind.NEEDS_GRAD, call)
            return True
        if method in ("scale", "unscale_", "update") and analysis.role(receiver) is Role.SCALER:
            kind = {"scale": Kind.SCALER_SCALE, "unscale_": Kind.SCALER_UNSCALE, "update": Kind.SCALER_UPDATE}[method]
            self.emit(kind, call, _first_argument(call))
            return True
        elsewhere = analysis.index.project_callable(call.func)
        if elsewhere is not None:  # `trainer.train_step(batch)`, `Trainer` from another file
            if self.depth < MAX_CALL_DEPTH:
                self._project_events(call, elsewhere, method=True)
            return True
        return not _is_self(receiver)

    def _mode_switch(self, call: cst.Call, method: str, receiver: cst.BaseExpression) -> None:
        """`model.eval()` / `model.train(mode)`: a module switched between training and evaluation."""
        # `model.to(device).train()`: the module methods in between return the module itself.
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
                and receiver.func.attr.value in _SELF_RETURNING_MODULE_METHODS:
            receiver = receiver.func.value
        mode = argument(call, 0, "mode") if method == "train" else None
        if method == "eval" and not call.args:
            self.emit(Kind.EVAL_MODE, call, receiver)
        elif method == "train" and isinstance(mode, cst.Name) and mode.value == "False":
            self.emit(Kind.EVAL_MODE, call, receiver)
        elif method == "train":
            # `model.train(set_training_mode)`: a flag is taken as training, so that a loop
            # restoring the mode this way is never reported.
            self.emit(Kind.TRAIN_MODE, call, receiver)


def _first_argument(call: cst.Call) -> cst.BaseExpression | None:
    positional = positional_args(call)
    return positional[0].value if positional else None


def _is_grad_attribute(expr: cst.BaseExpression) -> bool:
    """`p.grad`, `p.grad.data`, `param.grad[...]`."""
    while True:
        if isinstance(expr, cst.Attribute):
            if expr.attr.value == "grad":
                return True
            if expr.attr.value != "data":
                return False
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            return False


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _is_super(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super"


def _is_function_class(expr: cst.BaseExpression, call: cst.Call) -> bool:
    """`MyFunction.backward(ctx, grad)`: calling an autograd Function's static method by hand. A
    CamelCase name given the context and gradients, unlike a loss named `D_loss` or `L`
    (`D_loss.backward()`, as GAN code writes it)."""
    name = expr.value if isinstance(expr, cst.Name) else None
    return name is not None and name[:1].isupper() and "_" not in name and bool(positional_args(call))


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


# Queries about the point of the walk ----------------------------------------------------------


def _called_by_name(name: str, source: str) -> bool:
    """`name(` appears beside its definitions (counting plain text: a regex of the whole file for
    each function asked costs more than the loops it spares)."""
    written = source.count(f"{name}(") + source.count(f"{name} (")
    return written > source.count(f"def {name}(") + source.count(f"def {name} (")


def enclosing_loops(ancestors: list[cst.CSTNode]) -> list[Loop]:
    """The loops around the current node inside its function, innermost first.

    A loop counts only when the node is in its body (not in a `for` statement's iterable, which is
    evaluated once, nor in its `else`).
    """
    found: list[Loop] = []
    for index in range(len(ancestors) - 1, -1, -1):
        node = ancestors[index]
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(node, (cst.For, cst.While)):
            child = ancestors[index + 1] if index + 1 < len(ancestors) else None
            if child is node.body or (isinstance(node, cst.While) and child is node.test):
                found.append(node)
    return found


# Loops over the elements of a tensor, over parameters, over a dict of tensors -------------------

# Module methods whose iteration yields its tensors (the parameters and buffers, on its device).
_TENSOR_ITERATORS = frozenset({"parameters", "buffers"})
_NAMED_TENSOR_ITERATORS = frozenset({"named_parameters", "named_buffers"})
_SIZE_METHODS = frozenset({"size", "numel", "nelement"})


@dataclass(frozen=True)
class ElementWalk:
    """What a `for` loop (or a comprehension clause) walks over, one element per iteration.

    `sources` are the expressions walked over: the caller decides whether they are tensors
    (`t` in `for row in t`, `range(len(t))`, `range(t.size(0))`, `zip(t, u)`). `elements` names
    the loop variables that hold one element, with the source it comes from, or None when the
    element is a parameter or a buffer (`model.parameters()`, `named_parameters()`), a tensor
    whatever the receiver is. `mapping` is the dict of `for k, v in d.items()` / `d.values()`:
    its values are the elements.
    """

    sources: tuple[cst.BaseExpression, ...] = ()
    elements: tuple[tuple[str, cst.BaseExpression | None], ...] = ()
    mapping: cst.BaseExpression | None = None

    @property
    def over_parameters(self) -> bool:
        return any(source is None for _, source in self.elements)

    def source_of(self, name: str) -> tuple[bool, cst.BaseExpression | None]:
        """(bound here, its source): whether `name` holds an element, and of what."""
        for element, source in self.elements:
            if element == name:
                return True, source
        return False, None


def element_walk(target: cst.BaseExpression, iterable: cst.BaseExpression) -> ElementWalk | None:
    """The element walk of `for target in iterable`, or None when it walks over nothing tensor-like."""
    names = _positional_names(target)
    if isinstance(iterable, (cst.Name, cst.Attribute, cst.Subscript)):
        return ElementWalk((iterable,), _bind(names[:1] if isinstance(target, cst.Name) else [], [iterable]))
    if not isinstance(iterable, cst.Call):
        return None
    func = iterable.func
    if isinstance(func, cst.Attribute) and not iterable.args:
        method = func.attr.value
        if method in _TENSOR_ITERATORS and isinstance(target, cst.Name):
            return ElementWalk(elements=((target.value, None),))
        if method in _NAMED_TENSOR_ITERATORS and len(names) == 2:
            return ElementWalk(elements=((names[1], None),))
        if method in ("items", "values"):
            value = names[1] if method == "items" and len(names) == 2 else (
                target.value if method == "values" and isinstance(target, cst.Name) else None
            )
            if value is None:
                return None
            if _is_state_dict(func.value):
                return ElementWalk(elements=((value, None),))
            return ElementWalk(elements=((value, func.value),), mapping=func.value)
        return None
    if not isinstance(func, cst.Name) or not iterable.args:
        return None
    arguments = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
    if func.value == "enumerate" and arguments:
        values = names[1:2] if isinstance(target, cst.Tuple) and len(names) == 2 else []
        return ElementWalk((arguments[0],), _bind(values, arguments[:1]))
    if func.value == "zip" and arguments:
        return ElementWalk(tuple(arguments), _bind(names if len(names) == len(arguments) else [], arguments))
    if func.value == "range" and len(arguments) == 1:
        sized = _sized(arguments[0])
        return ElementWalk((sized,)) if sized is not None else None
    return None


def _positional_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [element.value.value if isinstance(element.value, cst.Name) else "" for element in target.elements]
    return []


def _bind(names: list[str], sources: list[cst.BaseExpression]) -> tuple[tuple[str, cst.BaseExpression], ...]:
    return tuple((name, source) for name, source in zip(names, sources) if name)


def _is_state_dict(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "state_dict"


def _sized(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`t` in `len(t)`, `t.size(0)`, `t.shape[0]`, `t.numel()`."""
    if isinstance(expr, cst.Call):
        if isinstance(expr.func, cst.Name) and expr.func.value == "len" and expr.args:
            return expr.args[0].value
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SIZE_METHODS:
            return expr.func.value
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape":
        return expr.value.value
    return None


def _flag_values(test: cst.BaseExpression, holds: bool) -> list[tuple[str, bool]]:
    """The plain names `test` fixes when it is `holds`: `train` True for `if train:`, False for
    `if not train and valid:`; nothing for what it does not fix (`if a or b:` that holds)."""
    if isinstance(test, cst.Name) and test.value not in ("True", "False", "None"):
        return [(test.value, holds)]
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _flag_values(test.expression, not holds)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And if holds else cst.Or):
        return _flag_values(test.left, holds) + _flag_values(test.right, holds)
    return []


def _flags_passed(call: cst.Call, function: cst.FunctionDef) -> dict[str, bool]:
    """The flags (`True` / `False`) the call gives the function's parameters, written or by default."""
    if any(arg.star for arg in call.args):
        return {}
    params = list(function.params.params)
    if isinstance(call.func, cst.Attribute) and params and params[0].name.value in ("self", "cls"):
        params = params[1:]  # `self.run_epoch(...)`: the receiver fills the first parameter
    passed: dict[str, bool] = {}
    for index, param in enumerate([*params, *function.params.kwonly_params]):
        name = param.name.value
        if index < len(params):
            given = argument(call, index, name)
        else:  # keyword-only
            written = keyword_arg(call, name)
            given = written.value if written is not None else None
        value = given if given is not None else param.default
        if isinstance(value, cst.Name) and value.value in ("True", "False"):
            passed[name] = value.value == "True"
    return passed


def _flags_rule_out(call: cst.Call, event: "StepEvent", method: bool) -> bool:
    """The call passes, or leaves to its default, a flag value other than the one the event of a
    function of another file needs (`evaluate(model, training=True)`, `if not training: model.eval()`)."""
    if any(arg.star for arg in call.args):
        return False
    for position, name, needed, default in event.flags:
        if position is not None:
            position -= 1 if method else 0  # the instance is not among the call's arguments
        if position is not None and position >= 0:
            given = argument(call, position, name)
        else:
            keyword = keyword_arg(call, name)
            given = keyword.value if keyword is not None else None
        if given is None:
            passed = default
        elif isinstance(given, cst.Name) and given.value in ("True", "False"):
            passed = given.value == "True"
        else:
            continue  # a value the call computes: either branch may run
        if passed is not None and passed != needed:
            return True
    return False


def _ruled_out(event: Event, function: int, passed: dict[str, bool]) -> bool:
    """The event sits under a branch of `function` that the flags this call passes rule out."""
    return any(
        key == function and passed.get(name, value) != value
        for condition in event.conditions for key, name, value in condition.requires
    )
