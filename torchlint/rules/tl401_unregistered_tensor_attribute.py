from __future__ import annotations

import libcst as cst

from torchlint.analysis.literals import is_number
from torchlint.analysis.module_attributes import ClassFrames, first_parameter, self_attribute
from torchlint.analysis.names import (
    SEQUENCE_TYPE_NAMES, annotation_words, argument, dotted_name, keyword_arg, method_name, method_named,
    method_receiver, parameter_named, positional_args, single_index, suite_statements,
)
from torchlint.analysis.nn_layers import parameterized_layer
from torchlint.analysis.tensor_facts.domain import TensorFacts
from torchlint.analysis.values import names_cpu
from torchlint.analysis.tensors import LEGACY_CONSTRUCTORS, PARAMETER_CLASSES, TENSOR_FACTORIES, requires_grad_true
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode
from torchlint.rule import Rule
from torchlint.walker import child_nodes, nodes_in_order

# Factories whose arguments are the sizes of the tensor they make.
_SIZED = frozenset({"torch.empty", "torch.zeros", "torch.ones"})
# The factories that make a tensor of the data they are given.
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
_NUMBER_TYPES = frozenset({"float", "int", "bool"})
_NUMBER_BUILTINS = frozenset({"float", "int", "abs", "round", "min", "max"})
# `float("inf")`, `float("-inf")`, `float("nan")`: numbers written as strings.
_NUMBER_WORDS = frozenset({"inf", "-inf", "+inf", "nan", "infinity", "-infinity"})
# Classes that move their tensors by hand.
_MOVING_METHODS = frozenset({"_apply", "to", "cuda", "state_dict"})
# What a method that moves attributes chosen at run time calls or reads.
_BY_NAME = frozenset({"setattr", "getattr", "vars", "__dict__"})
_EVERY_ATTRIBUTE = "*"
# The DataLoader arguments that name a function run on the batches it loads.
_BATCHING_HOOKS = frozenset({"collate_fn", "worker_init_fn"})
_VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Methods that place a tensor on a device, as the last word on where it is.
_PLACING_METHODS = frozenset({"to", "cuda", "cpu"})
# Methods that put a tensor on another device (or that of another tensor).
_MOVES = frozenset({"to", "cuda", "type_as"})
# Helpers that do so for their first argument (`c_f.to_device(self.labels, labels)`).
_MOVING_HELPERS = frozenset({"to_device", "move_to_device", "move_to"})
# In-place random fills, whose bounds or moments are numbers (a tensor given there is read as one).
_RANDOM_FILLS = frozenset({"uniform_", "normal_", "random_", "exponential_", "log_normal_", "cauchy_", "geometric_"})
# Factories that always make a 1-D tensor.
_VECTOR_FACTORIES = frozenset({"torch.linspace", "torch.logspace", "torch.arange"})
# What a tensor says of itself whatever its device.
_METADATA = frozenset({"shape", "ndim", "dtype"})
# Reductions that give a 0-dim tensor when no dimension is named.
_FULL_REDUCTIONS = frozenset({"prod", "sum", "mean", "max", "min", "amax", "amin", "norm", "numel"})
# Methods that keep a tensor's rows where they are, taking numbers as arguments.
_ROW_WISE = frozenset({"clamp", "clamp_", "clip", "clip_", "detach", "abs", "exp", "log", "sqrt", "float"})


def _scalar(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Name, cst.Attribute)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _scalar(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return _scalar(expr.left) and _scalar(expr.right)
    if isinstance(expr, cst.Call):
        # `math.sqrt(dim)`, `float(x)`: a number computed from numbers.
        written = dotted_name(expr.func) or ""
        if written == "float" and len(expr.args) == 1 and isinstance(expr.args[0].value, cst.SimpleString):
            return expr.args[0].value.evaluated_value.lower() in _NUMBER_WORDS
        return (written.startswith("math.") or written in _NUMBER_BUILTINS) and all(_scalar(a.value) for a in expr.args)
    return False


def _scalar_constant(ctx, factory: cst.Call) -> bool:
    """`torch.tensor(1 / math.sqrt(d))`: a 0-dim constant works on any device and needs no saving
    (one that requires grad is a learned value: it must be saved and trained)."""
    if ctx.callee(factory) not in _FROM_DATA or not factory.args or requires_grad_true(factory):
        return False
    data = factory.args[0].value
    if isinstance(data, (cst.Integer, cst.Float)):
        return True
    if isinstance(data, cst.Name):
        # `torch.tensor(attn_dim)` beside `nn.Linear(d, attn_dim)`, `torch.as_tensor(threshold)` of a `float` argument,
        # `torch.tensor(n)` of `n = K.shape[-1]`
        return _layer_size(ctx, data.value) or _number_argument(ctx.enclosing_function(), data.value) or _size_read(ctx.values.value_of(data.value))
    # A literal number somewhere is what makes an expression a computed scalar (`1 / d`, not `values`).
    return isinstance(data, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)) and _scalar(data)


def _size_read(value) -> bool:
    """`x.shape[-1]`, `x.size(0)`, `len(x)`: one whole number."""
    if isinstance(value, cst.Subscript):
        return isinstance(value.value, cst.Attribute) and value.value.attr.value == "shape"
    if isinstance(value, cst.Call):
        written = dotted_name(value.func) or ""
        return written == "len" or (written.endswith(".size") and len(value.args) == 1) or written.endswith((".dim", ".numel"))
    return False


def _empty_placeholder(ctx, factory: cst.Call) -> bool:
    """`torch.Tensor()`, `torch.empty(0)`, `torch.empty(0, 0)`, `torch.empty((0,), dtype=...,
    device=...)`: an empty tensor (a size of 0) that stands for "nothing yet", assigned anew (by a
    method or a hook) before it holds data."""
    callee = ctx.callee(factory)
    if not factory.args:
        return callee in LEGACY_CONSTRUCTORS
    sizes = [arg.value for arg in positional_args(factory)]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        sizes = [element.value for element in sizes[0].elements]
    return callee in _SIZED and any(isinstance(size, cst.Integer) and size.value == "0" for size in sizes)


def _number_argument(function: cst.FunctionDef | None, name: str) -> bool:
    """`name` is an argument of `function` annotated as a number (`float`, `bool`,
    `Optional[Union[torch.Tensor, float]]`) or, unannotated, with a number for its default
    (`epsilon=1e-32`): a threshold, a scale or a flag, not a list of values."""
    parameter = parameter_named(function, name) if function is not None else None
    if parameter is None:
        return False
    if parameter.annotation is None:
        default = parameter.default
        if isinstance(default, cst.UnaryOperation):
            default = default.expression
        return isinstance(default, (cst.Integer, cst.Float))
    words = annotation_words(function, name)
    return bool(words & _NUMBER_TYPES) and not words & SEQUENCE_TYPE_NAMES


def _layer_size(ctx, name: str) -> bool:
    """`name` is a size the enclosing function gives a `torch.nn` layer with parameters (`nn.Linear(d, name)`):
    a whole number, not the list of values a `torch.tensor(name)` might otherwise hold."""
    function = ctx.enclosing_function()
    pending: list[cst.CSTNode] = [function.body] if function is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Call) and parameterized_layer(ctx, node) is not None \
                and any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in node.args):
            return True
        pending.extend(child_nodes(node))
    return False


def _moved_by_hand(classdef: cst.ClassDef, vectors: frozenset[str]) -> set[str]:
    """The attributes the class moves itself: every `self.<name>` that its own `to()` / `cuda()` /
    `_apply()` / `state_dict()` mention (an override handles those, and only those), those another
    method moves where it uses them (`self.mean = self.mean.to(x.device)`), and those that every
    method outside `__init__` reads only where the device does not matter: to move them
    (`conv(x, self.kernel.to(x.device))`), as the bounds of a random fill, which takes numbers
    (`torch.empty(1).uniform_(low[0], low[1])`), as the index of another tensor (`w[self.idx]`,
    `w[self.idx] = v`: indices on the CPU index tensors on any device), in `len()`, for its `shape`, or as
    the truth value of an `if` or `while` (`if self.active[0][d]:`), walked for such truth values
    (`for i, flag in enumerate(self.mask): if flag:`), one element read as a number
    (`self.dilations[i].item()`), shown in an f-string (an error message), or, for the 1-D
    `vectors`, one element at a whole-number index (`self.schedule[epoch]` of `epoch: int`)."""
    found: set[str] = set()
    placed_reads: set[str] = set()
    other_reads: set[str] = set()
    for method in classdef.body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
            continue
        receiver = first_parameter(method)
        overrides = method.name.value in _MOVING_METHODS
        aliases = _aliases(method, receiver)
        consumed: set[int] = set()  # `self.x` nodes already accounted for: moved, or stored to
        pending: list[cst.CSTNode] = [method.body]
        while pending:
            node = pending.pop()
            if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == receiver:
                if overrides:
                    found.add(node.attr.value)
                elif id(node) not in consumed:
                    other_reads.add(node.attr.value)
            elif overrides and isinstance(node, cst.Name) and node.value in _BY_NAME:
                return {_EVERY_ATTRIBUTE}  # `setattr(self, name, ...)` over its attributes: all of them
            elif isinstance(node, cst.Assign) and len(node.targets) == 1:
                consumed.add(id(node.targets[0].target))
                for bank in _cpu_rows_stored(node, receiver):
                    consumed.add(id(bank))
                    placed_reads.add(bank.attr.value)
                if _alias_of(node, receiver) is not None:
                    consumed.add(id(node.value))  # read through the local name, judged there
                moved = _moved_in_place(node, receiver) if receiver is not None else None
                if moved is not None:
                    found.add(moved)
                if (local := _moved_in_place(node, None)) in aliases:
                    found.add(aliases[local])
                consumed.update(id(read) for read in _reshaped_in_place(node, receiver))
            elif receiver is not None and isinstance(node, (cst.If, cst.While)):
                for read in _truth_tested(node.test, receiver):
                    consumed.add(id(read))
                    placed_reads.add(read.attr.value)
            elif receiver is not None and (
                    read := _index_or_length(node, receiver) or _metadata(node, receiver)
                    or _element(node, receiver, method, vectors) or _walked_for_truth(node, receiver)
                    or _element_as_number(node, receiver) or _formatted(node, receiver)):
                consumed.add(id(read))
                placed_reads.add(read.attr.value)
            elif receiver is not None and (filled := _refilled(node, receiver)) is not None:
                consumed.add(id(filled))
                placed_reads.add(filled.attr.value)
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _RANDOM_FILLS:
                # `torch.empty(1).uniform_(self.low[0], self.low[1])`: bounds are read as numbers.
                for read in (read for arg in node.args for read in (arg.value, *nodes_in_order(arg.value))):
                    name = self_attribute(read, receiver) if receiver is not None else None
                    if name is not None:
                        consumed.add(id(read))
                    elif isinstance(read, cst.Name):
                        name = aliases.get(read.value)
                    if name is not None:
                        placed_reads.add(name)
            elif isinstance(node, cst.Call) and (moved := _moved_by_call(node)) is not None:
                # `(self.feats if feats is None else feats).type_as(x)`: either branch is moved.
                for moved_object in (moved.body, moved.orelse) if isinstance(moved, cst.IfExp) else (moved,):
                    # `self.bank[ids].to(device)`, `self.ids.repeat(n, 1).to(device)`: moved where read
                    moved_object = _chain_root(moved_object)
                    name = self_attribute(moved_object, receiver) if receiver is not None else None
                    if name is not None:
                        consumed.add(id(moved_object))
                        placed_reads.add(name)
            pending.extend(child_nodes(node))
    found |= placed_reads - other_reads
    return {_EVERY_ATTRIBUTE} if "__dict__" in found else found


def _index_or_length(node: cst.CSTNode, receiver: str) -> cst.Attribute | None:
    """The `self.x` of `other[self.x]`, `other[..., self.x]` (read or assigned) or of `len(self.x)`."""
    if isinstance(node, cst.Subscript):
        reads = [element.slice.value for element in node.slice if isinstance(element.slice, cst.Index)
                 and self_attribute(element.slice.value, receiver) is not None]
        return reads[0] if len(reads) == 1 else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1:
        read = node.args[0].value
    else:
        return None
    return read if self_attribute(read, receiver) is not None else None


def _element(node: cst.CSTNode, receiver: str, method: cst.FunctionDef, vectors: frozenset[str]) -> cst.Attribute | None:
    """The `self.x` of `self.x[epoch]`, one element of a 1-D tensor (`vectors`) at a literal index
    or one that `method` takes as a number (`epoch: int`): a 0-dim tensor, which mixes with
    tensors on any device. A tensor index (diffusion's `self.betas[t]`) is not one."""
    index = single_index(node) if isinstance(node, cst.Subscript) else None
    if index is None:
        return None
    whole = isinstance(index, cst.Integer) or (isinstance(index, cst.Name) and _number_argument(method, index.value))
    return node.value if whole and self_attribute(node.value, receiver) in vectors else None


def _element_as_number(node: cst.CSTNode, receiver: str) -> cst.Attribute | None:
    """The `self.x` of `self.x[i].item()`: one element read as a Python number, which the tensor's
    device does not change (tsai's `d = self.dilations[i].item()` for a convolution's dilation)."""
    if not (isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "item" and isinstance(node.func.value, cst.Subscript)):
        return None
    element = node.func.value
    if single_index(element) is None:
        return None
    return element.value if self_attribute(element.value, receiver) is not None else None


def _formatted(node: cst.CSTNode, receiver: str) -> cst.Attribute | None:
    """The `self.x` of `f"... {self.x}"`: text for a message, the same from any device."""
    if isinstance(node, cst.FormattedStringExpression) and self_attribute(node.expression, receiver) is not None:
        return node.expression
    return None


def _metadata(node: cst.CSTNode, receiver: str) -> cst.Attribute | None:
    """The `self.x` of `self.x.shape` or `self.x.ndim`: what the tensor's device does not change."""
    if isinstance(node, cst.Attribute) and node.attr.value in _METADATA and self_attribute(node.value, receiver):
        return node.value
    return None


def _truth_tested(test: cst.BaseExpression, receiver: str) -> list[cst.Attribute]:
    """The `self.x` of an `if` or `while` test that reads it as a Python truth value, which a
    tensor on any device gives: `self.x[0][d]`, `not self.x`, `self.x[ids].sum() == 0`, and each
    side of `and`/`or` (`not self.training or self.keep[i] >= rate * i`)."""
    if isinstance(test, cst.BooleanOperation):
        return _truth_tested(test.left, receiver) + _truth_tested(test.right, receiver)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and _number_like(test.comparisons[0].comparator, receiver):
        test = test.left
    while isinstance(test, (cst.UnaryOperation, cst.Subscript)) or _reduced_whole(test):
        if isinstance(test, cst.UnaryOperation):
            test = test.expression
        else:
            test = test.func.value if isinstance(test, cst.Call) else test.value
    return [test] if self_attribute(test, receiver) is not None else []


def _number_like(expr: cst.BaseExpression, receiver: str) -> bool:
    """Arithmetic of numbers, names and plain attributes (`self.rate * (self.decay * idx)`): a
    hyperparameter, no tensor's rows."""
    if isinstance(expr, cst.BinaryOperation):
        return _number_like(expr.left, receiver) and _number_like(expr.right, receiver)
    if isinstance(expr, cst.UnaryOperation):
        return _number_like(expr.expression, receiver)
    return is_number(expr) or isinstance(expr, cst.Name) or self_attribute(expr, receiver) is not None


def _refilled(node: cst.CSTNode, receiver: str) -> cst.Attribute | None:
    """The `self.x` of the statement `self.x[:-1].uniform_()`: filled anew where it is, its result
    unused."""
    call = node.value if isinstance(node, cst.Expr) else None
    if not isinstance(call, cst.Call) or method_name(call) not in _RANDOM_FILLS:
        return None
    filled = _chain_root(call.func.value)
    return filled if self_attribute(filled, receiver) is not None else None


def _chain_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`self.x` of `self.x[ids]` or `self.x.repeat(n, 1)[0]`: rows and method results peeled off."""
    while isinstance(expr, cst.Subscript) or isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.value if isinstance(expr, cst.Subscript) else expr.func.value
    return expr


def _reduced_whole(expr: cst.BaseExpression | None) -> bool:
    """`x.sum()`, `x.max()`: a method reducing the whole tensor to one value."""
    return isinstance(expr, cst.Call) and method_name(expr) in _FULL_REDUCTIONS and not expr.args


def _walked_for_truth(node: cst.CSTNode, receiver: str) -> cst.Attribute | None:
    """The `self.x` of `for i, flag in enumerate(self.x):` (or `for flag in self.x:`) whose
    elements the loop reads only as truth values (`if flag:`): a mask that steers Python."""
    if not isinstance(node, cst.For):
        return None
    walked, element = node.iter, node.target
    if isinstance(walked, cst.Call) and dotted_name(walked.func) == "enumerate" and len(walked.args) == 1 \
            and isinstance(element, cst.Tuple) and len(element.elements) == 2:
        walked, element = walked.args[0].value, element.elements[1].value
    if self_attribute(walked, receiver) is None or not isinstance(element, cst.Name):
        return None
    uses = [use for use in nodes_in_order(node.body) if isinstance(use, cst.Name) and use.value == element.value]
    tests = [test for test in nodes_in_order(node.body) if isinstance(test, (cst.If, cst.While))]
    truth = {id(_unnegated(test.test)) for test in tests}
    return walked if uses and all(id(use) in truth for use in uses) else None


def _unnegated(test: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    return test


def _reshaped_in_place(assignment: cst.Assign, receiver: str | None) -> list[cst.Attribute]:
    """The reads of `self.x` in `self.x = self.x.repeat(n, 1).view(-1, self.x.shape[-1])`: the
    tensor is only made again from itself, so the reads that count are those of the new value."""
    target, value = assignment.targets[0].target, assignment.value
    name = self_attribute(target, receiver) if receiver is not None else None
    root = value
    while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
        root = root.func.value
    if name is None or self_attribute(root, receiver) != name:
        return []
    return [node for node in (value, *nodes_in_order(value)) if self_attribute(node, receiver) == name]


def _moved_in_place(assignment: cst.Assign, receiver: str | None) -> str | None:
    """`self.x = self.x.to(...)` (or `.cuda()`, `.type_as(...)`, then reshaped), or `self.x =
    to_device(m, t)` (what a moving helper returns, espnet's order or the other): the name `x`;
    with no receiver, a local name moved in place: `x = x.to(...)`, `x = to_device(m, x)`."""
    target, value = assignment.targets[0].target, assignment.value
    if receiver is None:
        moved = target.value if isinstance(target, cst.Name) else None
    else:
        moved = self_attribute(target, receiver)
    if moved is None:
        return None
    written = f"{receiver}.{moved}" if receiver else moved
    if isinstance(value, cst.Call) and _moving_helper(value) \
            and (receiver is not None or any(dotted_name(arg.value) == written for arg in value.args)):
        return moved  # espnet's `to_device(m, x)` moves its second argument, others their first
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):  # `.to(d).view(1, -1)` too
        if value.func.attr.value in _MOVES and dotted_name(value.func.value) == written:
            return moved
        value = value.func.value
    return None


def _cpu_rows_stored(assignment: cst.Assign, receiver: str | None) -> list[cst.Attribute]:
    """`self.bank[ids] = u.detach().cpu()`: rows brought back to the CPU and stored into a tensor
    kept there on purpose (a memory bank of per-sample state), or computed from such rows alone
    (`self.tau[ids] = (self.tau[ids] - lr * self.grad[ids]).clamp_(min=0.01)`) or together with
    new CPU rows (`(1 - b) * self.grad[ids] + b * grad.cpu()`: a CUDA operand of more than one
    element would not mix with them); the banks written to and read (none: not such a store)."""
    target, value = assignment.targets[0].target, assignment.value
    if receiver is None or not isinstance(target, cst.Subscript) or self_attribute(target.value, receiver) is None:
        return []
    banks: list[cst.Attribute] = [target.value]
    pending, moved_to_cpu = [value], False
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Call) and method_name(node) == "cpu":
            moved_to_cpu = True
        elif isinstance(node, cst.Subscript) and self_attribute(node.value, receiver) is not None:
            banks.append(node.value)  # rows of a bank, wherever it is kept
        elif isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
            pending.extend((node.left, node.right) if isinstance(node, cst.BinaryOperation) else (node.expression,))
        elif isinstance(node, cst.Call) and method_name(node) in _ROW_WISE:
            pending.append(node.func.value)  # `.clamp_(min=...)` of the rows: numbers as arguments
        elif not (is_number(node) or self_attribute(node, receiver) is not None):
            return []  # a local (`grad`) may be on any device
    return banks if moved_to_cpu or len(banks) > 1 else []


def _moved_by_call(call: cst.Call) -> cst.BaseExpression | None:
    """What the call moves: `x` in `x.to(device)`, `x.type_as(y)`, and in a helper named for it,
    `to_device(x, labels)`."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _MOVES:
        return call.func.value
    first = positional_args(call)[:1]
    return first[0].value if first and _moving_helper(call) else None


def _moving_helper(call: cst.Call) -> bool:
    """`to_device(...)`, `c_f.to_device(...)`: a helper named for moving tensors."""
    return (dotted_name(call.func) or "").rsplit(".", 1)[-1] in _MOVING_HELPERS


def _alias_of(assignment: cst.Assign, receiver: str | None) -> tuple[str, str] | None:
    """`threshold = self.threshold`: (the local name, the attribute)."""
    target = assignment.targets[0].target
    attribute = self_attribute(assignment.value, receiver) if receiver is not None else None
    return (target.value, attribute) if isinstance(target, cst.Name) and attribute is not None else None


def _aliases(method: cst.FunctionDef, receiver: str | None) -> dict[str, str]:
    """The local names a method gives its attributes (`classes = self.classes`), which it may
    move under that name: `classes = classes.to(x.device)`."""
    found = {}
    for node in nodes_in_order(method.body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1 and (alias := _alias_of(node, receiver)):
            found[alias[0]] = alias[1]
    return found


class UnregisteredTensorAttribute(Rule):
    """
    ## What it does
    Flags `self.x = <tensor>` in the `__init__` of an `nn.Module` when the tensor comes from a
    `torch.<factory>(...)` or a legacy constructor such as `torch.FloatTensor(...)` (also through
    methods, indexing and torch functions of it: `torch.triu(torch.ones(n, n), diagonal=1)`,
    `torch.tensor(mean).view(-1, 1, 1) if mean else None`, from another such attribute:
    `self.grid.repeat(batch, 1, 1)`, through `Variable(t)`, and from a function or method of another
    project file that returns a tensor it made on the default device: `self.priors =
    self.priorbox.forward()`), the class never registers `x` (`register_buffer("x", ...)`,
    `nn.Parameter`), and `x` is read after `__init__`: by a method of the class (the finding names
    where), a subclass, or other code of the file. A tensor read only in `__init__`, to build a
    buffer or a parameter, is not reported, nor one the class moves itself: named in its own `to()`
    / `cuda()` / `_apply()` override (the others still are), or moved where it is used (`self.mean =
    self.mean.to(x.device)`, `self.eos = to_device(x, self.eos)` in espnet's argument order, or
    every read outside `__init__` moving it: `conv(x, self.kernel.to(x.device))`,
    `self.ids.repeat(n, 1).to(x.device)` or `to_device(self.kernel, x)`, reshaping it in place aside:
    `self.kernel = self.kernel.repeat(c, 1, 1)`, also under a local name: `keep = self.keep` then
    `keep = keep.to(x.device)`, also where only the file's subclasses read it and each moves it:
    `self.class_threshold.to(logits.device)`), nor one read only where a DataLoader builds batches
    (the method given as its `collate_fn`, and the methods that calls), on CPU data. Nor is a 0-dim
    value from a full reduction (`self.dim = torch.prod(torch.tensor(shape))`): it mixes with tensors on any
    device and `__init__` computes it again when a checkpoint is loaded, nor a 0-dim constant:
    `torch.tensor(float("inf"))`, `torch.sqrt(torch.tensor(attn_dim))` of a size the class gives a
    layer (`nn.Linear(d, attn_dim)`), `torch.as_tensor(threshold)` of an argument annotated as a
    number or a flag (`threshold: float`, `sort: bool`) or with a number for its default
    (`epsilon=1e-8`), or of a size read off a tensor (`n = K.shape[-1]`), nor an empty placeholder
    (`self.cache = torch.Tensor()`, `torch.empty(0)`, `torch.empty(0, 0)`, `torch.empty((0,),
    dtype=...)`), assigned anew before it holds data; nor one moved where it is read under a
    condition: `(self.feats if feats is None else feats).type_as(x)`; nor one read only as the
    bounds of a random fill (`torch.empty(1).uniform_(self.log_ratio[0], self.log_ratio[1])`),
    which takes numbers, or only as the index of another tensor (`w[self.observed]`,
    `w[self.missing] = v`: CPU indices index a tensor on any device), in `len()`, for its `shape`,
    as the truth value of an `if` or `while` (`if self.active[0][d]:`, also compared with a number
    or either side of `or`: `if not self.training or self.keep[i] >= rate * i:`) and refilled in
    place (`self.keep[:-1].uniform_()` as a statement), walked for such truth values (`for i, flag
    in enumerate(self.mask): if flag:`), one element read as a number (`self.dilations[i].item()`),
    shown in an f-string (`f"supported: {self.atomic_numbers}"`), or, made 1-D
    (`torch.linspace(...)`), one element at a time at a whole-number index (`self.schedule[epoch]`
    of `epoch: int`: a 0-dim tensor; a tensor index such as diffusion's `self.betas[t]` is
    reported); nor one that a method `__init__` calls
    afterwards assigns anew (`self.set_timesteps(n)`): it never outlives `__init__`; nor a
    placeholder that every method using it assigns anew before reading it (`self.weight =
    w.reshape(out, in)` at the top of `forward`); nor a bank of per-sample state kept on the CPU on
    purpose, whose rows are moved where they are read (`self.u[ids].to(device)`), tested against
    a number (`if self.u[ids].sum() == 0:`), and stored back from the CPU (`self.u[ids] =
    u.cpu()`, or a moving average of its rows and such CPU rows, `(1 - b) * self.g[ids] + b *
    g.cpu()`) or computed from banks alone (`self.tau[ids] = (self.tau[ids] - lr *
    self.g[ids]).clamp_(min=0.01)`); nor one whose name an `_apply()` override somewhere in
    the project moves on another object (`m.stride = fn(m.stride)`, as YOLO's model does for its
    Detect head). Test code (a test module, or a module of a test folder such as
    `mylib/testing/mocks.py`) is not checked: a test that moves such a Module fails there and then,
    and none is saved for later.

    ## Why is this bad?
    A plain tensor attribute is invisible to the Module machinery: `model.to(device)`,
    `.cuda()`, `.half()` leave it behind (a device mismatch at the first forward on the GPU), it
    is missing from `state_dict()` (not saved, not loaded), and if it requires grad it is missing
    from `model.parameters()` (never optimized).

    ## Example
    ```python
    def __init__(self, dim):
        super().__init__()
        self.mask = torch.ones(dim, dim).tril()
        self.scale = torch.ones(dim, requires_grad=True)
    ```

    ## Use instead
    ```python
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("mask", torch.ones(dim, dim).tril())
        self.scale = nn.Parameter(torch.ones(dim))
    ```

    ## Severity
    A warning, except for a tensor made on the device the class keeps itself: placed on
    `self.device` (`torch.LongTensor(ids).to(self.device)`, `torch.zeros(n, device=self._device)`)
    where the class, a base of the file or a base of another project file sets that attribute
    (`self.device = config["device"]`, as RecBole's models do) rather than defining it as a
    property. There the finding is a hint (reported under `show-hints = true` or `--show-hints`):
    the class places its tensors by hand, and the tensor goes wrong only when the Module is moved
    after all, or restored from a checkpoint. A `device` property (`next(self.parameters()).device`,
    Lightning's, or one of a base from another library) is the parameters' device when `__init__`
    runs, before the model is moved: a warning. So is a tensor that requires grad, which the
    optimizer never sees. A tensor placed on the CPU in so many words (`torch.tensor(box,
    device="cpu")`, `t.cpu()`, `t.to("cpu")`) is a hint too: the author chose the device that
    `.to()` leaves it on.
    """

    code = "TL401"
    name = "unregistered-tensor-attribute"
    summary = "A tensor stored on a Module without `register_buffer`/`nn.Parameter` is not moved or saved"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._classes = ClassFrames(ctx)
        self._reads_outside_init: set[str] | None = None
        # The device attribute each candidate is placed on (`.to(self.device)`), by assignment.
        self._placed_on: dict[int, str] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.enter(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        frame = self._classes.leave()
        # The suite builds its helper Modules and runs them where it built them: one that a test
        # moves fails in that test, at once, and none is saved for later.
        unregistered = frame.unregistered() if not self.ctx.serves_tests else ()
        # Read only for a class with an unregistered tensor: few classes have one.
        vectors = frozenset(name for assignment, name, _ in unregistered if self._vector(assignment.value))
        moved = _moved_by_hand(node, vectors) if unregistered else set()
        batching = _batching_methods(node) if unregistered else frozenset()
        for assignment, name, message in unregistered:
            if name in moved or _EVERY_ATTRIBUTE in moved or _replaced_before_init_returns(node, assignment, name) \
                    or _assigned_before_every_read(node, name):
                continue
            used = _first_read(node, name, batching)
            if batching and not used and _first_read(node, name):
                continue  # read only where a DataLoader builds batches, from CPU data, on the CPU
            # Read only in `__init__` (to build a buffer, a parameter or another attribute): the
            # tensor is never used on the wrong device, and nothing is lost with the state_dict.
            if (used or self._read_outside_init(name) and not self._moved_by_subclasses(node, name)) \
                    and name not in self.ctx.project.moved_by_apply():
                self._report(node, assignment, name, message, used)

    def _report(self, classdef: cst.ClassDef, assignment: cst.Assign, name: str, message: str, used) -> None:
        """A tensor made on the device the class keeps itself (`self.device = config["device"]`,
        then `.to(self.device)`) is a hint: the class places its tensors by hand, and this one goes
        wrong only when the Module is moved after all, or restored from a checkpoint."""
        if _on_the_cpu(assignment.value):
            self.report(assignment, f"`self.{name}` is placed on the CPU on purpose and not registered: `.to()`/"
                                    f"`.cuda()` leave it there, as written, and `state_dict()` does not save it; "
                                    f"`self.register_buffer(\"{name}\", ..., persistent=False)` would make it "
                                    f"follow the module", related=used, severity=Severity.HINT)
            return
        device = self._placed_on.get(id(assignment))
        kept, where = self._kept_device(classdef, device, frozenset()) if device is not None else (None, ())
        if not kept:
            self.report(assignment, message, related=used)
            return
        self.report(assignment, f"`self.{name}` is made on `self.{device}`, the device this class keeps, and not "
                                f"registered: a later `.to()`/`.cuda()` leaves it there and `state_dict()` does "
                                f"not save it; `self.register_buffer(\"{name}\", ...)` would do both",
                    related=(*used, *where), severity=Severity.HINT)

    def _kept_device(self, classdef: cst.ClassDef, device: str, seen: frozenset[str]) -> tuple[bool | None, tuple]:
        """Whether the class (or a base of the file or the project) sets `self.<device>` itself
        (True, with where), defines it as a method or property (`def device(self): return
        next(self.parameters()).device`, the device of the parameters when `__init__` ran: False),
        or neither, as far as torchlint sees (None: a base from another library, such as
        Lightning's, whose `device` follows the Module)."""
        if method_named(classdef, device) is not None:
            return False, ()
        setter = _attribute_assignment(classdef, device)
        if setter is not None:
            return True, (RelatedNode(setter, f"`self.{device}` is set here"),)
        for base in classdef.bases:
            written = dotted_name(base.value)
            local = self.ctx.module_classes.class_named(written) if written and written not in seen else None
            if local is not None:
                kept, where = self._kept_device(local, device, seen | {written})
            else:
                qualified = self.ctx.qualified_name(base.value)
                fact = self.ctx.project.lookup(f"{qualified}.{device}") if qualified else None
                kept = None if fact is None else fact.kind == "attribute"
                where = self.ctx.project.related(fact.notes, self.ctx.path) if kept else ()
            if kept is not None:
                return kept, where
        return None, ()

    def _moved_by_subclasses(self, classdef: cst.ClassDef, name: str) -> bool:
        """The subclasses of the file (`class RAMNormal(RAM):`) read the attribute, and move it
        where they do (`self.class_threshold.to(logits.device)`), and no other code of the file
        reads it."""
        family = _subclasses(self.ctx.module, classdef)
        return bool(family) and name not in _attribute_reads_outside_init(self.ctx.module, skipped=family) \
            and all(name in _moved_by_hand(subclass, frozenset()) or not _first_read(subclass, name)
                    for subclass in family)

    def _vector(self, value: cst.BaseExpression) -> bool:
        """`torch.linspace(...)`, `torch.arange(...)`, `torch.tensor([0.1, 0.5])`: a 1-D tensor."""
        callee = self.ctx.callee(value) if isinstance(value, cst.Call) else None
        if callee in _FROM_DATA and value.args and isinstance(value.args[0].value, (cst.List, cst.Tuple)):
            return not any(isinstance(element.value, (cst.List, cst.Tuple)) for element in value.args[0].value.elements)
        return callee in _VECTOR_FACTORIES

    def _read_outside_init(self, name: str) -> bool:
        """`.<name>` is read somewhere in the file outside every `__init__` (a subclass's method,
        the training script). Asked only for attributes no method of their own class reads."""
        if self._reads_outside_init is None:
            self._reads_outside_init = _attribute_reads_outside_init(self.ctx.module)
        return name in self._reads_outside_init

    def visit_Call(self, node: cst.Call) -> None:
        frame = self._classes.method_frame()
        if frame is not None:
            frame.register_call(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        frame = self._classes.method_frame()
        if frame is None or len(node.targets) != 1:
            return
        name = self._classes.self_target(node.targets[0].target)
        if name is None:
            return
        factory = self._factory(node.value, frame)
        if factory is None or _empty_placeholder(self.ctx, factory) or _scalar_constant(self.ctx, factory) \
                or self._full_reduction(node.value):
            if self._is_parameter(node.value):
                frame.registered.add(name)
            return
        function = self.ctx.enclosing_function()
        if function is None or function.name.value != "__init__" or self.ctx.guards.in_version_gate(node):
            return
        if not self._holds_tensor(node.value) and self._without_variable(node.value) is not factory:
            return  # `(4 ** torch.arange(n)).tolist()`: a list made with a tensor
        if factory is frame.tensor_factories.get(name):
            return  # `self.kernel = torch.roll(self.kernel, ...)`: the attribute is reported once
        written = self.ctx.code_for(factory.func)
        frame.tensor_factories[name] = factory
        device = _placement(self._classes, node.value)
        if device is not None and not requires_grad_true(factory):
            self._placed_on[id(node)] = device
        frame.candidates.append(
            (
                node,
                name,
                f"`self.{name}` holds a tensor from `{written}(...)` that `.to()`/`.cuda()` do not move and "
                f"`state_dict()` does not save; use `self.register_buffer(\"{name}\", ...)` (or `nn.Parameter`)",
            )
        )

    def _factory(self, value: cst.BaseExpression, frame) -> cst.Call | None:
        """The `torch.<factory>(...)` call at the root of `value`: through method calls, indexing,
        torch functions of it (`torch.triu(torch.ones(n, n))`), arithmetic, either branch of a
        conditional expression (`torch.tensor(mean).view(-1, 1, 1) if mean else None`) and another
        unregistered tensor attribute of the class (`self.grid.repeat(batch, 1, 1)`)."""
        while True:
            if isinstance(value, cst.IfExp):
                return self._factory(value.body, frame) or self._factory(value.orelse, frame)
            if isinstance(value, cst.BinaryOperation):
                return self._factory(value.left, frame) or self._factory(value.right, frame)
            if isinstance(value, cst.Attribute):
                return frame.tensor_factories.get(self._classes.self_target(value))
            if isinstance(value, cst.UnaryOperation):
                value = value.expression
                continue
            if isinstance(value, cst.Call):
                callee = self.ctx.callee(value)
                if callee in TENSOR_FACTORIES or callee in LEGACY_CONSTRUCTORS or self._project_tensor(value, callee):
                    return value
                if callee in _VARIABLES and value.args:
                    value = self._without_variable(value)
                    continue
                receiver = method_receiver(value) if callee is None else self._torch_function_input(value, callee)
                if receiver is None:
                    return None
                value = receiver
            elif isinstance(value, cst.Subscript):
                value = value.value
            else:
                return None

    def _full_reduction(self, value: cst.BaseExpression) -> bool:
        """`torch.prod(torch.tensor(shape))`, `t.sum()`: a 0-dim value (a size, a count), which
        mixes with tensors on any device and is computed again by `__init__` on loading."""
        if not isinstance(value, cst.Call) or any(arg.keyword is not None for arg in value.args):
            return False
        callee = self.ctx.callee(value)
        if callee is not None:
            return callee.removeprefix("torch.") in _FULL_REDUCTIONS and len(value.args) == 1
        return _reduced_whole(value)

    def _without_variable(self, value: cst.BaseExpression) -> cst.BaseExpression:
        """`t` for `Variable(t, volatile=True)`: a Variable is a plain tensor since torch 0.4."""
        while isinstance(value, cst.Call) and value.args and self.ctx.callee(value) in _VARIABLES:
            value = value.args[0].value
        return value

    def _project_tensor(self, call: cst.Call, callee: str | None) -> bool:
        """A function or method of another file of the project returns a tensor it made on the
        default device (`self.priors = self.priorbox.forward()`, PriorBox of `layers/`)."""
        if callee is None and isinstance(call.func, cst.Attribute):
            owner = call.func.value
            made = self.ctx.self_attributes.value_of(owner) if isinstance(owner, cst.Attribute) else owner
            # A class the file has from `import *` is known by its plain name.
            owner_class = (self.ctx.callee(made) or dotted_name(made.func)) if isinstance(made, cst.Call) else None
            callee = f"{owner_class}.{call.func.attr.value}" if owner_class else None
        fact = self.ctx.project.lookup(callee) if callee and not callee.startswith("torch.") else None
        return fact is not None and fact.kind == "tensor"

    @staticmethod
    def _torch_function_input(call: cst.Call, callee: str) -> cst.BaseExpression | None:
        """The tensor a `torch.<op>(x, ...)` transforms (`torch.triu`, `torch.exp`), not a module or parameter."""
        if callee.count(".") != 1 or not callee.startswith("torch.") or callee in PARAMETER_CLASSES:
            return None
        first = positional_args(call)[:1]
        return first[0].value if first else None

    def _holds_tensor(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.IfExp):
            return self._holds_tensor(value.body) or self._holds_tensor(value.orelse)
        return isinstance(self.ctx.tensors.facts(value), TensorFacts)

    def _is_parameter(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Call) and self.ctx.callee(value) in PARAMETER_CLASSES


def _placement(classes: ClassFrames, value: cst.BaseExpression) -> str | None:
    """`device` for `torch.LongTensor(ids).to(self.device)` or `torch.zeros(n, device=self._device)
    .clone()`: the attribute of the instance, named for a device, that the value is placed on last."""
    placed = _last_placement(value)
    name = classes.self_target(placed[1]) if placed is not None and placed[1] is not None else None
    return name if name is not None and "device" in name else None


def _on_the_cpu(value: cst.BaseExpression) -> bool:
    """`torch.tensor(box, device="cpu")`, `t.cpu()`, `t.to("cpu")`: placed on the CPU last, in
    so many words."""
    placed = _last_placement(value)
    if placed is None:
        return False
    call, target = placed
    return method_name(call) == "cpu" or target is not None and names_cpu(target)


def _last_placement(value: cst.BaseExpression) -> tuple[cst.Call, cst.BaseExpression | None] | None:
    """The call that places `value` last, through the methods applied after it (`.clone()`): a
    move (`.to(...)`, `.cuda()`, `.cpu()`) or a factory's `device=`, with the device it names
    (None for `.cuda()` and `.cpu()` without one)."""
    while isinstance(value, cst.Call):
        moves = isinstance(value.func, cst.Attribute) and value.func.attr.value in _PLACING_METHODS
        keyword = keyword_arg(value, "device")
        target = argument(value, 0, "device") if moves else keyword.value if keyword is not None else None
        if target is not None or moves:
            return value, target
        value = method_receiver(value)
    return None


def _attribute_assignment(classdef: cst.ClassDef, name: str) -> cst.CSTNode | None:
    """The first statement of a method of the class that assigns `<self>.<name>`, anywhere in its body."""
    for statement in suite_statements(classdef.body):
        receiver = first_parameter(statement) if isinstance(statement, cst.FunctionDef) else None
        for node in nodes_in_order(statement) if receiver is not None else ():
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
                [node.target] if isinstance(node, cst.AnnAssign) else []
            if any(self_attribute(target, receiver) == name for target in targets):
                return node
    return None


def _attribute_reads_outside_init(module: cst.Module, skipped: tuple[cst.ClassDef, ...] = ()) -> set[str]:
    """The attribute names read (`x.<name>`, not assigned) anywhere outside an `__init__`, and
    outside the `skipped` classes."""
    found: set[str] = set()
    pending: list[cst.CSTNode] = [module]
    while pending:
        node = pending.pop()
        if (isinstance(node, cst.FunctionDef) and node.name.value == "__init__") or isinstance(node, cst.AssignTarget) \
                or any(node is classdef for classdef in skipped):
            continue
        if isinstance(node, cst.Attribute):
            found.add(node.attr.value)
        pending.extend(child_nodes(node))
    return found


def _subclasses(module: cst.Module, classdef: cst.ClassDef) -> tuple[cst.ClassDef, ...]:
    """The top-level classes of the file that derive from `classdef`, directly or through one
    another (`class RAMOpenset(RAMNormal)`, `class RAMNormal(RAM)`)."""
    family = {classdef.name.value}
    found: list[cst.ClassDef] = []
    for statement in module.body:
        if isinstance(statement, cst.ClassDef) and statement is not classdef \
                and any(isinstance(base.value, cst.Name) and base.value.value in family for base in statement.bases):
            family.add(statement.name.value)
            found.append(statement)
    return tuple(found)


def _replaced_before_init_returns(classdef: cst.ClassDef, assignment: cst.Assign, name: str) -> bool:
    """`self.timesteps = ...` in `__init__`, then `self.set_timesteps(n)`, which assigns
    `self.timesteps` anew: the first tensor never outlives `__init__` (the method's is judged
    where it is made)."""
    init = method_named(classdef, "__init__")
    receiver = first_parameter(init) if init is not None else None
    statements = suite_statements(init.body) if receiver is not None else []
    made_at = next((i for i, line in enumerate(statements)
                    if isinstance(line, cst.SimpleStatementLine) and assignment in line.body), None)
    if made_at is None:
        return False
    for line in statements[made_at + 1:]:
        call = line.body[0].value if isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Expr) else None
        method = self_attribute(call.func, receiver) if isinstance(call, cst.Call) else None
        called = method_named(classdef, method) if method is not None else None
        if called is not None and _assigns_attribute(called, name):
            return True
    return False


def _assigned_before_every_read(classdef: cst.ClassDef, name: str) -> bool:
    """Every method but `__init__` that mentions `self.<name>` first assigns it anew, in a
    statement of its own body that does not read it (`self.weight = w.reshape(out, in)` at the top
    of `forward`): the tensor `__init__` made is a placeholder no method reads."""
    mentioning = 0
    for method in classdef.body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
            continue
        receiver = first_parameter(method)
        first = next((line for line in suite_statements(method.body) if _mentions_attribute(line, receiver, name)), None)
        if first is None:
            continue
        mentioning += 1
        assignment = first.body[0] if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 else None
        if not isinstance(assignment, cst.Assign) or _mentions_attribute(assignment.value, receiver, name) \
                or not any(self_attribute(target.target, receiver) == name for target in assignment.targets):
            return False
    return mentioning > 0


def _mentions_attribute(node: cst.CSTNode, receiver: str | None, name: str) -> bool:
    return receiver is not None and any(self_attribute(inner, receiver) == name for inner in (node, *nodes_in_order(node)))


def _assigns_attribute(method: cst.FunctionDef, name: str) -> bool:
    """The method's own statements (not its branches) assign `<self>.<name>`."""
    receiver = first_parameter(method)
    return receiver is not None and any(
        isinstance(small, cst.Assign) and any(self_attribute(target.target, receiver) == name for target in small.targets)
        for line in suite_statements(method.body) if isinstance(line, cst.SimpleStatementLine) for small in line.body
    )


def _batching_methods(classdef: cst.ClassDef) -> frozenset[str]:
    """The methods a DataLoader calls to build batches (`DataLoader(..., collate_fn=self._sample)`),
    and those they call (`self._pos_sample(batch)`): they run on CPU data, in the loader's workers."""
    found: set[str] = set()
    calls: dict[str, set[str]] = {}
    for method in classdef.body.body:
        if not isinstance(method, cst.FunctionDef):
            continue
        receiver = first_parameter(method)
        calls[method.name.value] = called = set()
        for node in nodes_in_order(method.body):
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in _BATCHING_HOOKS:
                found.add(self_attribute(node.value, receiver or "self") or "")
            elif isinstance(node, cst.Call) and receiver is not None and (callee := self_attribute(node.func, receiver)):
                called.add(callee)
    pending = list(found)
    while pending:
        for callee in calls.get(pending.pop(), ()):
            if callee not in found:
                found.add(callee)
                pending.append(callee)
    return frozenset(found - {"", "__init__"})


def _first_read(classdef: cst.ClassDef, name: str, skipped: frozenset[str] = frozenset()) -> tuple[RelatedNode, ...]:
    """Where a method other than `__init__` (and the `skipped` ones) first reads `self.<name>`: where the tensor, left on
    the device it was made on, meets inputs on the device the module was moved to (unless that
    method moves it by hand). Searched only for a class with a finding."""
    for method in classdef.body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__" or method.name.value in skipped:
            continue
        self_name = first_parameter(method)
        pending: list[cst.CSTNode] = [method.body]
        while pending:
            node = pending.pop()
            if self_name is not None and self_attribute(node, self_name) == name:
                return (RelatedNode(node, f"used here, in `{method.name.value}()`"),)
            if not isinstance(node, cst.AssignTarget):  # a write is no read
                pending.extend(reversed(child_nodes(node)))
    return ()
