"""What is known about the tensors of one file, asked by rules as `ctx.tensors`.

    facts = ctx.tensors.facts(expr)      # TensorFacts (device, layout, dtype, requires-grad...),
                                         # or another domain value (Number, ModuleValue...), or UNKNOWN
    ctx.tensors.is_tensor(expr)          # known to be a tensor (not merely "moved like one")
    ctx.tensors.conflicts(call)          # where the tensor `call` creates meets a tensor on another device
    ctx.tensors.single_dims(expr)        # products its function passes to view/reshape as one dim

The first question about a node interprets its enclosing function (or the module's top level)
once, with `Interpreter`; every expression of it is then memoized. Functions and methods of the
same file are summarized by what they return when called; a Module class's attributes are read
from its `__init__` (a registered buffer, parameter or submodule lives on the module's device; a
plain tensor attribute stays where it was created).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from torchlint.analysis.dataflow import assigned_names
from torchlint.analysis.layouts import Layout, arg_code
from torchlint.analysis.literals import is_number
from torchlint.analysis.modules import is_torch_module_class
from torchlint.analysis.module_values import construction
from torchlint.analysis.names import (
    argument, assigned_once, dotted_name, is_constant_none, keyword_arg, method_named, nested_statement_lists,
    suite_statements, top_level_functions,
)
from torchlint.analysis.shape_annotations import annotated_shape
from torchlint.analysis.shape_checks import known_sizes, literal
from torchlint.analysis.tensor_facts.domain import (
    NUMBER, UNKNOWN, Device, Iterable, ModuleValue, Number, ObjectValue, Sequence, TensorFacts, Value, join,
)
from torchlint.analysis.tensor_facts.example_calls import ExampleCalls
from torchlint.analysis.tensor_facts.interpreter import Env, Interpreter
from torchlint.analysis.top_level import DEFINITION, top_level_pieces
from torchlint.analysis.module_attributes import registration_of
from torchlint.walker import child_nodes, every_node

if TYPE_CHECKING:
    from torchlint.analysis.checked_file import CheckedFile

_TENSOR_ANNOTATIONS = frozenset(
    {"torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor", "torch.nn.Parameter",
     "torch.nn.parameter.Parameter"}
)
_NUMBER_ANNOTATIONS = frozenset({"int", "float", "bool"})
# What makes a function's findings depend on where its callers put its tensors: `.numpy()`, a
# tensor made without `device=`.
_CALLER_SENSITIVE = re.compile(
    r"\.numpy\(|torch\.(?:zeros|ones|arange|tensor|full|eye|linspace|empty|rand|randn|(?:[A-Z]\w*)?Tensor)\(")
# A name written as called, not as a method: `f(` and `def f(`, not `x.f(`.
_PLAIN_CALL = re.compile(r"(?<![\w.])(\w+)\s*\(")
# Parameters that name the model a function runs (`model`, `net`, `resnet`, `policy_net`): a
# Module of unknown placement, whose output is where its input is.
_MODEL_PARAMETER = re.compile(r"(\w+_)?(model|\w*net|network)", re.IGNORECASE)
# Attributes and methods only a tensor has (not a module, list or dict): a parameter used with
# them holds a tensor.
_TENSOR_EVIDENCE = frozenset(
    {"shape", "view", "permute", "unsqueeze", "squeeze", "transpose", "masked_fill", "masked_fill_",
     "contiguous", "numel", "dim", "size", "detach", "item", "softmax", "log_softmax", "reshape",
     "flatten", "expand", "matmul", "bmm", "argmax", "new_zeros", "new_ones", "new_full", "chunk", "ndim"}
)
_MOVING_METHODS = frozenset({"_apply", "to", "cuda", "state_dict", "_load_from_state_dict"})
# Folders of data transforms: a Module defined there transforms samples where the data pipeline
# has them (in DataLoader workers, on the CPU), not inputs on a model's device.
_TRANSFORM_FOLDERS = frozenset({"transforms", "transform", "augmentation", "augmentations"})
_NO_GRAD_DECORATORS = frozenset({"torch.no_grad", "torch.inference_mode"})
# Bounds on the readings of constructions (`construction_forward`): how deep one class's reading
# may start another's, and how many a file gets.
_DEEPEST_READING = 3
_MOST_READINGS = 32


@dataclass
class Scope:
    node: cst.FunctionDef | cst.Module
    statements: list
    classdef: cst.ClassDef | None = None
    parent: "Scope | None" = None
    self_name: str | None = None
    no_grad: int = 0
    in_module_class: bool = False
    final_env: Env | None = None
    returns: Value | None = None
    single_dims: set[str] = field(default_factory=set)
    running: bool = False
    # Its seed is being worked out: the calls it reads may lead back to it (A's `forward` calls
    # B, whose seed reads A), and must not start it again.
    seeding: bool = False


@dataclass
class _ClassFacts:
    attributes: dict[str, Value]


@dataclass(frozen=True)
class _Construction:
    """A Module class of the file as one construction built it and one call called it: what its
    `__init__` and its `forward` are given, as `((keyword or None, value), ...)`."""

    classdef: cst.ClassDef
    made_with: tuple
    called_with: tuple
    made_at: cst.Call | None = field(default=None, compare=False)

    def given(self, method: str, position: int, keyword: str, default: str | None) -> Value | None:
        """What the parameter of `method` at `position` (after `self`), or named `keyword`, gets."""
        passed = self.made_with if method == "__init__" else self.called_with
        positional = [value for key, value in passed if key is None]
        if position < len(positional):
            return positional[position]
        return next((value for key, value in passed if key == keyword), Number(default) if default is not None else None)


class TensorModel:
    def __init__(self, ctx: "CheckedFile", aside: bool = False, construction: _Construction | None = None,
                 root: "TensorModel | None" = None, depth: int = 0) -> None:
        self.ctx = ctx
        # The second interpretation `module_method_summary` asks, and its own (never a third).
        self._aside = aside
        self._aside_model: TensorModel | None = None
        # A reading of one construction of a Module class (see `construction_forward`): it reads
        # the class's methods, and asks `root` (the file's reading) about everything else.
        self._construction = construction
        self._root = root if root is not None else self
        self._depth = depth  # how many readings of constructions started this one
        self._readings: list[tuple[_Construction, TensorModel]] = []  # the root's, of every construction
        self._reading: TensorModel | None = None  # the one the rules ask now (see `construction_readings`)
        self._prepared: set[int] = set()  # classes whose readings are made (see `_prepare_readings`)
        self.memo: dict[int, Value] = {}
        # id(origin call) -> [(operand node, its device)] it was combined with.
        self._conflicts: dict[int, list[tuple[cst.CSTNode, Device]]] = {}
        self._scopes: dict[int, Scope] = {}
        self._composed: frozenset[str] | None = None  # the classes built inside a `Compose([...])`
        self._classes: dict[int, _ClassFacts | None] = {}
        # A question that reaches a scope still being interpreted (A reads B, whose answer needs A)
        # gets a partial answer. The scopes between them are provisional: they are interpreted
        # again once the outermost interpretation is over (see `_interpret`).
        self._active: list[Scope] = []  # the scopes being seeded or interpreted, outermost first
        self._lowest_reached = 0  # the outermost active scope a question reached (its index)
        self._provisional: list[Scope] = []
        self._rerunning = False
        # Per Module class: attributes registered by name (buffers) and assigned `nn.Parameter`s.
        self._registered: dict[int, dict[str, Value]] = {}
        self._parameters: dict[int, dict[str, bool]] = {}
        # (id(classdef), method name) -> positional argument values of each `self.<method>(...)`.
        self._self_calls: dict[tuple[int, str], list[list[Value]]] = {}
        self._top_functions: dict[str, cst.FunctionDef] | None = None
        self._calls_by_name: dict[str, list[cst.Call]] | None = None
        self._sensitive: set[str] | None = None  # see `_caller_sensitive`
        self._methods: dict[int, cst.ClassDef] = {}
        self._module_names: set[str] | None = None
        self._plain_classes: dict[str, cst.ClassDef] | None = None  # see `dataset_item`
        source = ctx.source
        # Code that changes the default device makes "created without device=" meaningless.
        self.default_device_changed = "set_default_device" in source or "set_default_tensor_type" in source
        # id(module call) -> (the DataLoader batch it is given, still on the CPU; the module's device).
        self._unmoved_batches: dict[int, tuple[cst.CSTNode, Device]] = {}
        self._loaders_on_cpu: bool | None = None
        self.examples = root.examples if root is not None else ExampleCalls(ctx)
        self._layer_contradictions: dict[int, tuple] = {}
        self._uses_memo: dict[str, list] = {}
        self._models_passed: dict[tuple[str, str], str | None] = {}
        self._call_counts: Counter | None = None  # see `_times_called`
        # Only a file that mentions a loader can feed one's batches to a model.
        self._mentions_loader = "oader" in source

    def close(self) -> None:
        """Drop the interpreters and what they found: each refers back to this model, so until
        then they and the function bodies they read are a cycle (see `FileContext.close`)."""
        if self._aside_model is not None:
            self._aside_model.close()
        for _, reading in self._readings:
            reading.close()
        vars(self).clear()

    # Questions ---------------------------------------------------------------------------

    def facts(self, expr: cst.CSTNode) -> Value:
        """What is known about `expr`, a node inside the function the walk is in."""
        if self._reading is not None:
            return self._reading.facts(expr)
        found = self.memo.get(id(expr))
        if found is not None:
            return found
        self._interpret(self._current_scope())
        return self.memo.get(id(expr), UNKNOWN)

    def is_tensor(self, expr: cst.CSTNode) -> bool:
        value = self.facts(expr)
        return isinstance(value, TensorFacts) and not value.maybe

    def conflicts(self, origin: cst.Call) -> list[tuple[cst.CSTNode, Device]]:
        """The operands (and their devices) that the tensor `origin` creates is combined with."""
        scope = self._current_scope()
        self._interpret(scope)
        facts = self.memo.get(id(origin))
        if scope.classdef is not None and scope.in_module_class and isinstance(facts, TensorFacts):
            attributes = self._class_facts(scope.classdef)
            if attributes is not None and any(
                isinstance(value, TensorFacts) and value.origin is origin for value in attributes.attributes.values()
            ):
                for method in self._class_methods(scope.classdef):
                    self._interpret(self._scope_of(method, scope.classdef, None))
        return self._conflicts.get(id(origin), [])

    def unmoved_batch(self, call: cst.Call) -> tuple[cst.CSTNode, Device] | None:
        """The argument of the module call `call` that is a DataLoader batch never moved off the
        CPU, and the device of the module's parameters (see `note_unmoved_batch`)."""
        if not self._mentions_loader:
            return None
        self._interpret(self._current_scope())
        return self._unmoved_batches.get(id(call))

    def loaders_load_on_cpu(self) -> bool:
        """The file's DataLoaders give CPU batches: no collate function, no dataset class of the
        file that moves tensors (`.to(`, `.cuda(`, `device`), no default device changed."""
        if self._loaders_on_cpu is None:
            self._loaders_on_cpu = not self.default_device_changed and "collate" not in self.ctx.source and not any(
                isinstance(statement, cst.ClassDef) and _dataset_places_tensors(self.ctx.module.code_for_node(statement))
                for statement in self.ctx.module.body
            )
        return self._loaders_on_cpu

    def is_same_file_callable(self, call: cst.Call) -> bool:
        """`helper(...)` of a top-level function, or `self.helper(...)` of the enclosing class's method."""
        func = call.func
        if isinstance(func, cst.Name):
            return func.value in self._functions()
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            classdef = self.ctx.enclosing_class()
            return classdef is not None and any(
                method.name.value == func.attr.value for method in self._class_methods(classdef)
            ) and func.value.value == (self._current_scope().self_name or "")
        return False

    def single_dims(self) -> set[str]:
        scope = self._current_scope()
        self._interpret(scope)
        return scope.single_dims

    # Called by the interpreter -----------------------------------------------------------

    def check_devices(self, operands: list[tuple[cst.CSTNode, TensorFacts]]) -> None:
        placed = [(node, facts) for node, facts in operands if facts.device.follows_input]
        if not placed:
            return
        for node, facts in operands:
            if facts.origin is None or facts.device not in (Device.DEFAULT, Device.CPU):
                continue
            if facts.scalar is not False:
                continue  # a 0-dim CPU tensor combines with a tensor on any device
            partner, partner_facts = placed[0]
            found = self._conflicts.setdefault(id(facts.origin), [])
            if all(existing is not partner for existing, _ in found):
                found.append((partner, partner_facts.device))

    def size_code(self, expr: cst.BaseExpression, value: Value) -> str:
        """A size as the shape checks compare it, `value` being what `expr` holds: the literal it
        holds (`D_MODEL`, `4 * d`, `B` from `B, T, C = x.shape` of a known shape; a module
        constant read while the module's top level is still being interpreted), else its code."""
        if isinstance(value, Number) and literal(value.code) is not None:
            return value.code
        constant = self.examples.integer(expr) if isinstance(expr, (cst.Name, cst.BinaryOperation, cst.Call)) else None
        return str(constant) if constant is not None and constant >= 0 else arg_code(self.ctx, expr)

    def note_layer_contradiction(self, call: cst.Call, operand: cst.CSTNode, sizes, config, contradiction) -> None:
        self._layer_contradictions.setdefault(id(call), (operand, sizes, config, contradiction))

    def layer_contradiction(self, call: cst.Call):
        """(input node, its sizes, the layer's LayerConfig, the Contradiction) where the call of a
        layer of known sizes gets an input of known shape that it cannot take; else None."""
        if self._reading is not None:
            return self._reading.layer_contradiction(call)
        self.facts(call)
        return self._layer_contradictions.get(id(call))

    def construction_readings(self) -> Iterator[cst.Call | None]:
        """Where the walk is inside a Module class of the file that the file builds more than
        once: each construction's reading of it (see `construction_forward`), made the one that
        `facts` and `layer_contradiction` answer from in turn; each yields its construction."""
        if not self.examples.has_example_data():
            return  # the common case, asked at every call a size rule visits: answered first
        classdef = self.ctx.enclosing_class()
        if classdef is None or not self._built_apart(classdef.name.value):
            return
        self._prepare_readings(classdef)
        for made, reading in list(self._readings):
            if made.classdef is classdef:
                self._reading = reading
                try:
                    yield made.made_at
                finally:
                    self._reading = None

    def construction_forward(self, kind: str, module: ModuleValue, called_with: tuple) -> Value | None:
        """What `forward` of the file's Module class `kind` returns for `module`, as its
        construction built it and this call (`called_with`) calls it, where the file builds the
        class more than once: the class's own reading joins what its constructions pass, and
        sizes that differ between them (`ResBlock(16, 32)`, `ResBlock(32, 64)`) are lost there.
        None where there is no such reading."""
        classdef = self.ctx.module_classes.class_named(kind)
        forward = method_named(classdef, "forward") if classdef is not None else None
        if forward is None or not self._built_apart(kind) or not any(_fixes_sizes(value) for _, value in module.made_with):
            return None
        wanted = _Construction(classdef, module.made_with, called_with, module.made_at)
        root = self._root
        reading = next((known for made, known in root._readings if made == wanted), None)
        if reading is None:
            if self._depth >= _DEEPEST_READING or len(root._readings) >= _MOST_READINGS:
                return None
            reading = TensorModel(self.ctx, construction=wanted, root=root, depth=self._depth + 1)
            root._readings.append((wanted, reading))
        return reading._summary(reading._scope_of(forward, classdef, None))

    def _built_apart(self, class_name: str) -> bool:
        """The file builds the Module class `class_name` in more than one place (asked only of a
        file with example data, which both callers check first: only there are the calls
        scanned, see `ExampleCalls`)."""
        return len(self.examples.constructions(class_name)) > 1

    def _prepare_readings(self, classdef: cst.ClassDef) -> None:
        """Interpret the functions that call instances of `classdef`, and first those of the
        classes whose methods make such calls: their interpretations make the readings of its
        constructions (`construction_forward`)."""
        if id(classdef) in self._prepared:
            return
        self._prepared.add(id(classdef))
        for site in self._uses(classdef.name.value):
            if site.classdef is not None:
                self._prepare_readings(site.classdef)
            self._interpret(self._site_scope(site))

    def _reads(self, scope: Scope) -> bool:
        """This model interprets `scope` itself: the file's reading does all; a construction's
        reading, the methods of its class (and the functions nested in them)."""
        if self._construction is None:
            return True
        while scope.parent is not None:
            scope = scope.parent
        return scope.classdef is self._construction.classdef

    def note_unmoved_batch(self, call: cst.Call, batch: cst.CSTNode, device: Device) -> None:
        self._unmoved_batches.setdefault(id(call), (batch, device))

    def note_self_call(self, scope: Scope, method: str, arguments: list[Value]) -> None:
        """`self.<method>(...)` in `forward()`: its arguments seed the method's parameters (calls
        from `__init__` run while the module is still on the CPU)."""
        if scope.in_module_class and isinstance(scope.node, cst.FunctionDef) and scope.node.name.value == "forward":
            calls = self._self_calls.setdefault((id(scope.classdef), method), [])
            calls.append(arguments)

    def outer_value(self, scope: Scope, name: str) -> Value:
        """A name the scope does not bind: from the enclosing function, else the module's top level."""
        parent = scope.parent
        if parent is not None:
            self._interpret(parent)
            if parent.final_env is not None and name in parent.final_env:
                return parent.final_env[name]
        if self._construction is not None:
            return self._root._module_value(scope, name)
        return self._module_value(scope, name)

    def _module_value(self, scope: Scope, name: str) -> Value:
        if isinstance(scope.node, cst.Module) or name not in self._module_level_names():
            return UNKNOWN
        module_scope = self._module_scope()
        if module_scope.final_env is None and scope.classdef is None:
            # A constant (`N_FEATURES = 8`) needs no interpretation of the top level, which, begun
            # from inside a function, would read that function's own calls there as unknown.
            constant = self.examples.integer(cst.Name(name))
            if constant is not None:
                return Number(str(constant))
        self._interpret(module_scope)
        if module_scope.final_env is None:
            return UNKNOWN
        return module_scope.final_env.get(name, UNKNOWN)

    def outer_binds(self, scope: Scope, name: str) -> bool:
        parent = scope.parent
        if parent is not None and parent.final_env is not None and name in parent.final_env:
            return True
        return not isinstance(scope.node, cst.Module) and name in self._module_level_names() and name not in self._functions()

    def is_module_class(self, name: str) -> bool:
        return self.ctx.module_classes.is_module_name(name)

    def function_named(self, name: str) -> cst.FunctionDef | None:
        """The file's top-level function called `name`."""
        return self._functions().get(name)

    def function_summary(self, name: str) -> Value | None:
        function = self._functions().get(name)
        if function is None:
            return None
        return self._summary(self._scope_of(function, None, None))

    def method_summary(self, scope: Scope, name: str) -> Value | None:
        classdef = scope.classdef
        method = method_named(classdef, name) if classdef is not None else None
        return self._summary(self._scope_of(method, classdef, None)) if method is not None else None

    def dataset_item(self, class_name: str) -> Value | None:
        """What an instance of the file's class `class_name` (not a Module) holds at an index, when
        the class defines `__getitem__`: a map-style dataset (`DataLoader(Windows(100), ...)`)."""
        classdef = self._plain_class(class_name)
        method = method_named(classdef, "__getitem__") if classdef is not None else None
        return self._summary(self._scope_of(method, classdef, None)) if method is not None else None

    def plain_object(self, class_name: str) -> ObjectValue | None:
        """An instance of the file's class `class_name` when it is a plain one: no base class (a
        dataset, an enum or a Module class of another file are something else), no `__getitem__`,
        `__iter__` or `__call__` (a container, or an object used as a function), and no decorator
        (a dataclass's fields are read as configuration)."""
        classdef = self._plain_class(class_name)
        if classdef is None or classdef.bases or classdef.decorators or any(
                method_named(classdef, name) is not None for name in ("__getitem__", "__iter__", "__call__")):
            return None
        return ObjectValue(class_name)

    def object_method_summary(self, class_name: str, name: str) -> Value | None:
        """What the method `name` of the plain class `class_name` returns (`buffer.sample(32)`)."""
        classdef = self._plain_class(class_name)
        method = method_named(classdef, name) if classdef is not None and not name.startswith("__") else None
        return self._summary(self._scope_of(method, classdef, None)) if method is not None else None

    def _plain_class(self, name: str) -> cst.ClassDef | None:
        if self._plain_classes is None:
            self._plain_classes = {
                statement.name.value: statement for statement in self.ctx.module.body
                if type(statement) is cst.ClassDef and not self.is_module_class(statement.name.value)
            }
        return self._plain_classes.get(name)

    def module_method_summary(self, class_name: str, name: str) -> Value | None:
        """What `name` (a method of the file's Module class `class_name`) returns, or None.

        A method not interpreted yet while the module's top level is (`q_net.act(obs)` in a
        script's loop) would read the module's names before they are known, and keep what it
        learnt so: a second interpretation of the file, kept aside, answers instead (as for a
        function whose seed is being read from the very calls that ask, see `_summary`)."""
        classdef = self.ctx.module_classes.class_named(class_name)
        method = method_named(classdef, name) if classdef is not None else None
        if method is None:
            return None
        scope = self._scope_of(method, classdef, None)
        if scope.final_env is None and self._module_scope().running:
            return None if self._aside else self._set_aside().module_method_summary(class_name, name)
        return self._summary(scope)

    def _set_aside(self) -> "TensorModel":
        if self._aside_model is None:
            self._aside_model = TensorModel(self.ctx, aside=True)
        return self._aside_model

    def register(self, scope: Scope, call: cst.Call, value: Value) -> None:
        """`self.register_buffer("x", t)` in a Module's method: `self.x` moves with the module."""
        if scope.classdef is None:
            return
        found = registration_of(call)
        registered = self._registered.setdefault(id(scope.classdef), {})
        if found is None or found[1] is None:
            registered["*"] = UNKNOWN
        else:
            registered[found[1]] = value

    def class_attribute(self, scope: Scope, name: str) -> Value:
        """`self.<name>` in a method, when the method has not assigned it itself."""
        if scope.classdef is None or (isinstance(scope.node, cst.FunctionDef) and scope.node.name.value == "__init__"):
            return UNKNOWN
        facts = self._class_facts(scope.classdef)
        if facts is None:
            return UNKNOWN
        return facts.attributes.get(name, UNKNOWN)

    # Scopes ------------------------------------------------------------------------------

    def _current_scope(self) -> Scope:
        # Exact classes on the ancestors: an isinstance() miss against libcst's ABC-based classes
        # costs a Python-level call, and every question about a node starts here.
        ancestors = self.ctx.ancestors
        for index in range(len(ancestors) - 1, -1, -1):
            node = ancestors[index]
            if type(node) is cst.FunctionDef:
                holder = ancestors[index - 2] if index >= 2 else None
                classdef = holder if isinstance(holder, cst.ClassDef) else None
                parent = None
                for outer in range(index - 1, -1, -1):
                    if type(ancestors[outer]) is cst.FunctionDef:
                        parent_holder = ancestors[outer - 2] if outer >= 2 else None
                        parent = self._scope_of(
                            ancestors[outer], parent_holder if isinstance(parent_holder, cst.ClassDef) else None, None
                        )
                        break
                return self._scope_of(node, classdef, parent)
        return self._module_scope()

    def _module_scope(self) -> Scope:
        module = self.ctx.module
        scope = self._scopes.get(id(module))
        if scope is None:
            scope = self._scopes[id(module)] = Scope(module, list(module.body))
        return scope

    def _scope_of(self, function: cst.FunctionDef, classdef: cst.ClassDef | None, parent: Scope | None) -> Scope:
        scope = self._scopes.get(id(function))
        if scope is not None:
            return scope
        in_module_class = classdef is not None and self.ctx.module_classes.is_module(classdef)
        static = _method_kind(function) is not None
        params = [*function.params.posonly_params, *function.params.params]
        self_name = params[0].name.value if classdef is not None and params and not static else None
        scope = Scope(
            function, suite_statements(function.body), classdef, parent, self_name,
            no_grad=int(any(self._is_no_grad(d.decorator) for d in function.decorators)),
            in_module_class=in_module_class,
        )
        self._scopes[id(function)] = scope
        return scope

    def _data_transform(self, classdef: cst.ClassDef) -> bool:
        """A Module written as a data transform: defined in a folder of transforms
        (`mylib/transforms/corruption.py`), or built inside a `Compose([...])` of its file. Its
        inputs are samples from the data pipeline, on no known device."""
        if _TRANSFORM_FOLDERS.intersection(re.split(r"[\\/]", self.ctx.path)[:-1]):
            return True
        if self._composed is None:
            self._composed = _composed_classes(self.ctx.module) if "Compose(" in self.ctx.source else frozenset()
        return classdef.name.value in self._composed

    def _is_no_grad(self, decorator: cst.BaseExpression) -> bool:
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        return self.ctx.qualified_name(target) in _NO_GRAD_DECORATORS

    def _interpret(self, scope: Scope) -> None:
        if scope.final_env is not None:
            return
        if scope.running or scope.seeding:
            self._reached_active(scope)
            return
        position = len(self._active)
        outer_lowest, self._lowest_reached = self._lowest_reached, position
        self._active.append(scope)
        try:
            self._seed_and_run(scope)
        finally:
            self._active.pop()
        reached_outer = self._lowest_reached < position
        self._lowest_reached = min(outer_lowest, self._lowest_reached)
        if reached_outer:
            self._provisional.append(scope)
        elif not self._active and self._provisional and not self._rerunning:
            self._rerun_provisional()

    def _reached_active(self, scope: Scope) -> None:
        """A question reached `scope`, which is still being interpreted: the scopes started since
        then answer without it. They are interpreted again when the top level or a top-level
        function is among them: the top level (which a function that reads a module constant
        starts) reads the whole file, and a function of the file that builds a module
        (`ItemScorer(table)(items)`, read for the example `__init__` is given) reads its
        `forward()`; what they cache is what every later question reads. Other cycles (a method
        `__init__` calls, which reaches `forward()`) keep their answers, as a call made then would."""
        index = next((i for i, active in enumerate(self._active) if active is scope), None)
        if index is not None and any(type(active.node) is cst.Module or (active.classdef is None and active.parent is None)
                                     for active in self._active[index + 1:]):
            self._lowest_reached = min(self._lowest_reached, index)

    def _seed_and_run(self, scope: Scope) -> None:
        # Seeding a Module helper interprets `forward()` first, which may interpret this scope.
        scope.seeding = True
        try:
            seed = self._seed(scope)
        finally:
            scope.seeding = False
        if scope.final_env is not None:
            return
        scope.running = True
        interpreter = Interpreter(self, scope)
        try:
            end = interpreter.run(seed)
        finally:
            scope.running = False
        scope.final_env = end if end is not None else {}
        scope.returns = interpreter.returns
        scope.single_dims = interpreter.single_dims

    def _rerun_provisional(self) -> None:
        """Interpret the provisional scopes again, now that the scope they were waiting for is done:
        a dataset's `__init__` that reads a module constant starts the top level, which reads the
        dataset's items before its `__init__` is over. The outermost goes first, as it went the
        first time (the list is in the order they ended), and the second answers stand."""
        scopes, self._provisional = self._provisional[::-1], []
        for scope in scopes:
            scope.final_env = scope.returns = None
            scope.single_dims = set()
        self._rerunning = True
        try:
            for scope in scopes:
                self._interpret(scope)
        finally:
            self._rerunning = False
            self._provisional = []

    def _summary(self, scope: Scope) -> Value:
        if not self._reads(scope):
            root = self._root
            return root._summary(root._scope_of(scope.node, scope.classdef, None))
        if scope.running:
            self._reached_active(scope)
            return UNKNOWN
        if scope.seeding and scope.final_env is None and isinstance(scope.node, cst.FunctionDef):
            # Asked by the calls its seed is read from: the interpretation kept aside answers.
            if self._aside:
                return UNKNOWN
            aside = self._set_aside()
            return aside._summary(aside._scope_of(scope.node, scope.classdef, None))
        self._interpret(scope)
        return scope.returns if scope.returns is not None else UNKNOWN

    def _seed(self, scope: Scope) -> Env:
        function = scope.node
        if not isinstance(function, cst.FunctionDef):
            return {}
        params = function.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        env: Env = {}
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                env[star.name.value] = UNKNOWN
        name = function.name.value
        on_module = scope.in_module_class and name != "__init__"
        # A Module's `forward` takes inputs on the module's device, unless it transforms data samples.
        forward_inputs_placed = on_module and name == "forward" and not self._data_transform(scope.classdef)
        evidence = None
        # A `forward()` takes its first input as a tensor (or a batch of them), whatever it does with it.
        first_input = next((p.name.value for p in every if p.name.value != scope.self_name), None) if (
            on_module and name == "forward") else None
        from_calls = self._call_site_arguments(scope) if on_module and name != "forward" else {}
        from_callers = self._placed_by_callers(scope)
        for param in every:
            param_name = param.name.value
            if param_name in from_calls:
                env[param_name] = from_calls[param_name]
                continue
            if param_name in from_callers and not _MODEL_PARAMETER.fullmatch(param_name):
                env[param_name] = TensorFacts(device=Device.CONDITIONAL, placed_by=from_callers[param_name])
                continue
            if param_name == scope.self_name:
                env[param_name] = ModuleValue(Device.MODULE, scope.classdef.name.value) if scope.in_module_class else UNKNOWN
                continue
            if name == "__getitem__" and param is next(p for p in every if p.name.value != scope.self_name):
                env[param_name] = NUMBER  # the index a DataLoader's sampler gives a dataset
                continue
            annotation = self.ctx.qualified_name(param.annotation.annotation) if param.annotation is not None else None
            written = param.annotation.annotation if param.annotation is not None else None
            # Other methods get the module's device through their calls from `forward()` only: one
            # called from `__init__` sees CPU tensors.
            device = Device.MODULE if forward_inputs_placed else (
                Device.INPUT if _is_loss_function(scope) else Device.UNKNOWN)
            sizes = annotated_shape(self.ctx, written)
            if sizes is not None:
                env[param_name] = TensorFacts(device=device, layout=Layout(len(sizes), sizes, ()))
            elif annotation in _TENSOR_ANNOTATIONS:
                env[param_name] = TensorFacts(device=device)
            elif isinstance(written, cst.Name) and written.value in _NUMBER_ANNOTATIONS:
                env[param_name] = NUMBER
            elif written is None and param.default is None and _MODEL_PARAMETER.fullmatch(param_name):
                env[param_name] = ModuleValue(kind=self._module_class_passed(function, param), from_caller=True)
            elif written is None and param.default is None and (passed := self._module_passed(function, param)):
                env[param_name] = ModuleValue(kind=passed, from_caller=True)  # `advantages(critic, ...)`
            elif self._is_loader_parameter(param):
                env[param_name] = Iterable(TensorFacts(device=Device.DEFAULT, scalar=False, loaded=True))
            elif written is None and (param.default is None or is_constant_none(param.default)):
                if evidence is None:
                    evidence = _tensor_evidence(function)
                used_as_tensor = param_name in evidence or (param_name == first_input and param.default is None)
                if used_as_tensor:
                    env[param_name] = TensorFacts(device=device)
                elif device is not Device.UNKNOWN and param.default is None:
                    # Another input of `forward()`: a tensor in an op with one, on the module's device.
                    env[param_name] = TensorFacts(device=device, maybe=True)
                else:
                    env[param_name] = UNKNOWN
            elif param.default is not None and is_number(param.default):  # `tau=1`, `start=-3`
                env[param_name] = NUMBER
            elif isinstance(param.default, cst.Call) and is_torch_module_class(self.ctx.callee(param.default) or ""):
                # `loss=nn.CrossEntropyLoss()`: the layer a caller gets unless it passes another.
                env[param_name] = ModuleValue(Device.DEFAULT, self.ctx.callee(param.default))

            else:
                env[param_name] = UNKNOWN
        if (scope.in_module_class or (scope.classdef is None and scope.parent is None)) \
                and self.examples.has_example_data():
            self._add_examples(scope, every, env)
        return env

    def _add_examples(self, scope: Scope, params: list[cst.Param], env: Env) -> None:
        """The sizes the file's calls give the parameters (`_example_value`), on top of what the
        parameters are known to be otherwise (a tensor's device stays what it was). A shape
        annotation is the parameter's contract: what one call passes does not replace it."""
        for param in params:
            name = param.name.value
            example = self._example_value(scope, param) if param.annotation is None and name != scope.self_name else None
            current = env.get(name, UNKNOWN)
            guessed = isinstance(current, ModuleValue) and current.from_caller  # `d_model`, named like a model
            if isinstance(example, Number) and (current is UNKNOWN or isinstance(current, Number) or guessed):
                env[name] = example
            elif isinstance(example, TensorFacts) and isinstance(current, TensorFacts) and current.layout is None:
                env[name] = replace(current, layout=example.layout, scalar=False, maybe=False,
                                    dtype=current.dtype or example.dtype)
            elif isinstance(example, TensorFacts) and current is UNKNOWN:
                env[name] = example
            elif isinstance(example, Iterable) and (current is UNKNOWN or isinstance(current, Iterable)):
                env[name] = example
            elif isinstance(example, ModuleValue) and (current is UNKNOWN or (
                    isinstance(current, ModuleValue) and current.config is None and current.kind in (None, example.kind))):
                env[name] = example
            elif isinstance(example, Sequence) and (current is UNKNOWN or (
                    isinstance(current, TensorFacts) and current.layout is None)):
                env[name] = example  # a tuple unpacked as a batch reads as a tensor until its example says

    def _example_value(self, scope: Scope, param: cst.Param) -> Value | None:
        """What the file's own calls give a parameter of `__init__` (a size), of `forward` or of a
        top-level function (an input's shape), by position after `self` or by name: the literal
        the calls show, else the value the calls' own functions compute for it (`Attention(d)`
        in a parent's `__init__`, `self.attn(x)` in its `forward`)."""
        function = scope.node
        positional = [p for p in (*function.params.posonly_params, *function.params.params) if p.name.value != scope.self_name]
        position = next((index for index, p in enumerate(positional) if p is param), None)
        if position is None:
            return None
        name = function.name.value if scope.classdef is None else scope.classdef.name.value
        bound = self._construction
        if bound is not None and scope.classdef is not bound.classdef:
            bound = None
        if function.name.value == "__init__" and scope.classdef is not None:
            default_value = self.examples.integer(param.default) if param.default is not None else None
            default = str(default_value) if default_value is not None else None
            if bound is not None:
                found = bound.given("__init__", position, param.name.value, default)
            else:
                given = self.examples.init_argument(name, position, param.name.value, default)
                if given is not None:
                    return Number(given)
                found = self._value_at_sites(self.examples.constructions(name), position, param.name.value, default)
            if isinstance(found, TensorFacts) and known_sizes(found):
                return _sized_like(found)  # `NCF(cfg, genres)`: a table the module keeps (a buffer)
            return found if isinstance(found, Number) and found.code is not None else None
        if function.name.value != "forward" and scope.classdef is not None:
            return None
        if bound is not None:
            sizes = dtype = None
        else:
            sizes, dtype = self.examples.input_shape(name, position), self.examples.input_dtype(name, position)
        column_of = None
        if sizes is None:
            found = bound.given("forward", position, param.name.value, None) if bound is not None else \
                self._value_at_sites(self._uses(name), position, param.name.value, None, callers_aside=scope.classdef is not None)
            if isinstance(found, Number) and literal(found.code) is not None:
                return found  # `make_loader(16, batch_size=8)`
            if isinstance(found, Iterable) and _shows_sizes(found.element):
                return found  # `train(model, loader)`: batches of known sizes
            if isinstance(found, ModuleValue) and found.kind:
                # `td_targets(target_net, ...)`: its class and sizes, on a device the call does not fix.
                return ModuleValue(kind=found.kind, from_caller=True, config=found.config, element=found.element)
            if isinstance(found, Sequence) and any(known_sizes(item) for item in found.items):
                # `update(net, buffer.sample(32))`: a tuple of tensors, their sizes (not where they are).
                return Sequence(tuple(_sized_like(item) for item in found.items))
            sizes = known_sizes(found)
            dtype = found.dtype if isinstance(found, TensorFacts) else None  # class indices stay indices
            column_of = found.column_of if isinstance(found, TensorFacts) else None
        if not sizes:
            return None  # nothing known, or a 0-dim tensor: no size to check
        device = Device.MODULE if scope.classdef is not None else Device.UNKNOWN
        return TensorFacts(device=device, layout=Layout(len(sizes), sizes, ()), scalar=False, dtype=dtype,
                           column_of=column_of)

    def has_examples(self, name: str) -> bool:
        """The file calls the model of class `name` (or the top-level function `name`), directly or
        through a function it hands the model to: its inputs may be known there."""
        if not self.examples.has_example_data():
            return False
        return bool(self._uses(name)) or self.examples.input_shape(name, 0) is not None

    def _uses(self, name: str) -> list:
        """The calls of `name`'s models: direct ones, and calls of a parameter of a top-level
        function that every call of it passes such a model (`model(x)` in `train(model, ...)`)."""
        if name not in self._uses_memo:
            self._uses_memo[name] = list(self.examples.uses(name)) + [
                site for key, calls in self.examples.parameter_calls().items()
                if self._model_passed(*key) == name for site in calls
            ]
        return self._uses_memo[name]

    def _model_passed(self, function_name: str, param_name: str) -> str | None:
        """The class of the model every call of the top-level function passes as `param_name`."""
        key = (function_name, param_name)
        if key not in self._models_passed:
            function = self._functions().get(function_name)
            param = next((p for p in (*function.params.posonly_params, *function.params.params)
                          if p.name.value == param_name), None) if function is not None else None
            self._models_passed[key] = self._module_class_passed(function, param) if param is not None else None
        return self._models_passed[key]

    def _passed_value(self, site, passed: cst.BaseExpression, callers_aside: bool) -> Value:
        """What the call at `site` passes as `passed`. With `callers_aside` (a model's `forward`
        being seeded), a caller function not interpreted yet is read from the interpretation
        kept aside: its own interpretation, started now, would get the model's results
        (`model(x)` in `train(model, loader)`) as unknown, and keep them so. The module's top
        level is read here: the one kept aside does not follow the models built there into
        their methods while it runs."""
        if isinstance(passed, cst.Integer):
            # `load_table(200)`: nothing to interpret. Interpreting the caller now, while the
            # function is being seeded, would read the function's own call there as unknown.
            return Number(str(passed.evaluated_value))
        model = self
        scope = self._site_scope(site)
        if callers_aside and scope.final_env is None and not self._aside and site.function is not None:
            model = self._set_aside()
            scope = model._site_scope(site)
        model._interpret(scope)
        return model.memo.get(id(passed), UNKNOWN)

    def _site_scope(self, site) -> Scope:
        return self._scope_of(site.function, site.classdef, None) if site.function is not None else self._module_scope()

    def _value_at_sites(self, sites: list, position: int, keyword: str, default: str | None,
                        callers_aside: bool = False) -> Value | None:
        """The one value every call in `sites` passes at `position` (or as `keyword`; `default`
        where a call passes neither), as the interpretation of the call's function knows it.
        A call with `*args` or `**kwargs` may pass anything there. `callers_aside`: see `_passed_value`."""
        found: Value | None = None
        for site in sites:
            passed = argument(site.call, position, keyword)
            if any(arg.star for arg in site.call.args) or (passed is None and default is None):
                return None
            if passed is None:
                value: Value = Number(default)
            else:
                value = self._passed_value(site, passed, callers_aside)
            if found is not None and not _same_example(found, value):
                return None
            found = value
        return found

    def _placed_by_callers(self, scope: Scope) -> dict:
        """For a top-level function that converts tensors to numpy or makes tensors on the default
        device: its parameters that a call in the project passes on the GPU, with that call
        (asked only there: it reads the project)."""
        function = scope.node
        if scope.classdef is not None or scope.parent is not None or function.name.value not in self._caller_sensitive():
            return {}
        return self.ctx.project.placed_by_callers(function.name.value)

    def _caller_sensitive(self) -> set[str]:
        """The top-level functions whose text matches `_CALLER_SENSITIVE`, from one pass over the
        source cut at its top-level statements."""
        if self._sensitive is None:
            self._sensitive = set()
            for piece, _ in top_level_pieces(self.ctx.source):
                found = DEFINITION.match(piece)
                if found is not None and found.group(1) == "def" and _CALLER_SENSITIVE.search(piece) is not None:
                    self._sensitive.add(found.group(2))
        return self._sensitive

    def _is_loader_parameter(self, param: cst.Param) -> bool:
        """`def train(model, train_loader, ...)` in a file that builds its DataLoaders on the CPU."""
        return (
            param.annotation is None and param.default is None and "loader" in param.name.value.lower()
            and "DataLoader(" in self.ctx.source and self.loaders_load_on_cpu()
        )

    def _call_site_arguments(self, scope: Scope) -> dict[str, Value]:
        """Parameter values of a Module helper method, joined over its calls from `forward()`."""
        forward = method_named(scope.classdef, "forward")
        if forward is None or forward is scope.node:
            return {}
        forward_scope = self._scope_of(forward, scope.classdef, None)
        if not (forward_scope.running or forward_scope.seeding):
            # Asked from inside `forward()`, at its call of this method: the calls made so far,
            # which include this one, are what this method can be given there.
            self._interpret(forward_scope)
        calls = self._self_calls.get((id(scope.classdef), scope.node.name.value))
        if not calls:
            return {}
        params = [p.name.value for p in (*scope.node.params.posonly_params, *scope.node.params.params)]
        if _method_kind(scope.node) != "staticmethod":
            params = params[1:]  # `self` (or `cls`), which the call `self.helper(...)` does not pass
        found: dict[str, Value] = {}
        for arguments in calls:
            for param, value in zip(params, arguments):
                found[param] = join(found[param], value) if param in found else value
        # Tensors, and layers (`self.conv_and_pool(x, conv)` for each `conv` of an `nn.ModuleList`).
        return {param: value for param, value in found.items() if isinstance(value, (TensorFacts, ModuleValue))}

    def _module_class_passed(self, function: cst.FunctionDef, param: cst.Param) -> str | None:
        """The class of the module that every call in this file of its top-level `function`
        passes as `param` (`train(model, ...)` after `model = net.Network().to(device)`)."""
        written = function.name.value
        if self._functions().get(written) is not function or self._times_called(written) < 2:
            return None  # not a top-level function, or not called in the file (the `def` aside)
        name = param.name.value
        positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        index = positional.index(name) if name in positional else None
        classes = set()
        for call, scope in self._calls_named(function.name.value):
            passed = argument(call, index, name) if index is not None else getattr(keyword_arg(call, name), "value", None)
            if isinstance(passed, cst.Name):
                passed = assigned_once(scope, passed.value)
            made = construction(self.ctx, passed) if passed is not None else None
            classes.add(self._class_of(made) if made is not None else None)
        return classes.pop() if len(classes) == 1 else None

    def _module_passed(self, function: cst.FunctionDef, param: cst.Param) -> str | None:
        """`_module_class_passed`, where that class is a Module (of torch or of this file); asked
        only of a name the file calls (`critic(states)`), before the walk that finds the calls."""
        if not self._times_called(param.name.value):
            return None
        passed = self._module_class_passed(function, param)
        return passed if passed is not None and (is_torch_module_class(passed) or self.is_module_class(passed)) else None

    def _times_called(self, name: str) -> int:
        """How often the source writes `name(` (not `x.name(`), its `def` included: the counts of
        every name, from one search of the whole source."""
        if self._call_counts is None:
            self._call_counts = Counter(_PLAIN_CALL.findall(self.ctx.source))
        return self._call_counts[name]

    def _class_of(self, made: cst.Call) -> str | None:
        """`torch.nn.Linear` for `nn.Linear(...)`, `Net` for `Net(...)` of a Module class of this file."""
        return self.ctx.callee(made) or self.examples.class_built(made)

    def _calls_named(self, name: str) -> list[tuple[cst.Call, cst.Module | cst.FunctionDef]]:
        """This file's calls of a plain name (`train(...)`), each with the function (or module)
        it is in, found in one walk of the file."""
        if self._calls_by_name is None:
            found: dict[str, list] = {}
            pending: list[tuple[cst.CSTNode, cst.CSTNode]] = [(self.ctx.module, self.ctx.module)]
            while pending:
                node, scope = pending.pop()
                node_class = type(node)  # exact classes: this walks every node of the file
                if node_class is cst.Call and type(node.func) is cst.Name:
                    found.setdefault(node.func.value, []).append((node, scope))
                inner = node if node_class is cst.FunctionDef else scope
                pending.extend((child, inner) for child in child_nodes(node))
            self._calls_by_name = found
        return self._calls_by_name.get(name, [])

    # The file's functions and classes ----------------------------------------------------

    def _functions(self) -> dict[str, cst.FunctionDef]:
        if self._top_functions is None:
            self._top_functions = top_level_functions(self.ctx.module)
        return self._top_functions

    def _module_level_names(self) -> set[str]:
        """Names the module's top level assigns (functions read them as globals)."""
        if self._module_names is None:
            self._module_names = assigned_names(self.ctx.module.body)
        return self._module_names

    @staticmethod
    def _class_methods(classdef: cst.ClassDef) -> list[cst.FunctionDef]:
        return [statement for statement in classdef.body.body if isinstance(statement, cst.FunctionDef)]

    def _class_facts(self, classdef: cst.ClassDef) -> _ClassFacts | None:
        if self._construction is not None and classdef is not self._construction.classdef:
            return self._root._class_facts(classdef)
        key = id(classdef)
        if key in self._classes:
            return self._classes[key]
        found, complete = self._read_class_facts(classdef)
        if complete:
            self._classes[key] = found
        return found

    def _read_class_facts(self, classdef: cst.ClassDef) -> tuple[_ClassFacts | None, bool]:
        """The class's attributes, and whether they are final (not read while `__init__` runs)."""
        key = id(classdef)
        methods = self._class_methods(classdef)
        if any(method.name.value in _MOVING_METHODS for method in methods):
            return None, True
        init = next((method for method in methods if method.name.value == "__init__"), None)
        if init is None:
            return None, True
        scope = self._scope_of(init, classdef, None)
        self._interpret(scope)
        if scope.final_env is None:
            return None, False
        registered = self._registered.get(key, {})
        if "*" in registered:
            return None, True
        assigned_elsewhere = _self_assignments([m for m in methods if m is not init])
        prefix = f"{scope.self_name}."
        attributes: dict[str, Value] = {}
        for name, value in (scope.final_env or {}).items():
            if not name.startswith(prefix):
                continue
            attribute = name[len(prefix):]
            if "." in attribute or attribute in registered or attribute in assigned_elsewhere:
                continue
            if not self.ctx.module_classes.is_module(classdef):
                attributes[attribute] = value  # a plain class's attributes stay where they were made
                continue
            attributes[attribute] = self._as_attribute(value, self._parameters.get(key, {}).get(attribute))
        for attribute, value in registered.items():
            attributes[attribute] = (
                TensorFacts(device=Device.MODULE, layout=value.layout, scalar=value.scalar, dtype=value.dtype)
                if isinstance(value, TensorFacts) else TensorFacts(device=Device.MODULE)
            )
        return _ClassFacts(attributes), True

    def note_parameter(self, scope: Scope, attribute: str, certain: bool) -> None:
        """`self.<attribute> = nn.Parameter(...)`: registered, lives on the module's device (if
        not `certain`, maybe: a dtype conversion of a Parameter)."""
        if scope.classdef is not None:
            self._parameters.setdefault(id(scope.classdef), {})[attribute] = certain

    @staticmethod
    def _as_attribute(value: Value, parameter: bool | None) -> Value:
        """`parameter`: True for a Parameter, False for maybe one, None for a plain value."""
        if isinstance(value, ModuleValue):
            return ModuleValue(Device.MODULE, value.kind, config=value.config, element=value.element,
                               made_with=value.made_with, made_at=value.made_at)
        if isinstance(value, TensorFacts):
            if parameter is None:
                return value
            device = Device.MODULE if parameter else Device.UNKNOWN
            return TensorFacts(device=device, layout=value.layout, scalar=value.scalar, requires_grad=parameter)
        if isinstance(value, Number):
            return value  # `self.heads = heads`: a size, when the construction gives a literal
        return UNKNOWN


def _dataset_places_tensors(code: str) -> bool:
    """A dataset class (it has `__getitem__` or `__iter__`) that moves tensors somewhere."""
    return ("__getitem__" in code or "__iter__" in code) and (".to(" in code or ".cuda(" in code or "device" in code)


def _shows_sizes(value: Value) -> bool:
    """A tensor of known sizes, or a tuple holding one (a batch of inputs and labels)."""
    if isinstance(value, Sequence):
        return any(_shows_sizes(item) for item in value.items)
    return known_sizes(value) is not None


def _fixes_sizes(value: Value) -> bool:
    """A size (`Number` with its code), or a tensor that shows sizes: what makes a construction's
    reading differ from its class's."""
    return (isinstance(value, Number) and value.code is not None) or _shows_sizes(value)


def _sized_like(item: Value) -> Value:
    """A tensor a call passes, as the parameter gets it for an example: its sizes, dtype and
    column origin, on a device the call does not fix for every call."""
    sizes = known_sizes(item)
    if not isinstance(item, TensorFacts) or not sizes:
        return UNKNOWN
    return TensorFacts(layout=Layout(len(sizes), sizes, ()), scalar=False, dtype=item.dtype, column_of=item.column_of)


def _same_example(first: Value, second: Value) -> bool:
    """Two calls pass the same example: equal values, or tensors of the same known sizes made by
    different calls (only their sizes are taken)."""
    if first == second:
        return True
    sizes = known_sizes(first) if isinstance(first, TensorFacts) else None
    return sizes is not None and known_sizes(second) == sizes


def _is_loss_function(scope: Scope) -> bool:
    """A top-level function named as a loss (`focal_loss`, `condor_negloglikeloss`): it gets a
    model's outputs and their targets, so its tensors are on the device of its inputs."""
    return scope.classdef is None and scope.parent is None and "loss" in scope.node.name.value.lower()


def _tensor_evidence(function: cst.FunctionDef) -> set[str]:
    """Parameter names used with attributes or methods that only tensors have."""
    found: set[str] = set()
    pending: list[cst.CSTNode] = [function.body]
    while pending:
        node = pending.pop()
        node_class = type(node)  # exact classes: this walks every function body once
        if node_class is cst.Attribute and type(node.value) is cst.Name and node.attr.value in _TENSOR_EVIDENCE:
            found.add(node.value.value)
        elif node_class is cst.BinaryOperation and type(node.operator) is cst.MatrixMultiply:
            for side in (node.left, node.right):
                if isinstance(side, cst.Name):
                    found.add(side.value)
        pending.extend(child_nodes(node))
    return found


def _self_assignments(methods: list[cst.FunctionDef]) -> set[str]:
    """Attribute names a method assigns as `self.<name> = ...` (statements only, not expressions)."""
    found: set[str] = set()

    def scan(statements) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                        [small.target] if isinstance(small, (cst.AugAssign, cst.AnnAssign)) else []
                    )
                    for target in targets:
                        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                            found.add(target.attr.value)
            else:
                for nested in nested_statement_lists(statement):
                    scan(nested)

    for method in methods:
        scan(suite_statements(method.body))
    return found


def _method_kind(function: cst.FunctionDef) -> str | None:
    """"staticmethod" or "classmethod" for a method so decorated, else None."""
    for decorator in function.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return decorator.decorator.value
    return None


def _composed_classes(module: cst.Module) -> frozenset[str]:
    """The names of the classes built inside a `Compose([...])` call (`transforms.Compose`), or
    built into a name that such a call lists (`melscale = MelScaleDelta(...)`)."""
    built: dict[str, str] = {}  # local name -> the class it was built from
    composed: set[str] = set()
    for node in every_node(module):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and isinstance(node.value, cst.Call) and isinstance(node.value.func, cst.Name):
            built[node.targets[0].target.value] = node.value.func.value
        elif isinstance(node, cst.Call) and (dotted_name(node.func) or "").rsplit(".", 1)[-1] == "Compose":
            for inner in every_node(node):
                if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name):
                    composed.add(inner.func.value)
                elif isinstance(inner, cst.Name):
                    composed.add(inner.value)
    return frozenset(composed | {built[name] for name in composed if name in built})
