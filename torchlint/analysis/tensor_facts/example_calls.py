"""The literal sizes a file gives its own Module classes and functions: constructor arguments and
example inputs.

A script builds its model and feeds it an example (`model = Net(D_MODEL)`, then
`model(torch.randn(4, SEQ, D_MODEL))`, in `__main__`, a test or a training loop). Those sizes are
what `__init__` builds its layers with and what `forward` computes on, so the tensor-facts model
seeds the two methods with them (see `TensorModel._seed`); a top-level function called with
such a tensor (`standardize(torch.randn(32, 64))`) is seeded the same way.

The scan reads the code as written, without the interpreter (which asks it while seeding, and
would otherwise interpret `forward` from inside its own seeding): an integer is a literal, a
module-level constant assigned once, `len` of a constant list, or arithmetic on those; an
example input is a factory call (`torch.randn(4, 10, 32)`, `torch.randint(0, V, (B, T))`) or
a name assigned one once in the same scope. A class seen with two different values for one
argument is left alone there. Where the literals do not say, the scan gives the calls
themselves (constructions, uses, and calls of a training function's `model` parameter) for the
model to read what their own functions compute. Only a file that makes example data outside
its classes (a script, a test) is scanned at all: a library module's shapes stay unknown.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis.layer_sizes import arithmetic, constant
from torchlint.analysis.modules import last_word
from torchlint.analysis.names import (
    argument, dotted_name, has_parameter, keyword_arg, method_named, positional_args, top_level_functions,
)
from torchlint.analysis.tensor_facts.ops import dtype_named
from torchlint.walker import child_nodes

Sizes = tuple[str, ...]

# Factories whose positional arguments (or one tuple of them) are the sizes.
_SIZED = frozenset(f"torch.{name}" for name in ("randn", "rand", "zeros", "ones", "empty"))
_EXAMPLE_FACTORIES = _SIZED | {"torch.randint"}
_EXAMPLE_WORDS = frozenset(name.rpartition(".")[2] for name in _EXAMPLE_FACTORIES)
_EXAMPLE_TEXT = re.compile(r"\b(?:randn|rand|randint|zeros|ones|empty)\(")
# A dataset class of the file, whose items its factories size (`DataLoader(Windows(100), ...)`).
_DATASET_TEXT = re.compile(r"def __getitem__\(")
# Methods that return the model they are called on (`Net().to(device).eval()`).
_SAME_MODEL = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "double", "half"})
_CONFLICT = "conflict"
# What `_scope` reads as scopes of their own. Compared by exact class, as the walker does: an
# isinstance() miss against libcst's ABC-based classes costs several times more, on every node.
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


@dataclass(frozen=True)
class Site:
    """A call of a class's constructor or model, or of a function, and where it is: in
    `function` (None: the module's top level), a method of `classdef` or a top-level function."""

    call: cst.Call
    function: cst.FunctionDef | None
    classdef: cst.ClassDef | None


@dataclass
class _Calls:
    """What the file passes one class (or function): per constructor argument (position or
    keyword) and per input position, the one literal value given, or `_CONFLICT`; and every
    construction and use, for what the literals do not say."""

    init: dict[int | str, str] = field(default_factory=dict)
    # How many constructions pass each of them: where fewer than all do, the others take the default.
    init_counts: Counter = field(default_factory=Counter)
    # A construction passes `*args` / `**kwargs`: which parameter gets what is not known.
    opaque: bool = False
    inputs: dict[int, Sizes | str] = field(default_factory=dict)
    # Per input position, the dtype every call's literal input has (`torch.randint`: int64).
    input_dtypes: dict[int, str] = field(default_factory=dict)
    constructions: list[Site] = field(default_factory=list)
    uses: list[Site] = field(default_factory=list)


class ExampleCalls:
    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._function_names: frozenset[str] | None = None
        self._calls: dict[str, _Calls] | None = None
        self._constants: dict[str, cst.BaseExpression] | None = None
        self._parameter_calls: dict[tuple[str, str], list[Site]] = {}
        self._example_data: bool | None = None
        self._submodule_memo: dict[int, dict[str, str]] = {}
        self._config_fields: dict[tuple[str, str], str | None] = {}
        self._option_defaults: dict[str, str] | None = None  # see `option_default`
        self._writes_and_calls: tuple[set[str], dict[str, list[cst.Call]]] | None = None

    def init_argument(self, class_name: str, position: int, keyword: str, default: str | None) -> str | None:
        """The one literal every construction of `class_name` gives this `__init__` parameter
        (`default` where none passes it)."""
        calls = self._scan().get(class_name, _Calls())
        if calls.opaque:
            return None
        values = {calls.init.get(position), calls.init.get(keyword)} - {None}
        if not values:
            return default
        if calls.init_counts[position] + calls.init_counts[keyword] < len(calls.constructions):
            values.add(default if default is not None else _CONFLICT)  # `Block(32, 64, stride=2)` beside `Block(16, 32)`
        return values.pop() if len(values) == 1 and _CONFLICT not in values else None

    def config_field(self, class_name: str, field_name: str) -> str | None:
        """The one integer a field of the file's plain class `class_name` (a dataclass of sizes:
        `d_model: int = 64`) holds in every instance the file makes: its default where no
        construction passes it, else the one literal they all pass. None where something assigns
        the field, a construction passes `*args`, or the class has no such integer field."""
        key = (class_name, field_name)
        if key not in self._config_fields:
            self._config_fields[key] = self._config_field(class_name, field_name)
        return self._config_fields[key]

    def option_default(self, dest: str) -> str | None:
        """The integer default of the file's command-line option `dest`: `args.n_mels` is 64 after
        `parser.add_argument("--n-mels", type=int, default=64)`, as a run without arguments has
        it. None unless exactly one option of the file has that destination, with an integer
        default and no type but `int`."""
        if self._option_defaults is None:
            self._option_defaults = {}  # a default written as an attribute (`torch.bfloat16`) is none
            self._option_defaults = self._read_option_defaults() if "add_argument" in self._ctx.source else {}
        return self._option_defaults.get(dest)

    def parses_arguments(self, value: cst.BaseExpression | None) -> bool:
        """`parser.parse_args()`, or a call of the file's function that ends returning one
        (`args = parse_args([])`): the options of a command line."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            value = _last_returned(top_level_functions(self._ctx.module).get(value.func.value))
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "parse_args"

    def _read_option_defaults(self) -> dict[str, str]:
        found: dict[str, str | None] = {}
        for node in _outside_classes(self._ctx.module):
            if type(node) is not cst.Call or not isinstance(node.func, cst.Attribute) or node.func.attr.value != "add_argument":
                continue
            dest = _option_dest(node)
            default, kind = keyword_arg(node, "default"), keyword_arg(node, "type")
            value = self.integer(default.value) if default is not None else None
            if dest is None or keyword_arg(node, "nargs") is not None or (kind is not None and dotted_name(kind.value) != "int"):
                value = None
            found[dest] = None if dest in found or value is None else str(value)
        return {dest: value for dest, value in found.items() if dest is not None and value is not None}

    def _config_field(self, class_name: str, field_name: str) -> str | None:
        classdef = next((statement for statement in self._ctx.module.body
                         if isinstance(statement, cst.ClassDef) and statement.name.value == class_name), None)
        fields = _annotated_fields(classdef) if classdef is not None else []
        position = next((index for index, (name, _) in enumerate(fields) if name == field_name), None)
        if position is None:
            return None
        assigned, calls = self._attribute_writes_and_calls()
        if field_name in assigned:
            return None
        default = self.integer(fields[position][1]) if fields[position][1] is not None else None
        values = set()
        for call in calls.get(class_name, ()):
            if any(arg.star for arg in call.args):
                return None
            passed = argument(call, position, field_name)
            values.add(default if passed is None else self.integer(passed))
        values = values or {default}
        return str(values.pop()) if len(values) == 1 and None not in values else None

    def _attribute_writes_and_calls(self) -> tuple[set[str], dict[str, list[cst.Call]]]:
        """Outside classes, read once per file: the attribute names something assigns
        (`x.name = ...`, `+=`, annotated) and the calls of each plain name (`Config(...)`)."""
        if self._writes_and_calls is None:
            assigned: set[str] = set()
            calls: dict[str, list[cst.Call]] = {}
            for node in _outside_classes(self._ctx.module):
                if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                    assigned.update(_attributes_assigned(node))
                elif type(node) is cst.Call and isinstance(node.func, cst.Name):
                    calls.setdefault(node.func.value, []).append(node)
            self._writes_and_calls = assigned, calls
        return self._writes_and_calls

    def input_shape(self, name: str, position: int) -> Sizes | None:
        """The one shape every call of the model of class `name` (or of the top-level function
        `name`) in the file gives its `position`-th input."""
        calls = self._scan().get(name)
        sizes = calls.inputs.get(position) if calls is not None else None
        return sizes if isinstance(sizes, tuple) else None

    def input_dtype(self, name: str, position: int) -> str | None:
        """The dtype of the `position`-th input of every call that `input_shape` reads, where known."""
        calls = self._scan().get(name)
        dtype = calls.input_dtypes.get(position) if calls is not None else None
        return dtype if dtype != _CONFLICT else None

    def constructions(self, class_name: str) -> list[Site]:
        calls = self._scan().get(class_name)
        return calls.constructions if calls is not None and not calls.opaque else []

    def uses(self, name: str) -> list[Site]:
        calls = self._scan().get(name)
        return calls.uses if calls is not None else []

    def has_example_data(self) -> bool:
        """The file makes tensors of given sizes outside its classes (a script, a test), gives a
        class an `example_input_array`, or defines a dataset (`__getitem__`): only then can the
        example inputs of its models be known, and only then is the file scanned."""
        if self._example_data is None:
            source = self._ctx.source
            self._example_data = _EXAMPLE_TEXT.search(source) is not None and (
                "example_input" in source or _DATASET_TEXT.search(source) is not None or any(
                type(node) is cst.Call and last_word(node.func) in _EXAMPLE_WORDS
                and self._ctx.callee(node) in _EXAMPLE_FACTORIES for node in _outside_classes(self._ctx.module)))
        return self._example_data

    def parameter_calls(self) -> dict[tuple[str, str], list[Site]]:
        """(top-level function, parameter) -> the calls of that parameter in the function
        (`model(x)` in `def train(model, loader)`): uses of whatever model the callers pass."""
        self._scan()
        return self._parameter_calls

    # Scanning ----------------------------------------------------------------------------

    def _scan(self) -> dict[str, _Calls]:
        if self._calls is None:
            self._calls = {}
            self._scope(self._ctx.module, None, None)
        return self._calls


    def _scope(self, scope: cst.CSTNode, function: cst.FunctionDef | None, classdef: cst.ClassDef | None) -> None:
        """One module or function body: its single assignments, then its calls. Functions nested
        in functions are read for literals only (`function` is kept None for them)."""
        assigned: dict[str, cst.BaseExpression | None] = {}
        calls: list[cst.Call] = []
        nested: list[cst.CSTNode] = []
        pending = list(child_nodes(scope))
        while pending:
            node = pending.pop()
            node_class = type(node)  # exact classes: this walks every node of the file
            if node_class in _NESTED_SCOPES:
                nested.append(node)
                continue
            if node_class is cst.Assign and len(node.targets) == 1:
                for name, value in _pairs(node.targets[0].target, node.value):
                    assigned[name] = value if name not in assigned else None
                if classdef is not None and _is_example_attribute(node.targets[0].target):
                    # Lightning's `self.example_input_array = torch.randn(...)`: forward's first input.
                    sizes = self._factory_sizes(node.value)
                    _merge(self._calls.setdefault(classdef.name.value, _Calls()).inputs, 0, sizes or _CONFLICT)
            elif node_class is cst.Call:
                calls.append(node)
            pending.extend(child_nodes(node))
        site_of = (lambda call: Site(call, function, classdef)) if function is not None or scope is self._ctx.module \
            else None
        submodules = self._submodules(classdef) if classdef is not None else {}
        for call in calls:
            self._call(call, assigned, site_of, submodules)
        for node in nested:
            if isinstance(node, cst.ClassDef) and scope is self._ctx.module:
                for statement in node.body.body:
                    if isinstance(statement, cst.FunctionDef):
                        self._scope(statement, statement, node)
            elif isinstance(node, cst.FunctionDef) and scope is self._ctx.module:
                self._scope(node, node, None)
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self._scope(node, None, None)

    def _call(self, call: cst.Call, assigned: dict, site_of, submodules: dict[str, str]) -> None:
        func = call.func
        class_name = self.class_built(call)
        if class_name is not None:
            self._record_init(class_name, call, site_of)
            return
        if isinstance(func, cst.Name) and func.value in self._functions():
            self._record_inputs(func.value, call, assigned, site_of)
            return
        site = site_of(call) if site_of is not None and isinstance(func, cst.Name) else None
        if site is not None and site.function is not None and site.classdef is None \
                and has_parameter(site.function, func.value):
            self._parameter_calls.setdefault((site.function.name.value, func.value), []).append(site)
            return
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            class_name = submodules.get(func.attr.value)  # `self.attn(x)` of `self.attn = Attention(d)`
        else:
            model = assigned.get(func.value) if isinstance(func, cst.Name) else func
            class_name = self.class_built(self._unwrapped(model)) if model is not None else None
        if class_name is not None:
            self._record_inputs(class_name, call, assigned, site_of)

    def _functions(self) -> frozenset[str]:
        if self._function_names is None:
            self._function_names = frozenset(top_level_functions(self._ctx.module))
        return self._function_names

    def _submodules(self, classdef: cst.ClassDef) -> dict[str, str]:
        if id(classdef) not in self._submodule_memo:
            self._submodule_memo[id(classdef)] = _submodule_classes(classdef, self.class_built)
        return self._submodule_memo[id(classdef)]

    def class_built(self, expr: cst.BaseExpression | None) -> str | None:
        """`Net` for `Net(...)`, a Module class of this file."""
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) \
                and self._ctx.module_classes.is_module_name(expr.func.value):
            return expr.func.value
        return None

    @staticmethod
    def _unwrapped(expr: cst.BaseExpression) -> cst.BaseExpression:
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_MODEL:
            expr = expr.func.value
        return expr

    def _record_init(self, class_name: str, call: cst.Call, site_of) -> None:
        calls = self._calls.setdefault(class_name, _Calls())
        if site_of is not None:
            calls.constructions.append(site_of(call))
        if any(arg.star for arg in call.args) or site_of is None:
            calls.opaque = True  # which parameter gets what, or from where, is not known
            return
        for index, arg in enumerate(call.args):
            value = self.integer(arg.value)
            key: int | str = arg.keyword.value if arg.keyword is not None else index
            _merge(calls.init, key, str(value) if value is not None else _CONFLICT)
            calls.init_counts[key] += 1

    def _record_inputs(self, name: str, call: cst.Call, assigned: dict, site_of) -> None:
        calls = self._calls.setdefault(name, _Calls())
        if site_of is not None:
            calls.uses.append(site_of(call))
        for index, arg in enumerate(call.args):
            if arg.keyword is not None or arg.star:
                break
            value = arg.value
            if isinstance(value, cst.Name) and assigned.get(value.value) is not None:
                value = assigned[value.value]
            sizes = self._factory_sizes(value)
            _merge(calls.inputs, index, sizes if sizes is not None else _CONFLICT)
            _merge(calls.input_dtypes, index, self._factory_dtype(value) or _CONFLICT)

    def _factory_sizes(self, expr: cst.BaseExpression) -> Sizes | None:
        if not isinstance(expr, cst.Call):
            return None
        qualified = self._ctx.callee(expr)
        if qualified in _SIZED:
            sizes = [arg.value for arg in positional_args(expr)]
        elif qualified == "torch.randint":
            size = keyword_arg(expr, "size")
            positional = positional_args(expr)
            sizes = [size.value] if size is not None else [positional[-1].value] if len(positional) >= 2 else []
        else:
            return None
        if len(sizes) == 1 and isinstance(sizes[0], cst.Name):
            sizes = [self._module_constants().get(sizes[0].value, sizes[0])]  # `SHAPE = (2, 16)`
        if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
            sizes = [element.value for element in sizes[0].elements]
        values = [self.integer(size) for size in sizes]
        return tuple(map(str, values)) if values and None not in values else None

    def _factory_dtype(self, expr: cst.BaseExpression) -> str | None:
        """`int64` for `torch.randint(...)` without a `dtype=`, else the dtype the keyword names."""
        if not isinstance(expr, cst.Call):
            return None
        dtype = keyword_arg(expr, "dtype")
        if dtype is None:
            return "int64" if self._ctx.callee(expr) == "torch.randint" else None
        return dtype_named(self._ctx.qualified_name(dtype.value))

    def integer(self, expr: cst.BaseExpression, depth: int = 0) -> int | None:
        """An integer literal, a module-level constant assigned once, or arithmetic on them."""
        if isinstance(expr, cst.Name) and depth < 8:
            value = self._module_constants().get(expr.value)
            return self.integer(value, depth + 1) if value is not None else None
        option = self.option_default(expr.attr.value) if isinstance(expr, cst.Attribute) else None
        if option is not None and isinstance(expr.value, cst.Name) \
                and self.parses_arguments(self._module_constants().get(expr.value.value)):
            return int(option)  # `args.n_mels` of `args = parser.parse_args()`
        if isinstance(expr, cst.BinaryOperation):
            return arithmetic(expr.operator, self.integer(expr.left, depth + 1), self.integer(expr.right, depth + 1))
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len" \
                and len(expr.args) == 1 and isinstance(expr.args[0].value, cst.Name):
            listed = self._module_constants().get(expr.args[0].value.value)  # `len(FEATURES)` of a list
            return len(listed.elements) if isinstance(listed, (cst.List, cst.Tuple)) else None
        return constant(expr)

    def _module_constants(self) -> dict[str, cst.BaseExpression]:
        if self._constants is None:
            found: dict[str, cst.BaseExpression | None] = {}
            for statement in self._ctx.module.body:
                for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        for name, value in _pairs(small.targets[0].target, small.value):
                            found[name] = value if name not in found else None
            self._constants = {name: value for name, value in found.items() if value is not None}
        return self._constants


def _last_returned(function: cst.FunctionDef | None) -> cst.BaseExpression | None:
    """What `return` gives on the function's last line, if that line is one."""
    last = function.body.body[-1] if function is not None and isinstance(function.body, cst.IndentedBlock) else None
    returned = last.body[0] if isinstance(last, cst.SimpleStatementLine) else None
    return returned.value if isinstance(returned, cst.Return) else None


def _option_dest(call: cst.Call) -> str | None:
    """Where `parser.add_argument(...)` stores its value: `dest=`, else its first long flag
    (`--n-mels` stores `n_mels`)."""
    dest = keyword_arg(call, "dest")
    if dest is not None:
        return dest.value.evaluated_value if isinstance(dest.value, cst.SimpleString) else None
    flags = [arg.value.evaluated_value for arg in positional_args(call) if isinstance(arg.value, cst.SimpleString)]
    flag = next((flag for flag in flags if flag.startswith("--")), None)
    return flag[2:].replace("-", "_") if flag is not None else None


def _annotated_fields(classdef: cst.ClassDef) -> list[tuple[str, cst.BaseExpression | None]]:
    """A dataclass's fields in order: (name, default) of each `name: type [= default]` of its body."""
    return [
        (small.target.value, small.value)
        for statement in classdef.body.body if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
    ]


def _attributes_assigned(node: cst.CSTNode) -> list[str]:
    """`name` of each `anything.name = ...` target (or `+=`, or annotated)."""
    targets = [target.target for target in node.targets] if isinstance(node, cst.Assign) else [node.target]
    return [target.attr.value for target in targets if isinstance(target, cst.Attribute)]


def _is_example_attribute(target: cst.BaseExpression) -> bool:
    """`self.example_input_array` (Lightning) or `self.example_input`."""
    return isinstance(target, cst.Attribute) and target.attr.value in ("example_input_array", "example_input") \
        and isinstance(target.value, cst.Name) and target.value.value == "self"


def _outside_classes(module: cst.Module):
    """Every node of the module outside class bodies (its scripts, tests and functions)."""
    pending: list[cst.CSTNode] = [module]
    while pending:
        node = pending.pop()
        yield node
        if type(node) is not cst.ClassDef:
            pending.extend(child_nodes(node))


def _submodule_classes(classdef: cst.ClassDef, class_built) -> dict[str, str]:
    """`{"attn": "Attention"}` for `self.attn = Attention(d)` in the class's `__init__`."""
    init = method_named(classdef, "__init__")
    found: dict[str, str] = {}
    pending = [init.body] if init is not None else []
    while pending:
        node = pending.pop()
        if type(node) is cst.Assign and len(node.targets) == 1:
            target = node.targets[0].target
            built = class_built(ExampleCalls._unwrapped(node.value)) or _stacked_class(node.value, class_built)
            if built is not None and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                    and target.value.value == "self":
                found[target.attr.value] = built
        pending.extend(child_nodes(node))
    return found


def _stacked_class(value: cst.BaseExpression, class_built) -> str | None:
    """`Block` for `nn.Sequential(*[Block(d) for _ in range(n)])` or `nn.Sequential(Block(d),
    Block(d))`: its input is the first block's."""
    if not (isinstance(value, cst.Call) and (dotted_name(value.func) or "").endswith("Sequential") and value.args):
        return None
    if len(value.args) == 1 and value.args[0].star == "*" and isinstance(value.args[0].value, cst.ListComp):
        return class_built(value.args[0].value.elt)
    if any(arg.star or arg.keyword for arg in value.args):
        return None
    built = {class_built(arg.value) for arg in value.args}
    return built.pop() if len(built) == 1 else None


def _pairs(target: cst.BaseExpression, value: cst.BaseExpression):
    """(name, value) for `N = 8` and for each name of `B, T = 8, 20`."""
    if isinstance(target, cst.Name):
        yield target.value, value
    elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
            and len(target.elements) == len(value.elements):
        for name, element in zip(target.elements, value.elements):
            yield from _pairs(name.value, element.value)


def _merge(table: dict, key, value) -> None:
    table[key] = value if table.get(key, value) == value else _CONFLICT
