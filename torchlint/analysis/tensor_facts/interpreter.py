"""The flow-sensitive interpretation of one function (or a module's top level) over tensor facts.

Statements are interpreted in control-flow order: both branches of an `if` start from the state
before it and merge what both know (a branch that returns or raises does not reach the merge);
a loop body is interpreted until the state at its head stops changing (then names that still
change are widened to unknown), so a value reassigned in the loop is known after it. Every
expression is evaluated once per pass and its value stored in the model's memo, keyed by node.

Evaluating an op also checks its operands' devices: a tensor on the default device (or the CPU)
with at least one dimension, combined with a tensor on an accelerator, the working device or the
module's device, is a device conflict recorded against the call that created it.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.layer_shapes import (
    KEYWORD_FLAGS, PARAMETER_LAYER, LayerConfig, LayerOutput, attention_input_contradiction, flattened_sizes,
    initial_state_contradiction, instantiated, output as layer_output, padding_mask_contradiction, shaped, size_parameters,
    with_integers,
)
from torchlint.analysis.layer_sizes import FUNCTIONAL_POOLING, arithmetic, pads_to_same, pooling_layer
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.analysis.layouts import Layout, arg_code, int_value, shape_args, sliced_size
from torchlint.analysis.module_attributes import registration_of
from torchlint.analysis.modules import is_torch_module_class
from torchlint.analysis.names import (
    argument, assigned_once, assigns_name, dotted_name, has_parameter, integer, is_constant_false, is_constant_none,
    is_name, isinstance_check, keyword_arg, method_named, parameter_named, positional_args, single_index,
    suite_statements, torch_keyword,
)
from torchlint.analysis.op_shapes import interpolated, narrowed, one_hot, padded, repeated, squeezed, stft_sizes
from torchlint.analysis.tensor_facts.domain import (
    NOTHING, NUMBER, UNKNOWN, Collected, Device, DeviceValue, DtypeValue, FunctionValue, Iterable, ModuleValue, Number,
    ObjectValue, Sequence,
    TensorFacts, Value,
    element_of, holds_loaded, join, join_devices, unloaded, unpack,
)
from torchlint.analysis.tensor_facts.ops import (
    EINOPS_FUNCTIONS, FUNCTION_OPS, METHOD_OPS, NOT_TENSOR_METHODS, NUMBER_ATTRIBUTES,
    PARAMETER_FREE_LAYERS, RANK_PRESERVING_LAYERS, TENSOR_ATTRIBUTES, Op, Rule, dtype_named,
)
from torchlint.analysis.tensors import (
    LEGACY_CONSTRUCTOR_DTYPES, LEGACY_CONSTRUCTORS, PARAMETER_CLASSES, requires_grad_true,
)
from torchlint.analysis.shape_checks import known_sizes, literal
from torchlint.analysis.torch_api import ACTIVATION_LAYERS, SCORE_LAYERS
from torchlint.walker import child_nodes, every_node
from torchlint.analysis.values import (
    DATA_FACTORIES, DTYPE_NAMES, LIKE_FACTORIES, MODULE_FLUENT_METHODS, NOT_TENSOR_FUNCTIONS, SIZE_FACTORIES, TENSOR_NAMESPACES,
    device_string_kind, string_value,
)

if TYPE_CHECKING:
    from torchlint.analysis.tensor_facts.model import Scope, TensorModel

Env = dict[str, Value]
_LOOP_PASSES = 3
_RECURRENT = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})
# What reading a tensor's field tells without computing with it, wherever the tensor is.
_PLACE_FREE_FIELDS = frozenset({"shape", "ndim", "dtype", "device"})
_PAIR_OUTPUT = frozenset({"torch.nn.MultiheadAttention"})
_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode"})
_NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "abs", "ord", "hash", "sum", "max", "min"})
_REDUCING_BUILTINS = frozenset({"sum", "max", "min"})
# Without a dim these work along the last one (`x.sort()`, `x.mode()`), not over the whole tensor.
_ALONG_LAST_DIM_BY_DEFAULT = frozenset({"sort", "mode", "cummax", "cummin"})
# Reductions whose second parameter (after `dim`) is `keepdim` (`std`'s is `unbiased`).
_DIM_THEN_KEEPDIM = frozenset(
    "sum mean nansum nanmean prod max min amax amin argmax argmin logsumexp median nanmedian mode all any".split()
)
_SEQUENCE_BUILTINS = frozenset({"list", "tuple", "sorted", "reversed", "iter", "set"})
# Keyword arguments of torch ops that are operands (a tensor there must be on the op's device).
_OPERAND_KEYWORDS = frozenset(
    {"other", "mask", "input", "weight", "target", "index", "value", "bias", "tensor", "tensors", "end",
     "mat2", "vec2", "tensor1", "tensor2", "pos_weight"}
)
_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_VARIABLES = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
_TENSOR_ONLY_METHODS = frozenset({"contiguous", "permute", "unsqueeze", "movedim"})
# Conversions to an integer or bool dtype: a module converts only to floating-point ones.
_TENSOR_ONLY_CONVERSIONS = frozenset({"byte", "char", "short", "int", "long", "bool"})
_ACTIVATIONS = {"softmax": "softmax", "log_softmax": "log_softmax", "sigmoid": "sigmoid"}
# Ops whose result holds values of the receiver, so a softmax's probabilities stay probabilities.
_KEEPS_VALUES = frozenset(
    "view view_as reshape reshape_as unsqueeze squeeze permute transpose t contiguous clone detach to cuda cpu "
    "float double half bfloat16 type flatten unflatten gather index_select select narrow expand expand_as "
    "repeat chunk split unbind masked_select take_along_dim".split()
)
_TENSOR_TESTS = frozenset({"torch.is_tensor"})
_TENSOR_TYPES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Types no tensor is an instance of: inside `if isinstance(x, nn.Module):` x is a module.
_MODULE_TYPES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_BUILTIN_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "list", "tuple", "dict", "set"})
_MODEL_FACTORIES = ("torchvision.models.", "timm.create_model", "timm.models.")
# Objects whose `.device` names the working device (settings, launchers, models), not a tensor's.
_DEVICE_HOLDERS = frozenset(
    "accelerator accelerate fabric trainer args opt opts options config conf cfg settings hparams params "
    "runner engine self model module net pipe pipeline".split()
)
# Helpers that answer where a value is (`get_device(x)`, `infer_device(x)`, `device_of(x)`), not
# ones that move it (`to_device(x, d)`, which returns the tensor).
_DEVICE_GETTER = re.compile(r"(?:get|find|infer|detect)_?\w*device|device_of\w*")
# Ops whose output takes the memory format of their input: a channels-last input (an NHWC
# tensor permuted to NCHW) gives a channels-last output, so a later permute can undo the input's.
_KEEPS_MEMORY_FORMAT = frozenset(
    "interpolate upsample conv1d conv2d conv3d avg_pool2d avg_pool3d max_pool2d max_pool3d "
    "adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool2d".split()
)
_PURE_REORDERS = frozenset({"permute", "transpose", "movedim"})
_INTEGER_COMPARISONS = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt, cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
}


def _memory_format_kept(name: str, operand: Value) -> Layout | None:
    """The layout of the op's output: the input's reordering where the op keeps memory formats
    and the input was only reordered; None (unknown) otherwise."""
    layout = operand.layout if isinstance(operand, TensorFacts) else None
    if name not in _KEEPS_MEMORY_FORMAT or layout is None or not layout.reordered:
        return None
    if any(op[0] not in _PURE_REORDERS for op in layout.ops):
        return None
    return Layout(layout.base_rank, None, layout.ops, layout.unit_sizes_likely, layout.reordered_by)



def _is_dtype_conversion(node: cst.BaseExpression) -> bool:
    """`<tensor>.float()`, `.half()`, `.type(...)`..."""
    if not (type(node) is cst.Call and type(node.func) is cst.Attribute):
        return False
    op = METHOD_OPS.get(node.func.attr.value)
    return op is not None and op.rule is Rule.CONVERT


def _terminates(statement: cst.CSTNode) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return any(isinstance(small, (cst.Return, cst.Raise)) for small in statement.body)
    return False


def _without_nots(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """`test` without the `not`s around it, and whether it is true when the whole test is."""
    truth = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, truth = test.expression, not truth
    return test, truth


def _placed_everywhere(facts: TensorFacts | ModuleValue) -> bool:
    return facts.device.is_placed and facts.device is not Device.CONDITIONAL


def _restored(before: Env, entry: Env, end: Env | None) -> Env | None:
    """The state at the end of a branch that entered as `entry`, a view of `before` in which the
    branch's test decided where some tensors are: those it left as they entered are again what
    they were."""
    if end is None or entry is before:
        return end
    changed = [name for name, value in entry.items() if value is not before.get(name) and end.get(name) is value]
    if not changed:
        return end
    end = dict(end)
    for name in changed:
        end[name] = before[name]
    return end


def _all_unit_sizes(layout: Layout | None) -> bool:
    """Every dimension is known to have size 1 (`torch.rand(1)`, `torch.zeros(1, 1)`)."""
    return layout is not None and not layout.ops and bool(layout.base_sizes) and all(
        size == "1" for size in layout.base_sizes)


def _first_iteration_tests(loop: cst.For | cst.While) -> list[int]:
    """The `if flag:` statements of the loop's body (with an `else:`) whose branch sets
    `flag = False`: the branch runs on the first iteration only, the `else:` on the others."""
    found = []
    for statement in suite_statements(loop.body):
        if not (isinstance(statement, cst.If) and isinstance(statement.test, cst.Name)
                and isinstance(statement.orelse, cst.Else)):
            continue
        if assigns_name(statement.body, statement.test.value, is_constant_false):
            found.append(id(statement))
    return found


def join_envs(first: Env | None, second: Env | None) -> Env | None:
    if first is None:
        return second
    if second is None:
        return first
    if first is second:
        return first
    return {name: join(first.get(name, UNKNOWN), second.get(name, UNKNOWN)) for name in first.keys() | second.keys()}


class Interpreter:
    """Interprets one scope; the values land in `model.memo`, device conflicts in `model`."""

    def __init__(self, model: "TensorModel", scope: "Scope") -> None:
        self.model = model
        self.scope = scope
        self.ctx = model.ctx
        self.returns: Value | None = None
        self.single_dims: set[str] = set()
        self._no_grad = scope.no_grad
        # Inside the branch of `if torch.cuda.is_available():` that runs without CUDA.
        self._cpu_only = 0
        self._device_context = 0
        self._self = scope.self_name
        # Whether the method assigned an attribute of one of its attributes (see `_chain_key`).
        self._replaced_chains = False
        # `if first:` statements of a loop run as one branch only (see `_first_iteration_apart`).
        self._forced: dict[int, bool] = {}

    # Statements --------------------------------------------------------------------------

    def run(self, env: Env) -> Env | None:
        return self._block(self.scope.statements, env)

    def _block(self, statements, env: Env | None) -> Env | None:
        for statement in statements:
            if env is None:
                return None
            env = self._statement(statement, env)
        return env

    def _statement(self, statement: cst.CSTNode, env: Env) -> Env | None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                env = self._small(small, env)
            return None if _terminates(statement) else env
        if isinstance(statement, cst.If):
            test = statement.test
            self.eval(test, env)
            # One branch runs: a first-iteration flag's, or where this reading knows the test
            # (`if stride != 1:` with the stride known).
            runs_body = self._forced.get(id(statement))
            if runs_body is None:
                runs_body = self._known_outcome(test)
            if runs_body is not None:
                return self._one_branch(statement, runs_body, env)
            body_entry = self._branch(test, True, env)
            body = self._block(suite_statements(statement.body), self._narrowed(test, body_entry))
            orelse, other_entry = statement.orelse, self._where_false(test, self._branch(test, False, env))
            cpu_only = self._tests_cuda(test, False)
            self._cpu_only += cpu_only
            other = other_entry
            if isinstance(orelse, cst.If):
                other = self._statement(orelse, other_entry)
            elif orelse is not None:
                other = self._block(suite_statements(orelse.body), other_entry)
            self._cpu_only -= cpu_only
            if cpu_only and body is not None and other is not None:
                # Both go on: a tensor the branch without CUDA took for a CPU one is again what it was.
                other = _restored(env, other_entry, other)
            return self._placed_on_one_branch(test, body, other)
        if isinstance(statement, (cst.For, cst.While)):
            return self._loop(statement, env)
        if isinstance(statement, cst.With):
            return self._with(statement, env)
        if isinstance(statement, cst.Try):
            return self._try(statement, env)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            env = dict(env)
            if isinstance(self.scope.node, cst.Module):
                env.pop(statement.name.value, None)  # the file's function or class, known by name
            else:
                env[statement.name.value] = UNKNOWN
            return env
        if isinstance(statement, cst.Match):
            self.eval(statement.subject, env)
            ends = [self._block(suite_statements(case.body), dict(env)) for case in statement.cases]
            last = statement.cases[-1].pattern if statement.cases else None
            catch_all = isinstance(last, cst.MatchAs) and last.pattern is None
            merged: Env | None = None if catch_all else env  # else no case may match
            for end in ends:
                merged = join_envs(merged, end)
            return merged
        return env

    def _test_key(self, test: cst.BaseExpression) -> tuple[str, bool]:
        """The test as written without its `not`s, and whether it holds when they are dropped."""
        test, truth = _without_nots(test)
        return self.ctx.code_for(test.with_changes(lpar=(), rpar=()) if test.lpar else test).strip(), truth

    def _branch(self, test: cst.BaseExpression, taken: bool, env: Env) -> Env:
        """The state in the branch of `if test:` that runs when the test is `taken`: tensors an
        earlier `if` on the same test placed are on the accelerator there, or where they were."""
        without_cuda = self._tests_cuda(test, taken)
        key = None  # the test's text, made only when a tensor was placed under some test
        branch = env
        for name, value in env.items():
            if not isinstance(value, (TensorFacts, ModuleValue)):
                continue
            if without_cuda and value.device.is_placed:
                moved = replace(value, device=Device.DEFAULT, placed_when=None)
            elif value.placed_when is not None:
                key = key or self._test_key(test)
                if value.placed_when[0] != key[0]:
                    continue
                placed = value.placed_when[1] == (key[1] == taken)
                moved = replace(value, device=Device.ACCELERATOR if placed else Device.DEFAULT, placed_when=None)
            else:
                continue
            branch = dict(env) if branch is env else branch
            branch[name] = moved
        return branch

    def _tests_cuda(self, test: cst.BaseExpression, taken: bool) -> bool:
        """Is this the branch where `torch.cuda.is_available()` (maybe negated) is false? Nothing
        is on a GPU there."""
        test, truth = _without_nots(test)
        return truth != taken and isinstance(test, cst.Call) and self.ctx.callee(test) == "torch.cuda.is_available"

    def _placed_on_one_branch(self, test: cst.BaseExpression, body: Env | None, other: Env | None) -> Env | None:
        """The join after `if test:`, where a tensor placed in one branch only remembers which."""
        joined = join_envs(body, other)
        if body is None or other is None or joined is None:
            return joined
        key = None
        for name, value in joined.items():
            if not (isinstance(value, (TensorFacts, ModuleValue)) and value.device is Device.CONDITIONAL):
                continue
            first, second = body.get(name), other.get(name)
            if type(first) is not type(value) or type(second) is not type(value):
                continue
            placed_in_body = _placed_everywhere(first) and not second.device.is_placed
            if placed_in_body or (_placed_everywhere(second) and not first.device.is_placed):
                key = key or self._test_key(test)
                joined[name] = replace(value, placed_when=(key[0], key[1] == placed_in_body))
        return joined

    def _narrowed(self, test: cst.BaseExpression, env: Env) -> Env:
        """The state inside `if test:`: names that `torch.is_tensor(x)` or `isinstance(x,
        torch.Tensor)` (alone or joined by `and`) proves to hold tensors are tensors there, and
        names `isinstance(x, nn.Module)` or `isinstance(x, int)` proves to hold something else
        are no tensors there."""
        narrowed = dict(env)
        tests = [test]
        while tests:
            current = tests.pop()
            if isinstance(current, cst.BooleanOperation) and isinstance(current.operator, cst.And):
                tests += [current.left, current.right]
                continue
            other = self._proven_other(current)
            if other is not None:
                narrowed[other] = UNKNOWN
                continue
            name = self._proven_tensor(current)
            if name is None:
                continue
            value = narrowed.get(name, UNKNOWN)
            if not isinstance(value, TensorFacts) or value.maybe:
                narrowed[name] = replace(value, maybe=False) if isinstance(value, TensorFacts) else TensorFacts()
        return narrowed

    def _where_false(self, test: cst.BaseExpression, env: Env) -> Env:
        """The state where `if test:` fails: after `if isinstance(x, torch.Tensor):`, `x` holds
        no tensor (a number), so it is on no device; after `if x.is_cuda or ...:` (espnet's STFT
        falls back to librosa there), `x` is on the CPU."""
        name = self._proven_tensor(test)
        if name is not None and isinstance(env.get(name), TensorFacts):
            return {**env, name: UNKNOWN}
        tests, failed = [test], dict(env)
        while tests:
            current = tests.pop()
            if isinstance(current, cst.BooleanOperation) and isinstance(current.operator, cst.Or):
                tests += [current.left, current.right]
            elif isinstance(current, cst.Attribute) and current.attr.value == "is_cuda" \
                    and isinstance(current.value, cst.Name) and isinstance(env.get(current.value.value), TensorFacts):
                failed[current.value.value] = replace(env[current.value.value], device=Device.CPU, origin=None)
        return failed

    def _proven_other(self, test: cst.BaseExpression) -> str | None:
        """The name `isinstance(x, nn.Module)` (or a builtin type, or a tuple of these) proves
        to hold no tensor."""
        checked = isinstance_check(test)
        if checked is None:
            return None
        types = [element.value for element in checked[1].elements] if isinstance(checked[1], cst.Tuple) else [checked[1]]
        return checked[0] if types and all(self._other_type(kind) for kind in types) else None

    def _other_type(self, kind: cst.BaseExpression) -> bool:
        qualified = self.ctx.qualified_name(kind)
        if qualified is None:
            return isinstance(kind, cst.Name) and kind.value in _BUILTIN_TYPES
        return qualified in _MODULE_TYPES

    def _proven_tensor(self, test: cst.BaseExpression) -> str | None:
        """The name `torch.is_tensor(x)` or `isinstance(x, torch.Tensor)` proves a tensor."""
        checked = isinstance_check(test)
        if checked is not None:
            return checked[0] if self.ctx.qualified_name(checked[1]) in _TENSOR_TYPES else None
        if isinstance(test, cst.Call) and test.args and isinstance(test.args[0].value, cst.Name) \
                and self.ctx.callee(test) in _TENSOR_TESTS:
            return test.args[0].value.value
        return None

    def _small(self, small: cst.CSTNode, env: Env) -> Env:
        if isinstance(small, cst.Assign):
            value = self.eval(small.value, env)
            env = dict(env)
            for target in small.targets:
                self._bind(target.target, value, env)
                self._note_parameter(target.target, small.value)
            self._note_shape_unpacking(small, env)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                env = dict(env)
                self._bind(small.target, self.eval(small.value, env), env)
        elif isinstance(small, cst.AugAssign):
            env = dict(env)
            self._bind(small.target, self._binary(small.target, small.value, small.operator, small, env), env)
        elif isinstance(small, cst.Expr):
            self.eval(small.value, env)
            env = self._updated_in_place(small.value, env)
            env = self._filled(small.value, env)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                value = self.eval(small.value, env)
                self.returns = value if self.returns is None else join(self.returns, value)
        elif isinstance(small, cst.Del):
            env = dict(env)
            self._bind(small.target, UNKNOWN, env)
        elif isinstance(small, (cst.Assert, cst.Raise)):
            for child in (getattr(small, "test", None), getattr(small, "exc", None)):
                if child is not None:
                    self.eval(child, env)
            if isinstance(small, cst.Assert):
                env = self._of_asserted_rank(small.test, env)
        return env

    def _of_asserted_rank(self, test: cst.BaseExpression, env: Env) -> Env:
        """After `assert x.dim() == 2` (`len(x.shape) == 2`, `x.ndim == 2`), a tensor `x` of
        unknown shape has two dimensions: the code stops there otherwise."""
        asserted = _asserted_rank(test)
        if asserted is None:
            return env
        name, rank = asserted
        value = env.get(name)
        if not isinstance(value, TensorFacts) or value.layout is not None or value.scalar is not None:
            return env
        env = dict(env)
        env[name] = replace(value, layout=Layout(rank, None, ()), scalar=rank == 0)
        return env

    def _updated_in_place(self, expr: cst.BaseExpression, env: Env) -> Env:
        """`model.to(device)` moves a module in place (a tensor's `.to()` result is discarded), and
        `x.unsqueeze_(1)` reshapes the tensor `x` in place."""
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
            return env
        receiver = expr.func.value
        before, after = self.model.memo.get(id(receiver)), self.model.memo.get(id(expr))
        moved = isinstance(before, ModuleValue) and isinstance(after, ModuleValue)
        reshaped = isinstance(before, TensorFacts) and isinstance(after, TensorFacts) and expr.func.attr.value in _RESHAPING_IN_PLACE
        if moved or reshaped:
            env = dict(env)
            self._bind(receiver, after, env)
        return env

    def _filled(self, expr: cst.BaseExpression, env: Env) -> Env:
        """`items.append(t)` / `items.extend(ts)` on a list the code fills: what it now holds. A
        tensor put there where CUDA is unavailable is not recorded as made on the default device."""
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and len(expr.args) == 1
                and expr.func.attr.value in ("append", "extend")):
            return env
        receiver = expr.func.value
        key = receiver.value if isinstance(receiver, cst.Name) else (
            self._attribute_key(receiver) if isinstance(receiver, cst.Attribute) else None)
        held = env.get(key) if key is not None else None
        if held == Sequence(()):
            held = Collected(NOTHING)
        if not isinstance(held, Collected):
            return env
        item = self.model.memo.get(id(expr.args[0].value), UNKNOWN)
        items = [element_of(item)] if expr.func.attr.value == "extend" else [item]
        for value in items:
            if self._cpu_only and isinstance(value, TensorFacts):
                value = replace(value, origin=None)
            held = held.adding(value)
        env = dict(env)
        env[key] = held
        return env

    def _loop(self, node: cst.For | cst.While, env: Env) -> Env | None:
        element = element_of(self.eval(node.iter, env)) if isinstance(node, cst.For) else None
        if isinstance(node, cst.For) and holds_loaded(element) and self._moves_loop_targets(node):
            element = unloaded(element)
        first_iteration_tests = _first_iteration_tests(node)
        if first_iteration_tests:
            exit_env = self._first_iteration_apart(node, env, element, first_iteration_tests)
        else:
            entry = env
            after: Env | None = None
            for attempt in range(_LOOP_PASSES + 1):
                after = self._iteration(node, entry, element)
                new_entry = join_envs(env, after)
                if new_entry == entry:
                    break
                entry = new_entry if attempt < _LOOP_PASSES - 1 else self._widen(env, new_entry)
            exit_env = join_envs(env, after)
        if node.orelse is not None and exit_env is not None:
            exit_env = self._block(suite_statements(node.orelse.body), exit_env)
        return exit_env

    def _iteration(self, node: cst.For | cst.While, entry: Env, element: Value | None) -> Env | None:
        body_env = dict(entry)
        if isinstance(node, cst.For):
            self._bind(node.target, element, body_env)
        else:
            self.eval(node.test, body_env)
        return self._block(suite_statements(node.body), body_env)

    def _one_branch(self, statement: cst.If, runs_body: bool, env: Env) -> Env | None:
        """The state after an `if` of which only the body, or only what follows `else` /
        `elif`, runs."""
        if runs_body:
            return self._block(suite_statements(statement.body), env)
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            return self._statement(orelse, env)
        return self._block(suite_statements(orelse.body), env) if orelse is not None else env

    def _first_iteration_apart(
        self, node: cst.For | cst.While, env: Env, element: Value | None, tests: list[int],
    ) -> Env | None:
        """A loop that tests a first-iteration flag (`if first: out = y; first = False` / `else:
        out = torch.cat((out, y))`): the first iteration runs that branch alone on the state before
        the loop, the later ones the other branch on the state the loop carries, so a placeholder
        the first iteration replaces (`out = torch.zeros(1)` before the loop) never meets them."""
        self._forced.update((test, True) for test in tests)
        try:
            carried = self._iteration(node, env, element)
            self._forced.update((test, False) for test in tests)
            for attempt in range(_LOOP_PASSES + 1):
                if carried is None:
                    break
                new = join_envs(carried, self._iteration(node, carried, element))
                if new == carried:
                    break
                carried = new if attempt < _LOOP_PASSES - 1 else self._widen(env, new)
        finally:
            for test in tests:
                self._forced.pop(test, None)
        return join_envs(env, carried)

    @staticmethod
    def _widen(before: Env, changing: Env) -> Env:
        return {name: value if before.get(name, UNKNOWN) == value else UNKNOWN for name, value in changing.items()}

    def _with(self, node: cst.With, env: Env) -> Env | None:
        env = dict(env)
        no_grad = device_context = 0
        for item in node.items:
            value = self.eval(item.item, env)
            target = item.item.func if isinstance(item.item, cst.Call) else item.item
            qualified = self.ctx.qualified_name(target)
            no_grad += qualified in _NO_GRAD
            device_context += qualified == "torch.device"
            if item.asname is not None:
                self._bind(item.asname.name, UNKNOWN if qualified in _NO_GRAD else value, env)
        self._no_grad += no_grad
        self._device_context += device_context
        try:
            return self._block(suite_statements(node.body), env)
        finally:
            self._no_grad -= no_grad
            self._device_context -= device_context

    def _try(self, node: cst.Try, env: Env) -> Env | None:
        body = self._block(suite_statements(node.body), dict(env))
        merged = join_envs(env, body)
        ends = [body if node.orelse is None else self._block(suite_statements(node.orelse.body), body)]
        for handler in node.handlers:
            handler_env = dict(merged) if merged is not None else dict(env)
            if handler.name is not None:
                self._bind(handler.name.name, UNKNOWN, handler_env)
            ends.append(self._block(suite_statements(handler.body), handler_env))
        result: Env | None = None
        for end in ends:
            result = join_envs(result, end)
        if node.finalbody is not None:
            result = self._block(suite_statements(node.finalbody.body), result if result is not None else dict(env))
        return result

    # Binding -----------------------------------------------------------------------------

    def _bind(self, target: cst.BaseExpression, value: Value, env: Env) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            if any(isinstance(element, cst.StarredElement) for element in elements):
                for element in elements:
                    self._bind(element.value, UNKNOWN, env)
                return
            for element, item in zip(elements, unpack(value, len(elements))):
                self._bind(element.value, item, env)
        elif isinstance(target, cst.Attribute):
            key = self._attribute_key(target) or self._chain_key(target)
            if key is None:
                return
            if self._replaced_chains:  # `self.linear = ...` makes `self.linear.weight` another one
                for stale in [name for name in env if name.startswith(f"{key}.")]:
                    del env[stale]
            self._replaced_chains |= key.count(".") > 1
            env[key] = value
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, UNKNOWN, env)

    def _note_parameter(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`self.w = nn.Parameter(...)`. A dtype conversion of it (`nn.Parameter(...).float()`)
        returns the Parameter itself when the dtype is already the one asked for, else a plain
        tensor: maybe a Parameter."""
        if not (isinstance(target, cst.Attribute) and self._attribute_key(target) is not None):
            return
        converted = False
        while _is_dtype_conversion(value):
            value, converted = value.func.value, True
        if isinstance(value, cst.Call) and self.ctx.callee(value) in PARAMETER_CLASSES:
            self.model.note_parameter(self.scope, target.attr.value, certain=not converted)

    def _attribute_key(self, node: cst.Attribute) -> str | None:
        """`self.mask` -> "self.mask" for the method's own attributes (followed like locals)."""
        if self._self is not None and isinstance(node.value, cst.Name) and node.value.value == self._self:
            return f"{self._self}.{node.attr.value}"
        return None

    def _chain_key(self, node: cst.Attribute) -> str | None:
        """`self.linear.weight` -> "self.linear.weight": an attribute of one of the method's own
        attributes, which the method may replace (`self.linear.weight = Params4bit(...)`), read as
        what it was last assigned."""
        written = dotted_name(node)
        owned = self._self is not None and written is not None and written.startswith(f"{self._self}.")
        return written if owned else None

    def _note_shape_unpacking(self, node: cst.Assign, env: Env) -> None:
        """`b, n, c = x.shape` / `x.size()`: x has rank 3 with those sizes."""
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            return
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size" and not value.args:
            owner = value.func.value
        elif isinstance(value, cst.Attribute) and value.attr.value == "shape":
            owner = value.value
        else:
            return
        elements = node.targets[0].target.elements
        if any(isinstance(element, cst.StarredElement) for element in elements):
            return
        facts = self.model.memo.get(id(owner))
        if not isinstance(facts, TensorFacts) or (facts.layout is not None and facts.layout.reordered):
            return
        known_shape = known_sizes(facts)
        if known_shape is not None and len(known_shape) == len(elements) and all(known_shape):
            # `B, T, C = x.shape` of a known shape: the names hold its sizes, the shape stays.
            for element, size in zip(elements, known_shape):
                if isinstance(element.value, cst.Name):
                    env[element.value.value] = Number(size)
            return
        sizes = tuple(
            element.value.value if isinstance(element.value, cst.Name) and element.value.value != "_" else None
            for element in elements
        )
        known = replace(facts, layout=Layout(len(sizes), sizes, ()))
        key = owner.value if isinstance(owner, cst.Name) else (
            self._attribute_key(owner) if isinstance(owner, cst.Attribute) else None
        )
        if key is not None and env.get(key) == facts:
            env[key] = known

    # Expressions -------------------------------------------------------------------------

    def eval(self, expr: cst.CSTNode, env: Env) -> Value:
        value = self._eval(expr, env)
        self.model.memo[id(expr)] = value
        return value

    def _eval(self, expr: cst.CSTNode, env: Env) -> Value:
        # Dispatch on the exact class: isinstance() against libcst's ABC-based classes costs a
        # Python-level call for every miss, and this runs for every expression of the file.
        evaluate = _EVALUATORS.get(type(expr))
        if evaluate is not None:
            return evaluate(self, expr, env)
        for child in _expression_children(expr):
            self.eval(child, env)
        return UNKNOWN

    def _binary_operation(self, expr: cst.BinaryOperation, env: Env) -> Value:
        return self._binary(expr.left, expr.right, expr.operator, expr, env)

    def _number_literal(self, expr: cst.Integer | cst.Float | cst.Imaginary, env: Env) -> Value:
        return Number(expr.value)

    def _unary(self, expr: cst.UnaryOperation, env: Env) -> Value:
        value = self.eval(expr.expression, env)
        if isinstance(expr.operator, cst.Not):
            return NUMBER
        if isinstance(value, Number) and isinstance(expr.operator, cst.Minus) and value.code is not None:
            return Number("-" + value.code)
        return value

    def _conditional(self, expr: cst.IfExp, env: Env) -> Value:
        self.eval(expr.test, env)
        body = self.eval(expr.body, self._branch(expr.test, True, env))
        orelse = self.eval(expr.orelse, self._branch(expr.test, False, env))
        if isinstance(body, DeviceValue) or isinstance(orelse, DeviceValue):
            # `"cuda" if torch.cuda.is_available() else "cpu"`: the accelerator where there is one.
            return DeviceValue(Device.ACCELERATOR)
        outcome = self._known_outcome(expr.test)
        if outcome is not None:
            # `x if n_rep == 1 else x.repeat_interleave(n_rep, dim=1)` with n_rep known: one branch runs.
            return body if outcome else orelse
        return join(body, orelse)

    def _known_outcome(self, test: cst.BaseExpression) -> bool | None:
        """The truth of a comparison of two whole numbers this interpretation knows (`n_rep == 1`
        where `n_rep` is 4), or of `and` / `or` of such comparisons; None for any other test."""
        if type(test) is cst.BooleanOperation:
            left, right = self._known_outcome(test.left), self._known_outcome(test.right)
            if isinstance(test.operator, cst.Or):
                return True if True in (left, right) else (False if left is False and right is False else None)
            return False if False in (left, right) else (True if left and right else None)
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return None
        compare = _INTEGER_COMPARISONS.get(type(test.comparisons[0].operator))
        left, right = (self.model.memo.get(id(node)) for node in (test.left, test.comparisons[0].comparator))
        if compare is None or not isinstance(left, Number) or not isinstance(right, Number):
            return None
        first, second = literal(left.code), literal(right.code)
        return compare(first, second) if first is not None and second is not None else None

    def _string(self, expr: cst.SimpleString | cst.FormattedString, env: Env) -> Value:
        for child in _expression_children(expr):
            self.eval(child, env)
        text = string_value(expr)
        kind = device_string_kind(text) if text is not None else None
        return DeviceValue(kind) if kind is not None else UNKNOWN

    def _boolean(self, expr: cst.BooleanOperation, env: Env) -> Value:
        return join(self.eval(expr.left, env), self.eval(expr.right, env))

    def _display(self, expr: cst.Tuple | cst.List, env: Env) -> Value:
        items = tuple(self.eval(element.value, env) for element in expr.elements)
        if any(isinstance(element, cst.StarredElement) for element in expr.elements):
            return UNKNOWN
        return Sequence(items)

    def _walrus(self, expr: cst.NamedExpr, env: Env) -> Value:
        value = self.eval(expr.value, env)
        self._bind(expr.target, value, env)
        return value

    def _lambda(self, expr: cst.Lambda, env: Env) -> Value:
        inner = dict(env)
        for param in expr.params.params:
            inner[param.name.value] = UNKNOWN
        self.eval(expr.body, inner)
        return UNKNOWN

    def _name(self, node: cst.Name, env: Env) -> Value:
        name = node.value
        if name in env:
            return env[name]
        if name in ("True", "False"):
            return NUMBER
        value = self.model.outer_value(self.scope, name)
        if value is UNKNOWN and self.model.function_named(name) is not None:
            return FunctionValue(frozenset((name,)))  # `schedule = linear_betas`: called later
        return value

    def _comprehension(self, expr: cst.BaseComp, env: Env) -> Value:
        inner = dict(env)
        clause = expr.for_in
        iterated = []
        while clause is not None:
            iterated.append(self.eval(clause.iter, inner))
            self._bind(clause.target, element_of(iterated[-1]), inner)
            for condition in clause.ifs:
                self.eval(condition.test, inner)
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            self.eval(expr.key, inner)
            self.eval(expr.value, inner)
            return UNKNOWN
        # One `for` without `if` makes as many elements as it iterates over.
        single = expr.for_in.inner_for_in is None and not expr.for_in.ifs
        return Iterable(self.eval(expr.elt, inner), length=_length_of(expr.for_in.iter, iterated[0]) if single else None)

    def _attribute(self, node: cst.Attribute, env: Env) -> Value:
        key = self._attribute_key(node)
        if key is not None:
            self.model.memo[id(node.value)] = self._name(node.value, env)
            if key in env:
                return env[key]
            return self.model.class_attribute(self.scope, node.attr.value)
        replaced = self._chain_key(node)
        if replaced in env:
            self.eval(node.value, env)
            return env[replaced]
        qualified = self.ctx.qualified_name(node)
        if qualified is not None:
            if qualified in DTYPE_NAMES:
                return DtypeValue(qualified)
            if qualified.startswith("math."):
                return NUMBER
            return UNKNOWN
        receiver = self.eval(node.value, env)
        attr = node.attr.value
        if (receiver is UNKNOWN or isinstance(receiver, ObjectValue)) and isinstance(node.value, cst.Name):
            field = self._config_field(node.value.value, attr) or self._option_default(node.value.value, attr)
            if field is not None:
                return Number(field)
        if isinstance(receiver, ModuleValue):
            if attr in ("weight", "bias"):
                return TensorFacts(device=receiver.device, scalar=False, requires_grad=True)
            return UNKNOWN
        if isinstance(receiver, Sequence) and len(receiver.items) == 2 and attr in ("values", "indices"):
            return receiver.items[attr == "indices"]  # `x.max(dim=1).values`: the named pair of a reduction
        if attr == "device":
            return self._device_held(node.value, receiver)
        if attr == "dtype":
            return DtypeValue(receiver.dtype if isinstance(receiver, TensorFacts) else None)
        if not isinstance(receiver, TensorFacts):
            if attr in ("T", "mT"):
                # Of unknown kind: followed for its layout, as only arrays and tensors have it.
                return self._attribute_of_tensor(attr, TensorFacts(maybe=True))
            return UNKNOWN
        return self._attribute_of_tensor(attr, receiver)

    def _attribute_of_tensor(self, attr: str, receiver: TensorFacts) -> Value:
        if attr == "shape":
            return self._shape(receiver)
        if attr in NUMBER_ATTRIBUTES:
            return NUMBER
        if attr not in TENSOR_ATTRIBUTES:
            return UNKNOWN
        if attr in ("T", "mT", "H", "mH"):
            layout = receiver.layout or Layout(None, None, ())
            if attr in ("T", "H"):
                return replace(receiver, layout=_as_matrix(layout).then(("T",)))
            return replace(receiver, layout=layout.then(("transpose", -2, -1)))
        if attr in ("data", "grad"):
            return replace(receiver, requires_grad=False)
        return receiver

    @staticmethod
    def _shape(facts: TensorFacts) -> Value:
        layout = facts.layout
        if layout is not None and layout.base_rank is not None:
            shapes = layout.candidates()
            if len(shapes) == 1:
                return Sequence(tuple(Number(size) for _, _, size in shapes[0]))
        return Iterable(NUMBER)

    def _subscript(self, node: cst.Subscript, env: Env) -> Value:
        receiver = self.eval(node.value, env)
        indexes = []
        # Per slice element, its bounds as integers (None: absent or unknown) when it has no step.
        bounds: list[tuple[int | None, int | None] | None] = []
        # Per slice element, the tensor that indexes there (`centers[labels]`), else None.
        tensor_indexes: list[TensorFacts | None] = []
        for element in node.slice:
            index = element.slice
            tensor_indexes.append(None)
            if isinstance(index, cst.Index):
                indexes.append(self.eval(index.value, env))
                tensor_indexes[-1] = indexes[-1] if isinstance(indexes[-1], TensorFacts) else None
                # A Python number other than a literal (`x[i]` with `i` an int): drops its dim.
                bounds.append(_NUMBER_INDEX if isinstance(indexes[-1], Number) else None)
            else:
                values = [None if part is None else self.eval(part, env) for part in (index.lower, index.upper, index.step)]
                lower, upper = (_known_int(part, value) for part, value in zip((index.lower, index.upper), values))
                given = (index.lower is None or lower is not None) and (index.upper is None or upper is not None)
                window = self._window(index)
                bounds.append(window if window is not None else (lower, upper) if given and index.step is None else None)
        one_index = single_index(node)
        if isinstance(receiver, Sequence) and one_index is not None:
            position = int_value(one_index)
            if position is not None and -len(receiver.items) <= position < len(receiver.items):
                return receiver.items[position]
            return element_of(receiver) if receiver.items else UNKNOWN
        if isinstance(receiver, Iterable):
            return receiver.element if one_index is not None else receiver
        if isinstance(receiver, ModuleValue) and receiver.element is not None:
            return element_of(receiver) if isinstance(node.slice[0].slice, cst.Index) else receiver
        if not isinstance(receiver, TensorFacts):
            return UNKNOWN
        layout = self._indexed_layout(node, receiver, bounds) or _indexed_sizes(node, receiver, bounds, tensor_indexes)
        only_slices = all(
            isinstance(element.slice, cst.Slice)
            or (isinstance(element.slice, cst.Index) and isinstance(element.slice.value, (cst.Ellipsis, cst.Name))
                and getattr(element.slice.value, "value", "None") == "None")
            for element in node.slice
        )
        has_slice = any(isinstance(element.slice, cst.Slice) for element in node.slice)
        scalar = False if has_slice else (receiver.scalar if only_slices else None)
        return replace(receiver, layout=layout, scalar=scalar, origin=receiver.origin)

    def _window(self, index: cst.Slice) -> tuple[int, int] | None:
        """`data[s : s + k]` with `k` a known integer: a window of k elements, taken as the
        slice `[0:k]` (the window fits, as the code means it to; a dim shorter than k clamps it).
        Asked after the bounds were evaluated: `k`'s value is read from the memo."""
        upper = index.upper
        if index.lower is None or index.step is not None or not isinstance(upper, cst.BinaryOperation) \
                or not isinstance(upper.operator, cst.Add):
            return None
        lower_code = self.ctx.code_for(index.lower)
        for start, width in ((upper.left, upper.right), (upper.right, upper.left)):
            if self.ctx.code_for(start) == lower_code:
                size = _known_int(width, self.model.memo.get(id(width)))
                return (0, size) if size is not None and size >= 0 else None
        return None

    def _indexed_layout(self, node: cst.Subscript, receiver: TensorFacts,
                        bounds: list[tuple[int | None, int | None] | None]) -> Layout | None:
        """`x[:, None]`, `x[..., None]`: size-1 insertions; `x[:k]`, `x[:, 1:]`: the same strides
        with those sizes what the slice keeps where its bounds are known (`bounds`, per element),
        else unknown (a slice of a transposed tensor is still transposed); any other indexing:
        layout unknown."""
        positions_from_start, positions_from_end, seen_ellipsis, kept = [], [], False, 0
        bounded = []
        for element, bound in zip(node.slice, bounds):
            index = element.slice
            if isinstance(index, cst.Slice):
                if index.lower is not None or index.upper is not None or index.step is not None:
                    if seen_ellipsis:
                        return None
                    bounded.append((kept, bound))
                kept += 1
                continue
            value = index.value
            if isinstance(value, cst.Name) and value.value == "None":
                (positions_from_end if seen_ellipsis else positions_from_start).append(kept)
                kept += 1
            elif isinstance(value, cst.Ellipsis) and not seen_ellipsis:
                seen_ellipsis, kept = True, 0
            else:
                return None
        if not positions_from_start and not positions_from_end and not bounded:
            return receiver.layout
        if positions_from_end and not seen_ellipsis:
            return None
        layout = receiver.layout or Layout(None, None, ())
        for position in positions_from_start:
            layout = layout.then(("unsqueeze", position))
        for position in positions_from_end:
            layout = layout.then(("unsqueeze", position - kept))
        for position, bound in bounded:
            layout = layout.then(("slice", position, bound))
        return layout

    def _comparison(self, node: cst.Comparison, env: Env) -> Value:
        operands = [(node.left, self.eval(node.left, env))]
        for comparison in node.comparisons:
            operands.append((comparison.comparator, self.eval(comparison.comparator, env)))
        identity = (cst.Is, cst.IsNot, cst.In, cst.NotIn)
        if any(isinstance(comparison.operator, identity) for comparison in node.comparisons):
            return NUMBER
        if not any(isinstance(value, TensorFacts) for _, value in operands):
            return NUMBER
        return replace(self.combine(operands, node, Rule.ELEMENTWISE), dtype="bool", requires_grad=False)

    def _binary(self, left_node, right_node, operator, node, env: Env) -> Value:
        left = self.eval(left_node, env)
        right = self.eval(right_node, env)
        if isinstance(left, Number) and isinstance(right, Number):
            # `4 * D_MODEL`, `d_model // n_heads`: a size, when both are known literals.
            computed = arithmetic(operator, literal(left.code), literal(right.code))
            if computed is None:  # `SAMPLE_RATE * CLIP_SECONDS`, for an `int(...)` of it
                computed = _float_arithmetic(operator, _number_value(left.code), _number_value(right.code))
            return Number(str(computed)) if computed is not None and computed >= 0 else NUMBER
        if not isinstance(left, TensorFacts) and not isinstance(right, TensorFacts):
            return UNKNOWN
        if isinstance(operator, (cst.Modulo, cst.ModuloAssign)) and not isinstance(left, TensorFacts):
            return UNKNOWN  # "%s" % t
        rule = Rule.MATMUL if isinstance(operator, (cst.MatrixMultiply, cst.MatrixMultiplyAssign)) else Rule.ELEMENTWISE
        return self.combine([(left_node, left), (right_node, right)], node, rule)

    # Combining operands ------------------------------------------------------------------

    def combine(self, operands: list[tuple[cst.CSTNode, Value]], node: cst.CSTNode, rule: Rule, check: bool = True) -> TensorFacts:
        """The result of an op on these operands (assuming it succeeds); records device conflicts."""
        tensors = [(operand, value) for operand, value in operands if isinstance(value, TensorFacts)]
        if check and len(tensors) > 1:
            self.model.check_devices(tensors)
        facts = [value for _, value in tensors]
        if not facts:
            return TensorFacts()
        placed = [value.device for value in facts if value.device.is_placed]
        defaults = [value for value in facts if value.device in (Device.DEFAULT, Device.CPU) and value.scalar is False]
        explicit_cpu = [value for value in facts if value.device is Device.CPU and value.origin is not None]
        origin = None
        if placed:
            # The op succeeds only where every operand is there: an input's tensor is then placed too.
            device = placed[0]
            for other in placed[1:]:
                device = join_devices(device, other)
        elif any(value.device is Device.INPUT for value in facts):
            device = Device.INPUT
        elif defaults and explicit_cpu:
            # `t.cpu() * torch.tensor([...])`: the result is deliberately on the CPU.
            device, origin = Device.CPU, explicit_cpu[0].origin
        elif defaults:
            device, origin = defaults[0].device, defaults[0].origin
        elif all(value.device is facts[0].device for value in facts) and all(
            isinstance(value, (TensorFacts, Number)) for _, value in operands
        ):
            device, origin = facts[0].device, facts[0].origin
        else:
            device = Device.UNKNOWN
        scalars = [value.scalar for value in facts]
        # Python numbers add no dimension: `1 - v` of a 0-dim `v` is 0-dim.
        scalar = False if False in scalars else (True if all(scalars) and all(
            isinstance(value, (TensorFacts, Number)) for _, value in operands) else None)
        layout = self._combined_layout(facts, len(facts) == len(operands), rule)
        if layout is not None and layout.base_rank == 0 and not all(
                isinstance(value, (TensorFacts, Number)) for _, value in operands):
            # `torch.minimum(counts, torch.as_tensor(n) - 1)` with `counts` unknown: a 0-dim
            # operand says nothing of the rank the other one broadcasts it to.
            layout = None
        return TensorFacts(
            device=device,
            layout=layout,
            scalar=scalar,
            dtype=_promoted_dtype(facts),
            requires_grad=any(value.requires_grad for value in facts) and not self._no_grad,
            origin=origin,
            maybe=all(value.maybe for value in facts),
            loaded=all(value.loaded for value in facts) and device is Device.DEFAULT,
            placed_when=next((value.placed_when for value in facts if value.device is device), None)
            if device is Device.CONDITIONAL else None,
            placed_by=next((value.placed_by for value in facts if value.placed_by is not None), None)
            if device is Device.CONDITIONAL else None,
            # With Python numbers only (`values * 2`, `logits > 0`): the same column.
            column_of=facts[0].column_of if len(facts) == 1 else None,
        )

    @staticmethod
    def _combined_layout(facts: list[TensorFacts], all_tensors: bool, rule: Rule) -> Layout | None:
        ranks = [value.rank for value in facts]
        # A product is laid out afresh; an elementwise result keeps a reordered operand's strides.
        sized = _result_sizes([known_sizes(value) for value in facts], rule) if all_tensors and (
            rule is Rule.MATMUL or not any(value.layout is not None and value.layout.reordered for value in facts)) else None
        if sized is not None:
            return Layout(len(sized), sized, ())
        if rule is Rule.MATMUL:
            if len(ranks) == 2 and None not in ranks and min(ranks) >= 2:
                return Layout(max(ranks), None, ())
            return None
        if len(facts) == 1 or (not all_tensors and all(value.layout == facts[0].layout for value in facts)):
            return facts[0].layout  # an elementwise op with Python numbers keeps the strides
        if all(value.layout == facts[0].layout for value in facts):
            return facts[0].layout
        if all_tensors and None not in ranks and len(set(ranks)) == 1:
            # An elementwise result is laid out like its first operand that is not broadcast by
            # `expand` (TensorIterator; checked with torch): `x.t().eq(y)` is transposed.
            leading = next((value.layout for value in facts if value.layout is None or not value.layout.expanded), None)
            if leading is not None:
                return Layout(leading.base_rank, None, leading.ops, leading.unit_sizes_likely, leading.reordered_by)
        if None not in ranks:
            return Layout(max(ranks), None, ())
        return None

    # Calls -------------------------------------------------------------------------------

    def _call(self, call: cst.Call, env: Env) -> Value:
        func = call.func
        qualified = self.ctx.callee(call)
        receiver = None
        if isinstance(func, cst.Attribute) and qualified is None:
            receiver = self.eval(func.value, env)
        args = [(arg, self.eval(arg.value, env)) for arg in call.args]
        device = self._device_helper(call, qualified, args)
        if device is not None:
            return device
        if qualified is not None and not (isinstance(func, cst.Name) and func.value in env):
            return self._qualified(call, qualified, args)
        if isinstance(func, cst.Attribute):
            return self._method(call, func.attr.value, func.value, receiver, args, env)
        if isinstance(func, cst.Name):
            return self._named_call(call, func.value, args, env)
        callee = self.eval(func, env)
        return self._call_value(call, callee, args)

    def _device_helper(self, call: cst.Call, qualified: str | None, args) -> DeviceValue | None:
        """`get_device(wav)`, `utils.device_of(x)`: a helper of the project or a library, named for
        the device and given a tensor first, answers where that tensor is, as `wav.device` does."""
        written = qualified or dotted_name(call.func)
        if not written or written.startswith("torch.") or isinstance(call.func, cst.Attribute) and qualified is None:
            return None
        if not _DEVICE_GETTER.fullmatch(written.rsplit(".", 1)[-1].lower()) or not args or args[0][0].keyword is not None:
            return None
        holder, value = args[0][0].value, args[0][1]
        return self._device_held(holder, value) if isinstance(value, TensorFacts) else None

    def _device_held(self, holder: cst.BaseExpression, value: Value) -> DeviceValue:
        """The device of `holder` (`holder.device`), whose value is `value`."""
        if isinstance(value, TensorFacts):
            # A tensor of unknown placement (from a caller, from numpy): on its device, maybe the CPU.
            return DeviceValue(value.device if value.device is not Device.UNKNOWN else Device.INPUT)
        if _DEVICE_HOLDERS.intersection(re.split(r"[^a-z0-9]+", self.ctx.code_for(holder).lower())):
            return DeviceValue(Device.TARGET)  # `args.device`, `accelerator.device`: the working device
        return DeviceValue(Device.INPUT)

    def _typed_call(self, call: cst.Call, env: Env) -> Value:
        """A call's value, with the call as where its dtype came from when it set one (a factory,
        `.byte()`, `.to(torch.uint8)`): the evidence of a dtype finding."""
        value = self._call(call, env)
        if type(value) is not TensorFacts or value.dtype is None:
            return value
        receiver = self.model.memo.get(id(call.func.value)) if type(call.func) is cst.Attribute else None
        if type(receiver) is TensorFacts and receiver.dtype == value.dtype:
            return value if value.typed_by is receiver.typed_by else replace(value, typed_by=receiver.typed_by)
        return replace(value, typed_by=call) if value.typed_by is None else value

    def _call_value(self, call: cst.Call, callee: Value, args) -> Value:
        if isinstance(callee, ModuleValue):
            return self._module_call(call, callee, args)
        if isinstance(callee, TensorFacts) and callee.maybe and callee.device is not Device.UNKNOWN:
            # `net = net.to(device)` then `net(x)`: tensors are not callable, so it is a module.
            return self._module_call(call, ModuleValue(callee.device), args)
        if isinstance(callee, FunctionValue):
            results = [self._function_result(call, name) for name in sorted(callee.names)]
            return UNKNOWN if None in results else functools.reduce(join, results)
        return UNKNOWN

    def _named_call(self, call: cst.Call, name: str, args, env: Env) -> Value:
        if name in env:
            return self._call_value(call, env[name], args)
        if self.model.is_module_class(name):
            return ModuleValue(Device.DEFAULT, name, made_with=_passed(args), made_at=call)
        item = self.model.dataset_item(name)
        if item is not None:
            return Iterable(item)
        instance = self.model.plain_object(name)
        if instance is not None:
            return instance
        if self.model.outer_binds(self.scope, name):
            return self._call_value(call, self._name(call.func, env), args)
        result = self._function_result(call, name)
        if result is not None:
            return result
        values = [value for _, value in args]
        if name in _REDUCING_BUILTINS and len(values) == 1 and isinstance(element_of(values[0]), TensorFacts):
            return element_of(values[0])  # `sum(losses)`, `max(scores)` over tensors: a tensor
        if name in ("int", "round") and len(values) == 1 and isinstance(values[0], Number):
            number = _number_value(values[0].code)  # `int(SAMPLE_RATE * 0.5)`: a whole number
            return Number(str(int(number) if name == "int" else round(number))) if number is not None else NUMBER
        if name in _NUMBER_BUILTINS:
            return NUMBER
        if name == "enumerate" and values:
            return Iterable(Sequence((NUMBER, element_of(values[0]))))
        if name == "zip" and values:
            return Iterable(Sequence(tuple(element_of(value) for value in values)))
        if name == "range":
            return Iterable(NUMBER)
        if name in _SEQUENCE_BUILTINS and values:
            return Iterable(element_of(values[0])) if not isinstance(values[0], Iterable) else values[0]
        if name == "next" and values:
            return element_of(values[0])
        if name == "setattr" and self._self is not None and registration_of(call) is not None:
            self.model.register(self.scope, call, UNKNOWN)
        return UNKNOWN

    def _function_result(self, call: cst.Call, name: str) -> Value | None:
        """What `call` of the file's top-level function `name` returns (None: no such function)."""
        summary = self.model.function_summary(name)
        if summary is None:
            return None
        function = self.model.function_named(name)
        if isinstance(summary, ModuleValue) and summary.config is not None and function is not None:
            # A layer factory (`conv_block(in_ch, out_ch)`): its layers with this call's sizes.
            sizes, layers = self._parameter_values(function, call)
            return replace(summary, config=instantiated(summary.config, sizes, layers))
        return self._from_summary(summary, call, function)

    def _from_summary(self, summary: Value, call: cst.Call, function: cst.FunctionDef | None = None) -> Value:
        """A same-file helper's result: a default-device tensor it makes is reported at the call,
        and under `no_grad` here nothing it computes records a graph."""
        if not isinstance(summary, TensorFacts):
            return summary
        placed = self._device_passed(call, function) if summary.device is Device.TARGET else None
        if summary.device is Device.TARGET and placed is None and _device_defaults_to_none(call, function):
            # `change_basis(l)` of `def change_basis(l, device=None)`: what None stands for is the
            # helper's choice (the default device, or the GPU when there is one).
            summary = replace(summary, device=Device.UNKNOWN)
        elif placed not in (None, Device.TARGET, Device.UNKNOWN):
            # `sample(n, k, device="cpu")`: the helper made it on the device its parameter named.
            summary = replace(summary, device=placed, origin=call)
        if summary.device in (Device.DEFAULT, Device.CPU) and summary.origin is not None:
            summary = replace(summary, origin=call)
        if self._no_grad and summary.requires_grad:
            summary = replace(summary, requires_grad=False)
        return summary

    @staticmethod
    def _output_device(module: ModuleValue, operands) -> Device:
        """Where a module's output is: with its parameters, or, for a module of unknown placement
        (a parameter `model`), with a placed first input, as the call succeeds only there."""
        if module.device is Device.UNKNOWN and operands and isinstance(operands[0][1], TensorFacts) \
                and operands[0][1].device.is_placed:
            return operands[0][1].device
        return module.device if module.device is not Device.DEFAULT else Device.UNKNOWN

    def _module_call(self, call: cst.Call, module: ModuleValue, args) -> Value:
        operands = []
        for arg, value in args:
            if arg.keyword is None and not arg.star:
                operands.extend([(arg.value, value)] if not isinstance(value, Sequence) else zip(
                    (element.value for element in arg.value.elements) if isinstance(arg.value, (cst.Tuple, cst.List)) else [arg.value] * len(value.items),
                    value.items,
                ))
        kind = module.kind or ""
        if kind.endswith("Loss"):
            # CTC takes its targets and lengths on the CPU beside accelerator log-probabilities.
            facts = self.combine(operands[:1] if kind == "torch.nn.CTCLoss" else operands, call, Rule.OTHER)
            return replace(facts, layout=None, scalar=None)
        if module.device.is_placed:
            inputs = self._computed_inputs(kind, operands)
            self.combine([(call.func, TensorFacts(device=module.device, scalar=False)), *inputs], call, Rule.OTHER)
            for node, value in inputs:
                if isinstance(value, TensorFacts) and value.loaded and value.device is Device.DEFAULT:
                    self.model.note_unmoved_batch(call, node, module.device)
        requires_grad = not self._no_grad and not module.from_caller
        if kind in PARAMETER_FREE_LAYERS:
            requires_grad = requires_grad and any(isinstance(value, TensorFacts) and value.requires_grad for _, value in operands)
        output = TensorFacts(device=self._output_device(module, operands), scalar=False, requires_grad=requires_grad)
        if output.device is Device.CONDITIONAL:
            placed_by = module if module.device is Device.CONDITIONAL else operands[0][1]
            output = replace(output, placed_when=placed_by.placed_when)
        if operands and isinstance(operands[0][1], TensorFacts) and operands[0][1].rank is not None:
            rank = operands[0][1].rank + (kind == "torch.nn.Embedding")
            if kind in RANK_PRESERVING_LAYERS or kind == "torch.nn.Embedding":
                output = replace(output, layout=Layout(rank, None, ()))
        sized = self._layer_output(call, module, operands)
        if sized is not None and sized.contradiction is not None:
            sized, output = None, replace(output, layout=None)  # the call raises: no later finding follows from it
        elif sized is not None:
            output = replace(output, layout=Layout(len(sized.shape), sized.shape, ()))
        if kind in _RECURRENT:
            state = output if sized is None else replace(output, layout=Layout(len(sized.hidden), sized.hidden, ()))
            hidden = Sequence((state, state)) if kind == "torch.nn.LSTM" else state
            return Sequence((output, hidden))
        if kind == "torch.nn.LSTMCell":
            return Sequence((output, output))  # (h, c), both (B, hidden_size)
        if kind in _PAIR_OUTPUT:
            return Sequence((output, replace(output, layout=None)))  # (output, attention weights)
        if sized is None and "." not in kind and kind:
            returned = self._forward_returned(kind, module, args)
            if isinstance(returned, Sequence):
                # `outputs, hidden = self.encoder(src)`: each tensor of the tuple `forward` returns.
                # A column among them stays one: `logits, values = model(obs)` with values (T, 1).
                return Sequence(tuple(replace(output, layout=_known_layout(item), column_of=item.column_of)
                                      if isinstance(item, TensorFacts) else item for item in returned.items))
            output = replace(output, layout=_known_layout(returned))
        elif sized is None and kind == "torch.nn.Sequential" and module.element is not None \
                and "." not in (module.element.kind or "."):
            # A stack of one Module class of the file (`nn.Sequential(*[Block(d) for _ in range(n)])`):
            # known where a block keeps the shape it is given (a block that downsamples, stacked,
            # gives each next one another shape than its `forward` was read with).
            returned = self._forward_returned(module.element.kind)
            given = known_sizes(operands[0][1]) if operands else None
            kept = given is not None and known_sizes(returned) == given
            output = replace(output, layout=_known_layout(returned) if kept else None)
        activation, activated_by = self._output_activation(kind, call)
        sizes = known_sizes(output)
        column_of = call if sizes is not None and len(sizes) == 2 and sizes[1] == "1" else None
        return replace(output, activation=activation, activated_by=activated_by, column_of=column_of)

    def _layer_config(self, call: cst.Call, qualified: str) -> LayerConfig | None:
        """The sizes a `torch.nn` layer is built with, by parameter name (`in_features`: `"32"`)."""
        kind = nn_class_name(qualified)
        if kind == "Sequential" and not any(arg.star or arg.keyword for arg in call.args):
            layers = [self._layer_in_sequence(arg.value) for arg in call.args]
            return LayerConfig(kind, (), call, tuple(layers))
        if kind is None or not shaped(kind) or any(arg.star for arg in call.args):
            return None
        parameters = size_parameters(kind)
        arguments = []
        for index, arg in enumerate(call.args):
            name = arg.keyword.value if arg.keyword is not None else (parameters[index] if index < len(parameters) else None)
            if name in parameters or name in KEYWORD_FLAGS:
                arguments.append((name, self._size_code(arg.value)))
        return LayerConfig(kind, tuple(arguments), call, sized_call=self._sized(kind, call))

    def _sized(self, kind: str, call: cst.Call) -> cst.Call:
        """`call` with the integers its arguments hold written out, and a convolution's padding
        that keeps the length whatever the dilation (`pads_to_same`) written "same"."""
        sized = with_integers(call, self._known_integer)
        padding = argument(call, 4, "padding") if kind.startswith("Conv") else None
        if padding is None or self._known_integer(padding) is not None:
            return sized
        held = assigned_once(self.scope.node, padding.value) if isinstance(padding, cst.Name) else padding
        if held is None or not pads_to_same(kind, call, held, self._known_integer):
            return sized
        place = next(index for index, arg in enumerate(call.args) if arg.value is padding)
        same = sized.args[place].with_changes(value=cst.SimpleString('"same"'))
        return sized.with_changes(args=[*sized.args[:place], same, *sized.args[place + 1:]])

    def _layer_in_sequence(self, expr: cst.BaseExpression) -> LayerConfig | None:
        """The sizes of one layer of an `nn.Sequential(...)`; a layer that a parameter holds
        (`act` of `def block(in_ch, out_ch, act)`) is named, for a call of the function to fill in."""
        config = getattr(self.model.memo.get(id(expr)), "config", None)
        if config is None and isinstance(expr, cst.Name) and isinstance(self.scope.node, cst.FunctionDef) \
                and has_parameter(self.scope.node, expr.value):
            return LayerConfig(PARAMETER_LAYER, (("name", expr.value),))
        return config

    def _config_field(self, name: str, field: str) -> str | None:
        """`cfg.d_model` of a parameter annotated with a dataclass of the file (`cfg: Config`): the
        one integer that field holds in every instance the file makes."""
        function = self.scope.node
        if not isinstance(function, cst.FunctionDef) or not self.model.examples.has_example_data():
            return None
        param = parameter_named(function, name)
        annotation = param.annotation.annotation if param is not None and param.annotation is not None else None
        return self.model.examples.config_field(annotation.value, field) if isinstance(annotation, cst.Name) else None

    def _option_default(self, name: str, dest: str) -> str | None:
        """`args.hidden` where `args = parser.parse_args()` (here or at the top level): the
        option's integer default, which a run without arguments uses."""
        default = self.model.examples.option_default(dest)  # first: most files define no options
        if default is None:
            return None
        function = self.scope.node if isinstance(self.scope.node, cst.FunctionDef) else None
        parsed = assigned_once(function, name) if function is not None else None
        if parsed is None and (function is None or not has_parameter(function, name)):
            parsed = assigned_once(self.ctx.module, name)
        return default if self.model.examples.parses_arguments(parsed) else None

    def _known_integer(self, expr: cst.BaseExpression) -> int | None:
        return literal(self._size_code(expr))

    def _listed_layer(self, call: cst.Call, qualified: str) -> ModuleValue | None:
        """The layers of `nn.ModuleList([...])` (a list written out or a comprehension) or of
        `nn.Sequential(*[...])`, joined; of `nn.Sequential(Block(d), Block(d))`, the blocks of one
        Module class of the file."""
        if nn_class_name(qualified) == "Sequential" and call.args and not any(arg.star or arg.keyword for arg in call.args):
            layers = [self.model.memo.get(id(arg.value), UNKNOWN) for arg in call.args]
            element = layers[0] if all(layer == layers[0] for layer in layers) else None
            return element if isinstance(element, ModuleValue) and "." not in (element.kind or ".") else None
        star = {"ModuleList": "", "Sequential": "*"}.get(nn_class_name(qualified) or "")
        if star is None or len(call.args) != 1 or call.args[0].keyword or call.args[0].star != star:
            return None
        element = element_of(self.model.memo.get(id(call.args[0].value), UNKNOWN))
        return element if isinstance(element, ModuleValue) else None

    def _layer_output(self, call: cst.Call, module: ModuleValue, operands: list) -> LayerOutput | None:
        """What a layer of known sizes gives for an input of known shape; a contradiction
        between them is noted for the rules (`TensorModel.layer_contradiction`)."""
        sizes = known_sizes(operands[0][1]) if operands and module.config is not None else None
        if sizes is None:
            return None
        result = layer_output(module.config, sizes)
        found = result.contradiction
        if found is not None:
            self.model.note_layer_contradiction(call, operands[0][0], found.sizes or sizes, found.layer or module.config, found)
        # An RNN's initial state: `h0`, or an LSTM's `(h0, c0)` (the tuple is spread into operands).
        for node, value in operands[1:3] if module.config.kind == "LSTM" else operands[1:2]:
            state = known_sizes(value)
            found = initial_state_contradiction(module.config, sizes, state) if state is not None else None
            if found is not None:
                self.model.note_layer_contradiction(call, node, state, module.config, found)
        # An attention layer's key and value: `attn(query, memory, memory)`, and its padding mask.
        for position, (node, value) in enumerate(operands[1:3], start=1):
            given = known_sizes(value)
            found = attention_input_contradiction(module.config, position, given) if given is not None else None
            if found is not None:
                self.model.note_layer_contradiction(call, node, given, module.config, found)
        mask = argument(call, 4, "key_padding_mask") if module.config.kind == "MultiheadAttention" else None
        key = known_sizes(operands[1][1]) if mask is not None and len(operands) > 1 else None
        mask_sizes = known_sizes(self.model.memo.get(id(mask))) if key is not None else None
        found = padding_mask_contradiction(module.config, key, mask_sizes) if mask_sizes is not None else None
        if found is not None:
            self.model.note_layer_contradiction(call, mask, mask_sizes, module.config, found)
        return result if result.shape is not None else None

    def _forward_returned(self, kind: str, module: ModuleValue | None = None, args=()) -> Value | None:
        """What a Module class of this file returns from `forward` (a tensor, or a tuple of them),
        where its example inputs fix it: for this `module`, built and called with these `args`,
        where the class is built more than once (see `TensorModel.construction_forward`)."""
        if not self.model.has_examples(kind):
            return None
        called_with = _passed(args)
        if module is not None and module.made_with is not None and called_with is not None:
            returned = self.model.construction_forward(kind, module, called_with)
            if returned is not None and returned is not UNKNOWN:
                return returned
        return self.model.module_method_summary(kind, "forward")

    def _output_activation(self, kind: str, call: cst.Call) -> tuple[str | None, cst.CSTNode | None]:
        """The activation a module's output holds, and where it is taken: an `nn.Softmax` or
        `nn.Sigmoid` layer (at its call), raw scores ("logits") of an `nn.Linear`, or a Module class whose `forward` returns one on every
        path (in that `forward`: a node of this file, or a project Note for another file's)."""
        if kind in ACTIVATION_LAYERS:
            return ACTIVATION_LAYERS[kind], call
        if kind in SCORE_LAYERS:
            return "logits", call
        if "." in kind and not kind.startswith("torch."):
            fact = self.ctx.project.lookup(kind)
            return fact.output if fact is not None and fact.output is not None else (None, None)
        if not kind:
            return None, None
        returned = self.model.module_method_summary(kind, "forward")
        if not isinstance(returned, TensorFacts):
            return None, None
        return returned.activation, returned.activated_by

    def _computed_inputs(self, kind: str, operands: list) -> list:
        """The inputs of a module call that must be on its device. A `torch.nn` layer computes
        with all of them (`self.lstm(x, (h0, c0))`); a Module class of the user, or one of unknown
        class, with its first input at least: the others may be CPU metadata (sizes, grids), and
        a tensor moved to the CPU on purpose (`.cpu()`, `device="cpu"`) is meant to stay there.
        None where the class's `forward` only indexes with its first input
        (`self.adjustments[indices, :]`): CPU indices index a tensor on any device."""
        if kind.startswith("torch.nn."):
            return operands
        if self._indexes_with_first_input(kind):
            return []
        return [(node, value) for node, value in operands[:1] if not (isinstance(value, TensorFacts) and value.device is Device.CPU)]

    def _indexes_with_first_input(self, kind: str) -> bool:
        """The `forward` of the file's Module class `kind` uses its first input only as an index
        or for its shape (`self.adjustments[indices, :]`, `indices.shape[0]`)."""
        classdef = self.ctx.module_classes.class_named(kind) if kind and "." not in kind else None
        forward = method_named(classdef, "forward") if classdef is not None else None
        params = forward.params.params if forward is not None else ()
        if len(params) < 2:
            return False
        name = params[1].name.value
        mentions = placeless = 0  # uses where the device does not matter: an index, its shape
        for node in every_node(forward.body):
            if isinstance(node, cst.Name) and node.value == name:
                mentions += 1
            elif isinstance(node, cst.Subscript):
                placeless += sum(isinstance(element.slice, cst.Index) and is_name(element.slice.value, name)
                                 for element in node.slice)
            elif isinstance(node, cst.Attribute) and node.attr.value in _PLACE_FREE_FIELDS \
                    and is_name(node.value, name) or isinstance(node, cst.Call) and is_name(node.func, "len") \
                    and len(node.args) == 1 and is_name(node.args[0].value, name):
                placeless += 1
        return mentions > 0 and mentions == placeless

    def _qualified(self, call: cst.Call, qualified: str, args) -> Value:
        if qualified in SIZE_FACTORIES or qualified in DATA_FACTORIES or qualified in LEGACY_CONSTRUCTORS:
            return self._factory(call, qualified, args)
        if qualified in LIKE_FACTORIES:
            source = args[0][1] if args and isinstance(args[0][1], TensorFacts) else TensorFacts()
            device = self._explicit_device(call)
            if device is not None:
                return TensorFacts(device=device, layout=source.layout, scalar=source.scalar)
            return replace(source, requires_grad=requires_grad_true(call))
        if qualified == "torch.from_numpy":
            return self._on_default_device(call, TensorFacts(scalar=False))
        if qualified == "copy.deepcopy" and len(args) == 1 and isinstance(args[0][1], (TensorFacts, ModuleValue)):
            return args[0][1]  # `encoder_k = copy.deepcopy(encoder_q)`: the same module, or tensor, again
        if qualified in EINOPS_FUNCTIONS and args and isinstance(args[0][1], TensorFacts):
            source = args[0][1]
            return TensorFacts(device=source.device, dtype=source.dtype, requires_grad=source.requires_grad,
                               placed_when=source.placed_when)
        if qualified in PARAMETER_CLASSES:
            data = args[0][1] if args and isinstance(args[0][1], TensorFacts) else TensorFacts()
            flag = keyword_arg(call, "requires_grad")
            grad = flag is None or not (isinstance(flag.value, cst.Name) and flag.value.value == "False")
            return replace(data, requires_grad=grad, maybe=False)
        if qualified in _VARIABLES:
            # The pre-0.4 wrapper returns its tensor as it is: same device, shape and origin.
            data = args[0][1] if args and args[0][0].keyword is None else UNKNOWN
            return replace(data, requires_grad=True) if isinstance(data, TensorFacts) and requires_grad_true(call) else data
        if qualified == "torch.device":
            return DeviceValue(self.device_value(call))
        if qualified in _LOADERS:
            return Iterable(self._loaded_batch(call, args))
        if qualified == "torch.utils.data.TensorDataset":
            return Iterable(Sequence(tuple(_row(value) for arg, value in args if arg.keyword is None)))
        if qualified.startswith("math.") or qualified in ("builtins.len", "numpy.prod"):
            return NUMBER
        if is_torch_module_class(qualified) or (
            qualified.startswith(_MODEL_FACTORIES) and qualified.rsplit(".", 1)[-1][:1].islower()
        ):
            return ModuleValue(self._explicit_device(call) or Device.DEFAULT, qualified, config=self._layer_config(call, qualified),
                               element=self._listed_layer(call, qualified))
        for namespace in TENSOR_NAMESPACES:
            if qualified.startswith(namespace):
                rest = qualified[len(namespace):]
                if "." in rest or not rest[:1].islower() or rest.startswith("_") or rest in NOT_TENSOR_FUNCTIONS and rest not in FUNCTION_OPS:
                    continue
                return self._function_op(call, rest, args)
        return self._project_call(call, qualified)

    def _project_call(self, call: cst.Call, qualified: str) -> Value:
        """A function imported from another file of the project that returns a CPU tensor
        (torchlint/project/), or one of its Module classes whose `forward` ends in an activation.
        Other Module classes stay unknown here: what their `forward` returns (a tuple, detached
        values) is not summarized."""
        fact = self.ctx.project.lookup(qualified)
        if fact is not None and fact.kind == "tensor":
            return self._on_default_device(call, TensorFacts(scalar=False))
        if fact is not None and fact.output is not None:
            return ModuleValue(Device.DEFAULT, qualified)
        return UNKNOWN

    def _function_op(self, call: cst.Call, name: str, args) -> Value:
        op = FUNCTION_OPS.get(name, Op(Rule.OTHER))
        positional = [(arg.value, value) for arg, value in args if arg.keyword is None and not arg.star]
        if op.rule in (Rule.CAT, Rule.STACK, Rule.MESHGRID) or (op.rule is Rule.EINSUM):
            return self._list_op(call, op.rule, args, name)
        if not positional:
            if op.rule is not Rule.OTHER:
                return TensorFacts()
            return self.combine(self._tensor_args(args), call, Rule.OTHER, op.combines)  # all by keyword
        receiver_node, receiver = positional[0]
        result = self.apply(call, op, name, receiver_node, receiver, args[1:] if args and args[0][0].keyword is None else args)
        if result is UNKNOWN and op.rule not in (Rule.SPLIT, Rule.REDUCE_TUPLE, Rule.NUMBER, Rule.SHAPE):
            activation = _ACTIVATIONS.get(name)  # `torch.log_softmax(x)`, whatever `x` is
            return TensorFacts(activation=activation, activated_by=call if activation else None)
        return result

    def _tensor_args(self, args) -> list[tuple[cst.CSTNode, Value]]:
        found = []
        for arg, value in args:
            if arg.star:
                continue
            if isinstance(value, Collected):
                # A filled list: one operand where its tensors are, one per tensor made on the CPU.
                placed = TensorFacts(device=value.placed, scalar=False) if value.placed is not None else value.element
                found.append((arg.value, placed))
                found.extend((origin, TensorFacts(device=Device.DEFAULT, scalar=False, origin=origin))
                             for origin in value.on_default)
            elif isinstance(value, Sequence) and isinstance(arg.value, (cst.Tuple, cst.List)):
                found.extend((element.value, item) for element, item in zip(arg.value.elements, value.items))
            elif isinstance(value, (Sequence, Iterable)):
                found.append((arg.value, element_of(value)))  # `torch.stack(torch.meshgrid(...))`
            else:
                found.append((arg.value, value))
        return found

    def _list_op(self, call: cst.Call, rule: Rule, args, name: str) -> Value:
        if rule is Rule.EINSUM:
            equation = string_value(args[0][0].value) if args else None
            operands = self._tensor_args(args[1:])
            facts = self.combine(operands, call, Rule.OTHER)
            if equation is not None and "->" in equation and "..." not in equation:
                output = equation.split("->", 1)[1].replace(" ", "")  # `"b i d, b j d -> b i j"` spaced too
                sizes = _einsum_sizes(equation, [known_sizes(value) for _, value in operands])
                return replace(facts, layout=Layout(len(output), sizes, ()), scalar=not output)
            return replace(facts, layout=None, scalar=None)
        operands = self._tensor_args(args[:1])
        facts = self.combine(operands, call, Rule.OTHER, check=rule is not Rule.MESHGRID)
        # Every tensor joined has one rank, so the tensors whose rank is known tell it.
        ranks = {value.rank for _, value in operands if isinstance(value, TensorFacts) and value.rank is not None}
        rank = ranks.pop() if len(ranks) == 1 else None
        if rule is Rule.MESHGRID:
            item = replace(facts, layout=None, scalar=False)
            positional = [value for arg, value in args if arg.keyword is None]
            count = len(operands) if len(positional) == 1 and isinstance(positional[0], Sequence) else len(positional)
            return Sequence((item,) * count)
        sizes = _joined_sizes(call, name, self._joined_operands(args, operands)) if name in _JOINS else None
        if sizes is not None:
            return replace(facts, layout=Layout(len(sizes), sizes, ()), scalar=False)
        if rank is not None:
            rank += rule is Rule.STACK
        return replace(facts, layout=Layout(rank, None, ()) if rank is not None else None, scalar=False)

    @staticmethod
    def _joined_operands(args, operands) -> list:
        """The known sizes of each tensor joined: those of a list written out, or as many copies of
        a comprehension's element as it makes (`torch.stack([x[i : i + T] for i in starts])`)."""
        joined = [known_sizes(value) for _, value in operands]
        written = args[0][1] if args else None
        if isinstance(written, Iterable):
            count = literal(written.length)
            # A comprehension with an `if`: how many it joins is not known.
            return joined * count if count is not None and len(joined) == 1 else []
        return joined

    def _method(self, call: cst.Call, name: str, receiver_node, receiver: Value, args, env: Env) -> Value:
        if self._self is not None and isinstance(receiver_node, cst.Name) and receiver_node.value == self._self:
            if registration_of(call) is not None:
                self.model.register(self.scope, call, args[1][1] if len(args) > 1 else UNKNOWN)
                return UNKNOWN
            self.model.note_self_call(self.scope, name, [value for arg, value in args if arg.keyword is None and not arg.star])
            summary = self.model.method_summary(self.scope, name)
            if summary is not None:
                return self._from_summary(summary, call)
            attribute = self.eval(call.func, env)
            if isinstance(attribute, (ModuleValue, TensorFacts)):
                return self._call_value(call, attribute, args)
        if isinstance(receiver, ModuleValue):
            return self._module_method(call, name, receiver, args)
        if isinstance(receiver, ObjectValue):
            summary = self.model.object_method_summary(receiver.kind, name)
            return self._from_summary(summary, call) if summary is not None else UNKNOWN
        op = METHOD_OPS.get(name)
        if isinstance(receiver, TensorFacts):
            if name in _RESHAPING_IN_PLACE:
                # `x.unsqueeze_(1)`: the out-of-place op's shape (the receiver is rebound too, see
                # `_updated_in_place`); one not modelled (`resize_`) leaves the shape unknown.
                reshaped = METHOD_OPS.get(name[:-1])
                if reshaped is None:
                    return replace(receiver, layout=None, scalar=None)
                return self.apply(call, reshaped, name[:-1], receiver_node, receiver, args)
            if op is None:
                if name in NOT_TENSOR_METHODS:
                    return UNKNOWN
                if name.endswith("_"):
                    return receiver
                return UNKNOWN
            return self.apply(call, op, name, receiver_node, receiver, args)
        if op is not None and (op.rule in (Rule.REORDER, Rule.VIEW, Rule.RESHAPE, Rule.CONTIGUOUS, Rule.UNSQUEEZE,
                                           Rule.SQUEEZE, Rule.MOVE) or name in _TENSOR_ONLY_CONVERSIONS):
            # Of unknown kind: followed for its layout, device and dtype (`mask.byte()`); a tensor
            # for sure where no other common type has the method (a NumPy array has `view` and
            # `reshape`, a module `to` and `float`).
            maybe = name not in _TENSOR_ONLY_METHODS
            return self.apply(call, op, name, receiver_node, TensorFacts(maybe=maybe), args)
        if isinstance(receiver, (Iterable, Sequence)) and name in ("values", "items"):
            return UNKNOWN
        return UNKNOWN

    def _module_method(self, call: cst.Call, name: str, module: ModuleValue, args) -> Value:
        if name in ("to", "cuda", "cpu"):
            moved = self._move(call, name, TensorFacts(device=module.device), args)
            return replace(module, device=moved.device if moved.device is not Device.UNKNOWN or name != "to" else module.device)
        if name in MODULE_FLUENT_METHODS:
            return module
        if name in ("parameters", "buffers"):
            return Iterable(TensorFacts(device=module.device, scalar=None, requires_grad=name == "parameters"))
        if name in ("named_parameters", "named_buffers"):
            return Iterable(Sequence((UNKNOWN, TensorFacts(device=module.device, requires_grad=name == "named_parameters"))))
        if name == "forward":
            return self._module_call(call, module, args)
        summary = self.model.module_method_summary(module.kind, name) if module.kind and "." not in module.kind else None
        return _activations_of(summary) if summary is not None else UNKNOWN

    # The op table ------------------------------------------------------------------------

    def apply(self, call: cst.Call, op: Op, name: str, receiver_node, receiver: Value, args) -> Value:
        """Apply a table entry to a receiver (the first argument, in function form), and say
        which activation's values the result holds."""
        result = self._applied(call, op, name, receiver_node, receiver, args)
        if not isinstance(result, TensorFacts):
            return result
        held = receiver.activation if isinstance(receiver, TensorFacts) else None
        if name in _ACTIVATIONS or (name == "exp" and held == "log_softmax"):
            activation, activated_by = _ACTIVATIONS.get(name, "softmax"), call
        elif name in _KEEPS_VALUES and held is not None:
            activation, activated_by = held, receiver.activated_by
        else:
            activation, activated_by = None, None
        if result.activation == activation and result.activated_by is activated_by:
            return result
        return replace(result, activation=activation, activated_by=activated_by)

    def _applied(self, call: cst.Call, op: Op, name: str, receiver_node, receiver: Value, args) -> Value:
        if not isinstance(receiver, TensorFacts):
            if op.rule in (Rule.ELEMENTWISE, Rule.OTHER) and any(isinstance(value, TensorFacts) for _, value in args):
                return self.combine([(receiver_node, receiver), *self._tensor_args(args)], call, op.rule, op.combines)
            receiver = TensorFacts(maybe=True) if op.rule in (Rule.REORDER, Rule.VIEW, Rule.RESHAPE, Rule.UNSQUEEZE) else None
            if receiver is None:
                return TensorFacts() if op.rule in (Rule.ELEMENTWISE, Rule.REDUCE, Rule.MATMUL, Rule.OTHER) else UNKNOWN
        if self._no_grad and receiver.requires_grad:
            receiver = replace(receiver, requires_grad=False)
        rule = op.rule
        if rule is Rule.NUMBER:
            return NUMBER
        if rule is Rule.SHAPE:
            if call.args:
                return self._size_of(receiver, call)
            return self._shape(receiver)
        if rule is Rule.MOVE:
            return self._move(call, name, receiver, args)
        if rule is Rule.CONVERT:
            if name == "type":
                return self._typed(call, receiver) if call.args else UNKNOWN
            return replace(receiver, dtype=op.dtype)
        if rule is Rule.DETACH:
            return replace(receiver, requires_grad=False)
        if rule is Rule.KEEP:
            return receiver
        if rule is Rule.REQUIRES_GRAD:
            flag = call.args[0].value if call.args else None
            return replace(receiver, requires_grad=not (isinstance(flag, cst.Name) and flag.value == "False"))
        if rule is Rule.SAME_DEVICE:
            return TensorFacts(device=receiver.device, origin=receiver.origin, requires_grad=False,
                               layout=self._new_layout(call, name, receiver))
        if rule is Rule.SQUEEZE and _all_unit_sizes(receiver.layout) and not positional_args(call)[self._input_offset(call):]:
            return replace(receiver, layout=Layout(0, (), ()), scalar=True)  # `torch.rand(1).squeeze()`
        if rule in (Rule.REORDER, Rule.VIEW, Rule.RESHAPE, Rule.CONTIGUOUS, Rule.UNSQUEEZE, Rule.SQUEEZE, Rule.FLATTEN, Rule.UNFLATTEN):
            if name == "expand_as":
                other = args[0][1] if args and isinstance(args[0][1], TensorFacts) else None
                return replace(receiver, layout=self._expanded_as(receiver, other, args[0][0].value if args else None))
            return replace(receiver, layout=self._reshaped(call, rule, name, receiver))
        if rule is Rule.SPLIT:
            return self._split(call, name, receiver)
        if rule is Rule.UNFOLD:
            return replace(receiver, layout=self._unfolded(call, receiver))
        if rule is Rule.REPEAT:  # `repeat_interleave(repeats, dim)`
            along = len(args) > 1 and args[1][0].keyword is None or keyword_arg(call, "dim") is not None
            return replace(receiver, layout=self._repeated(call, receiver, args) if along else Layout(1, None, ()))
        operands = [(receiver_node, receiver), *self._tensor_args(
            [(arg, value) for arg, value in args if arg.keyword is None or arg.keyword.value in _OPERAND_KEYWORDS]
        )]
        tensor_operands = sum(isinstance(value, TensorFacts) for _, value in operands)
        if rule is Rule.REDUCE_TUPLE:
            if tensor_operands > 1:
                return self.combine(operands, call, Rule.ELEMENTWISE, op.combines)
            return self._reduced(call, name, receiver)
        if rule is Rule.REDUCE:
            return self._reduced(call, name, receiver)
        if rule is Rule.WHERE and not any(arg.keyword is None for arg, _ in args):
            return UNKNOWN  # `torch.where(cond)`: a tuple of index tensors
        facts = self.combine(operands, call, Rule.MATMUL if rule is Rule.MATMUL else Rule.ELEMENTWISE, op.combines)
        if rule is Rule.OTHER:
            return replace(facts, layout=self._op_layout(call, name, receiver) or _memory_format_kept(name, receiver),
                           scalar=None)
        if rule is Rule.COMPARE:
            return replace(facts, dtype="bool", requires_grad=False)
        if rule is Rule.RECOMPUTE:
            # `masked_fill`'s mask broadcasts to the tensor (its contract, which TL104 checks): the
            # result has the tensor's sizes, even where the mask's are unknown.
            return replace(facts, layout=_fresh_layout(receiver if name == "masked_fill" else facts))
        return facts

    def _loaded_batch(self, call: cst.Call, args) -> Value:
        """What iterating a DataLoader gives: batches on the CPU, unless its collate function,
        its dataset (a class of the file that places tensors) or its tensors put them elsewhere."""
        if keyword_arg(call, "collate_fn") is not None or any(arg.star for arg in call.args) or not self.model.loaders_load_on_cpu():
            return TensorFacts(scalar=False)
        dataset = next((value for arg, value in args if arg.keyword is None or arg.keyword.value == "dataset"), UNKNOWN)
        if dataset is UNKNOWN or isinstance(dataset, ObjectValue):  # a dataset class or torchvision dataset: items made on the CPU
            return TensorFacts(device=Device.DEFAULT, scalar=False, loaded=True)
        item = element_of(dataset) if isinstance(dataset, Iterable) else UNKNOWN
        size_arg = argument(call, 1, "batch_size")
        batch = self._size_code(size_arg) if size_arg is not None else "1"
        if isinstance(item, Sequence):
            return Sequence(tuple(_batched(part, batch) for part in item.items))
        return _batched(item, batch)

    def _moves_loop_targets(self, node: cst.For) -> bool:
        """A line of the loop body names a loop target and moves something (`x = x.to(device)`,
        `batch = [t.cuda() for t in batch]`, `to_device(batch, device)`): the batch is placed."""
        names = target_names(node.target)
        if not names:
            return True
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        return any(
            pattern.search(line) and (".to(" in line or ".cuda(" in line or "device" in line)
            for line in self.ctx.module.code_for_node(node.body).splitlines()
        )

    def _expanded_as(self, receiver: TensorFacts, other: TensorFacts | None, other_node) -> Layout | None:
        """`x.expand_as(y)`: broadcast to y's shape (sizes named after y where unknown)."""
        if other is None or other.rank is None or other_node is None:
            return None
        shape = self._shape(other)
        written = arg_code(self.ctx, other_node)
        sizes = tuple(
            item.code if isinstance(item, Number) and item.code else f"{written}.size({index})"
            for index, item in enumerate(shape.items if isinstance(shape, Sequence) else [NUMBER] * other.rank)
        )
        return (receiver.layout or Layout(None, None, ())).then(("expand", sizes))

    def _size_of(self, receiver: TensorFacts, call: cst.Call) -> Value:
        shape = self._shape(receiver)
        position = int_value(call.args[0].value)
        if isinstance(shape, Sequence) and position is not None and -len(shape.items) <= position < len(shape.items):
            return shape.items[position]
        return NUMBER

    def _reduced(self, call: cst.Call, name: str, receiver: TensorFacts) -> Value:
        dims = [arg for arg in call.args if arg.keyword is None or arg.keyword.value in ("dim", "axis", "k")]
        if name in _DIM_THEN_KEEPDIM:  # `x.logsumexp(-1, True)`
            keepdim = argument(call, self._input_offset(call) + 1, "keepdim")
        else:
            given = torch_keyword(call, "keepdim")
            keepdim = given.value if given is not None else None
        keeps = isinstance(keepdim, cst.Name) and keepdim.value == "True"
        if not dims and name not in _ALONG_LAST_DIM_BY_DEFAULT:
            return replace(receiver, layout=Layout(0, (), ()), scalar=True, origin=receiver.origin)
        rank = receiver.rank
        reduced = self._reduced_dims(call)
        if keeps or name in ("topk", "sort", "cummax", "cummin"):
            new_rank = rank
        elif rank is not None and (not dims or reduced is not None) and rank >= len(reduced or (0,)):
            new_rank = rank - len(reduced or (0,))
        else:
            new_rank = None
        sizes = self._reduced_sizes(call, name, receiver, keeps) if new_rank is not None else None
        # `logits.argmax(dim=1, keepdim=True)`: a column, kept to broadcast against the rows it
        # was reduced from; against a vector of its length it makes an (N, N) table.
        column = keeps and sizes is not None and len(sizes) == 2 and sizes[1] == "1"
        if sizes is not None:
            new_rank = len(sizes)  # a dim named twice (`dim=(1, -1)`) counts once here; torch raises
        facts = replace(
            receiver, layout=Layout(new_rank, sizes, ()) if new_rank is not None else None,
            scalar=None if new_rank is None else new_rank == 0, column_of=call if column else None,
        )
        if name in ("max", "min", "median", "nanmedian", "mode", "topk", "sort", "kthvalue", "cummax", "cummin"):
            return Sequence((facts, replace(facts, dtype="int64", requires_grad=False)))
        return facts

    def _reduced_dims(self, call: cst.Call) -> tuple[int, ...] | None:
        """The dims a reduction names: `dim=1`, `dim=(2, 3)`; None when not written as integers."""
        dim_arg = argument(call, self._input_offset(call), "dim")
        parts = [element.value for element in dim_arg.elements] if isinstance(dim_arg, (cst.Tuple, cst.List)) else [dim_arg]
        dims = tuple(int_value(part) if part is not None else None for part in parts)
        return dims if dims and None not in dims else None

    def _reduced_sizes(self, call: cst.Call, name: str, receiver: TensorFacts, keeps: bool) -> tuple | None:
        """The sizes a reduction over written dims leaves: those dims dropped, or 1 with
        `keepdim=True` (`logits.argmax(dim=1, keepdim=True)` of (N, C) is (N, 1)); `sort` and the
        cumulative ones keep them all; `topk` sets the dim to k."""
        sizes = known_sizes(receiver)
        if name == "topk":
            return self._top_k_sizes(call, sizes) if sizes is not None else None
        dims = self._reduced_dims(call)
        if sizes is None or dims is None or not all(-len(sizes) <= dim < len(sizes) for dim in dims):
            return None
        if name in ("sort", "cummax", "cummin"):
            return sizes
        reduced = {dim % len(sizes) for dim in dims}
        return tuple("1" if index in reduced else size for index, size in enumerate(sizes)
                     if keeps or index not in reduced)

    def _top_k_sizes(self, call: cst.Call, sizes: tuple) -> tuple | None:
        """`x.topk(k, dim=-1)`: that dim becomes k (the last one by default)."""
        offset = self._input_offset(call)
        k, dim_arg = argument(call, offset, "k"), argument(call, offset + 1, "dim")
        dim = int_value(dim_arg) if dim_arg is not None else -1
        if k is None or dim is None or not -len(sizes) <= dim < len(sizes):
            return None
        dim %= len(sizes)
        return (*sizes[:dim], self._size_code(k), *sizes[dim + 1:])

    def _repeated(self, call: cst.Call, receiver: TensorFacts, args) -> Layout | None:
        """`x.repeat_interleave(n, dim=d)`: x's sizes with dim d taken n times, where n is a
        known whole number (a tensor of counts gives a size that depends on its values)."""
        rank = receiver.rank
        if rank is None:
            return None
        sizes = known_sizes(receiver)
        repeats = args[0][1] if args and args[0][0].keyword is None else None
        dim_arg = argument(call, self._input_offset(call) + 1, "dim")
        dim = int_value(dim_arg) if dim_arg is not None else None
        count = literal(repeats.code) if isinstance(repeats, Number) else None
        if sizes is None or count is None or dim is None or not -rank <= dim < rank:
            return Layout(rank, None, ())
        dim %= rank
        size = sizes[dim]
        if literal(size) is not None:
            repeated = str(literal(size) * count)
        else:
            repeated = f"{size} * {count}" if size is not None else None
        return Layout(rank, (*sizes[:dim], repeated, *sizes[dim + 1:]), ())

    def _unfolded(self, call: cst.Call, receiver: TensorFacts) -> Layout | None:
        """`x.unfold(dim, size, step)`: dim becomes the number of windows, (n - size) // step + 1,
        and a new last dim holds each window's `size` values."""
        rank = receiver.rank
        if rank is None:
            return None
        sizes = known_sizes(receiver)
        dim_arg, size_arg, step_arg = (argument(call, position, keyword)
                                       for position, keyword in enumerate(("dimension", "size", "step")))
        dim = int_value(dim_arg) if dim_arg is not None else None
        if sizes is None or dim is None or size_arg is None or step_arg is None or not -rank <= dim < rank:
            return Layout(rank + 1, None, ())
        dim %= rank
        window = self._size_code(size_arg)
        length, width, step = literal(sizes[dim]), literal(window), literal(self._size_code(step_arg))
        count = str((length - width) // step + 1) if None not in (length, width, step) and step else None
        return Layout(rank + 1, (*sizes[:dim], count, *sizes[dim + 1:], window), ())

    def _split(self, call: cst.Call, name: str, receiver: TensorFacts) -> Value:
        item = replace(receiver, layout=Layout(receiver.rank - (name == "unbind"), None, ()) if receiver.rank else None, scalar=None)
        count = int_value(call.args[0].value) if call.args and name == "chunk" else None
        if name == "split" and call.args and isinstance(call.args[0].value, (cst.List, cst.Tuple)):
            count = len(call.args[0].value.elements)
        if name == "chunk" and count:
            item = replace(item, layout=_chunked(call, count, receiver) or item.layout)
        if name == "split" and self.ctx.callee(call) is None:
            pieces = _split_sizes(call, receiver)
            if pieces is not None:  # `qkv.split([d, d, 2 * d], dim=-1)`, `x.split(64, dim=1)`
                return Sequence(tuple(replace(item, layout=Layout(len(piece), piece, ())) for piece in pieces))
        return Sequence((item,) * count) if count is not None and 0 < count <= 16 else Iterable(item)

    def _reshaped(self, call: cst.Call, rule: Rule, name: str, receiver: TensorFacts) -> Layout | None:
        layout = receiver.layout
        source = layout if layout is not None else Layout(None, None, ())
        if rule in (Rule.VIEW, Rule.RESHAPE):
            args = shape_args(call)
            if rule is Rule.RESHAPE and self.ctx.callee(call) is not None:
                args = args[1:] if args else args
            if args is None or not args or (len(args) == 1 and int_value(args[0]) is None):
                return Layout(None, None, ())
            if layout is None or not layout.reordered:
                for arg in args:
                    if isinstance(arg, cst.BinaryOperation):
                        self.single_dims.add(arg_code(self.ctx, arg))
            return Layout(len(args), _inferred(tuple(self._size_code(arg) for arg in args), known_sizes(receiver)), ())
        if rule is Rule.CONTIGUOUS:
            if layout is not None:
                shapes = layout.candidates()
                if len(shapes) == 1:
                    return Layout(len(shapes[0]), tuple(dim[2] for dim in shapes[0]), ())
            return Layout(None, None, ())
        if rule is Rule.SQUEEZE:
            shape = self._squeezed(call, receiver)
            return Layout(len(shape), shape, ()) if shape is not None else Layout(None, None, (), unit_sizes_likely=True)
        if rule is Rule.FLATTEN:
            return self._flattened(call, receiver)
        if rule is Rule.UNFLATTEN:
            return self._unflattened(call, receiver)
        ints = [int_value(arg.value) for arg in positional_args(call)]
        if self.ctx.callee(call) is not None:
            ints = ints[1:]
        if rule is Rule.UNSQUEEZE:
            return source.then(("unsqueeze", ints[0])) if len(ints) == 1 and ints[0] is not None else None
        if name == "permute":
            arguments = positional_args(call)[self._input_offset(call):]
            if len(arguments) == 1 and isinstance(arguments[0].value, (cst.Tuple, cst.List)):
                ints = [int_value(element.value) for element in arguments[0].value.elements]
            return source.then(("permute", tuple(ints)), call) if ints and None not in ints else None
        if name in ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis"):
            if len(ints) != 2 or None in ints:
                return None
            return source.then(("movedim" if name in ("movedim", "moveaxis") else "transpose", ints[0], ints[1]), call)
        if name == "t":
            return _as_matrix(source).then(("t",), call) if not ints else None
        args = shape_args(call)
        if args is None or (len(args) == 1 and int_value(args[0]) is None):
            return None
        return source.then(("expand", tuple(arg_code(self.ctx, arg) for arg in args)), call)

    def _flattened(self, call: cst.Call, receiver: TensorFacts) -> Layout | None:
        """`torch.flatten(x, 1)`, `x.flatten(1, 2)` of known sizes: the sizes from the start dim to
        the end dim (the last, by default) multiplied. Of unknown sizes, a flatten from dim
        `start` to the last leaves `start + 1` dims (`x.flatten(start_dim=1)`: a batch of vectors)."""
        sizes = known_sizes(receiver)
        arguments = positional_args(call)[self._input_offset(call):]
        start_arg = arguments[0] if arguments else keyword_arg(call, "start_dim")
        end_arg = arguments[1] if len(arguments) > 1 else keyword_arg(call, "end_dim")
        start = 0 if start_arg is None else int_value(start_arg.value)
        end = -1 if end_arg is None else int_value(end_arg.value)
        if start is None or end is None or len(arguments) > 2:
            return None
        if not sizes:
            return Layout(start + 1, None, ()) if start >= 0 and end == -1 else None
        shape = flattened_sizes(sizes, start % len(sizes), end % len(sizes))
        return Layout(len(shape), shape, ()) if shape is not None else None

    def _squeezed(self, call: cst.Call, receiver: TensorFacts) -> tuple | None:
        """`x.squeeze()`, `x.squeeze(0)` of known sizes (see `op_shapes.squeezed`)."""
        sizes = known_sizes(receiver)
        dims = [int_value(arg.value) for arg in positional_args(call)[self._input_offset(call):]]
        if sizes is None or len(dims) > 1 or None in dims:
            return None
        return squeezed(sizes, dims[0] if dims else None)

    def _unflattened(self, call: cst.Call, receiver: TensorFacts) -> Layout | None:
        """`x.unflatten(1, (H, -1))`: dim 1 split into the sizes given (a `-1` worked out where
        the others are literals)."""
        sizes = known_sizes(receiver)
        offset = self._input_offset(call)
        dim_arg, parts = argument(call, offset, "dim"), argument(call, offset + 1, "sizes")
        dim = int_value(dim_arg) if dim_arg is not None else None
        if sizes is None or dim is None or not isinstance(parts, (cst.Tuple, cst.List)) or not -len(sizes) <= dim < len(sizes):
            return None
        dim %= len(sizes)
        split = _inferred(tuple(self._size_code(element.value) for element in parts.elements), (sizes[dim],))
        shape = (*sizes[:dim], *split, *sizes[dim + 1:])
        return Layout(len(shape), shape, ())

    def _op_layout(self, call: cst.Call, name: str, receiver: TensorFacts) -> Layout | None:
        """The sizes `F.pad`, `F.interpolate`, `narrow`, `index_select`, `F.one_hot` and the
        functional pooling give an input of known sizes (see `op_shapes`); None otherwise."""
        sizes = known_sizes(receiver)
        if sizes is None:
            return None
        offset = self._input_offset(call)
        shape = None
        if name == "pad":
            pads = self._integers(argument(call, 1, "pad"))
            shape = padded(sizes, pads) if pads else None
        elif name == "interpolate":
            size, scale = argument(call, 1, "size"), argument(call, 2, "scale_factor")
            shape = interpolated(sizes, self._integers(size) if size is not None else None,
                                 self._numbers(scale) if scale is not None else None)
        elif name in ("narrow", "index_select"):
            dim = argument(call, offset, "dim")
            length = argument(call, offset + 2, "length") if name == "narrow" else None
            index = argument(call, offset + 1, "index") if name == "index_select" else None
            if length is not None:
                count = self._size_code(length)
            else:
                picked = known_sizes(self.model.memo.get(id(index))) if index is not None else None
                count = picked[0] if picked is not None and len(picked) == 1 else None
            position = int_value(dim) if dim is not None else None
            shape = narrowed(sizes, position, count) if position is not None and count is not None else None
        elif name == "one_hot":
            classes = argument(call, 1, "num_classes")
            count = self._size_code(classes) if classes is not None else None
            shape = one_hot(sizes, count if count != "-1" else None)
        elif name == "tile":
            counts = self._integers(shape_args(call, offset))
            shape = repeated(sizes, (1,) * (len(sizes) - len(counts)) + counts) if counts else None
        elif name == "argsort":
            shape = sizes
        elif name in ("gather", "embedding", "linear"):
            shape = self._indexed_op_sizes(call, name, offset, sizes)
        elif name == "stft" and not (receiver.dtype or "").startswith("complex"):  # a complex signal is two-sided
            shape = self._stft(call, offset, sizes)
        elif name == "outer":
            other = argument(call, offset, "vec2")
            columns = known_sizes(self.model.memo.get(id(other))) if other is not None else None
            shape = (sizes[0], columns[0]) if len(sizes) == 1 and columns is not None and len(columns) == 1 else None
        elif (kind := FUNCTIONAL_POOLING.get(self.ctx.callee(call) or "")) is not None:
            shape = self._pooled(kind, call, sizes)
        return Layout(len(shape), shape, ()) if shape is not None else None

    def _indexed_op_sizes(self, call: cst.Call, name: str, offset: int, sizes: tuple) -> tuple | None:
        """`torch.gather(x, dim, index)`: the index's sizes; `F.embedding(ids, weight)`: a row of
        the table per id; `F.linear(x, weight)`: the last dim becomes the weight's rows."""
        other = argument(call, offset + 1, "index") if name == "gather" else argument(call, 1, "weight")
        other_sizes = known_sizes(self.model.memo.get(id(other))) if other is not None else None
        if other_sizes is None:
            return None
        if name == "gather":
            return other_sizes if len(other_sizes) == len(sizes) else None
        if len(other_sizes) != 2:
            return None
        return (*sizes, other_sizes[1]) if name == "embedding" else (*sizes[:-1], other_sizes[0])

    def _stft(self, call: cst.Call, offset: int, sizes: tuple) -> tuple | None:
        """`torch.stft(wave, n_fft, hop_length, ...)`, with the one-sided spectrum of a real signal."""
        n_fft, hop = argument(call, offset, "n_fft"), argument(call, offset + 1, "hop_length")
        flags = {name: argument(call, position, name) for name, position in (("center", offset + 4), ("onesided", offset + 7),
                                                                              ("return_complex", offset + 8))}
        if any(value is not None and dotted_name(value) not in ("True", "False", "None") for value in flags.values()) \
                or dotted_name(flags["onesided"]) == "False":
            return None
        if hop is not None and dotted_name(hop) == "None":
            hop = None  # `hop_length=None`: the default, n_fft // 4
        points = literal(self._size_code(n_fft)) if n_fft is not None else None
        step = literal(self._size_code(hop)) if hop is not None else None
        if points is None or (hop is not None and step is None):
            return None
        return stft_sizes(sizes, points, step, dotted_name(flags["center"]) != "False",
                          dotted_name(flags["return_complex"]) != "False")

    @staticmethod
    def _pooled(kind: str, call: cst.Call, sizes: tuple) -> tuple | None:
        """`F.max_pool2d(x, 2)`, `F.adaptive_avg_pool2d(x, 1)`: the window arithmetic of the layer
        they compute on the trailing dims; the leading ones keep their codes."""
        reshape = pooling_layer(kind, call).reshape
        result = reshape(tuple(literal(size) for size in sizes)) if reshape is not None else None
        spatial = int(kind[-2])
        if result is None or len(result) != len(sizes) or len(sizes) <= spatial:
            return None
        return (*sizes[:-spatial], *(None if size is None else str(size) for size in result[-spatial:]))

    def _new_layout(self, call: cst.Call, name: str, receiver: TensorFacts) -> Layout | None:
        """`x.new_zeros(B, 5)`, `x.new_full((B, 5), value)`: the sizes given; `x.repeat(2, 1)`: the
        sizes times the repeats; `x.view_as(y)`: y's sizes."""
        if name == "repeat":
            counts, sizes = self._integers(shape_args(call)), known_sizes(receiver)
            shape = repeated(sizes, counts) if counts and sizes else None
            return Layout(len(shape), shape, ()) if shape is not None else None
        if name in ("view_as", "reshape_as"):
            other = call.args[0].value if call.args else None
            sizes = known_sizes(self.model.memo.get(id(other))) if other is not None else None
            return Layout(len(sizes), sizes, ()) if sizes else None
        if name == "new_full":
            first = call.args[0].value if call.args and call.args[0].keyword is None else None
            args = [element.value for element in first.elements] if isinstance(first, (cst.Tuple, cst.List)) else None
        elif name in ("new_zeros", "new_ones", "new_empty"):
            args = shape_args(call)
        else:
            return None
        if not args or any(isinstance(arg, cst.StarredElement) for arg in args):
            return None
        if len(args) == 1 and self._holds_shape(args[0]):
            return self._layout_of_shape(args[0])  # `x.new_zeros(x.size())`
        return Layout(len(args), tuple(self._size_code(arg) for arg in args), ())

    def _holds_shape(self, expr: cst.BaseExpression) -> bool:
        """A factory's one size argument that is a whole shape: `x.shape`, `x.size()`, or a name
        holding a tuple of sizes (not one size: `torch.zeros(n)`)."""
        return _is_whole_shape(expr) or isinstance(self.model.memo.get(id(expr)), Sequence)

    def _layout_of_shape(self, shape: cst.BaseExpression) -> Layout | None:
        """The layout of a tensor made with a whole shape (`_holds_shape`), where its sizes are known."""
        held = self.model.memo.get(id(shape))
        if not isinstance(held, Sequence):
            return None
        sizes = tuple(item.code if isinstance(item, Number) else None for item in held.items)
        return Layout(len(sizes), sizes, ())

    def _integers(self, expr: cst.BaseExpression | list | None) -> tuple[int, ...] | None:
        """`2`, `(1, 1, 2, 2)` (or a list of such arguments): the whole numbers written (or known) there."""
        if isinstance(expr, list) or expr is None:
            parts = expr or []
        else:
            parts = [element.value for element in expr.elements] if isinstance(expr, (cst.Tuple, cst.List)) else [expr]
        values = [literal(self._size_code(part)) if part is not None else None for part in parts]
        return tuple(values) if values and None not in values else None

    def _numbers(self, expr: cst.BaseExpression) -> tuple[float, ...] | None:
        """`2.0`, `(2, 2)`: the numbers written (or known) there."""
        parts = [element.value for element in expr.elements] if isinstance(expr, (cst.Tuple, cst.List)) else [expr]
        values = []
        for part in parts:
            value = self.model.memo.get(id(part))
            values.append(_number_value(value.code) if isinstance(value, Number) else None)
        return tuple(values) if values and None not in values else None

    def _input_offset(self, call: cst.Call) -> int:
        """Where an op's own arguments start: after the input in function form (`torch.sum(x, 1)`),
        first for a method (`x.sum(1)`)."""
        return 1 if self.ctx.callee(call) is not None else 0

    def _size_code(self, expr: cst.BaseExpression) -> str:
        """`TensorModel.size_code` of an argument this interpretation has evaluated."""
        return self.model.size_code(expr, self.model.memo.get(id(expr)))

    # Factories and devices ---------------------------------------------------------------

    def _factory(self, call: cst.Call, qualified: str, args) -> Value:
        device = self._explicit_device(call)
        positional = [value for arg, value in args if arg.keyword is None and not arg.star]
        sizes = [arg.value for arg in positional_args(call)]
        scalar: bool | None = False
        layout: Layout | None = None
        if qualified in DATA_FACTORIES:
            data = positional[0] if positional else None
            if qualified == "torch.scalar_tensor" or isinstance(data, Number):
                scalar, layout = True, Layout(0, (), ())
            elif isinstance(data, TensorFacts) and device is None:
                return replace(data, requires_grad=requires_grad_true(call), maybe=False)
            elif isinstance(data, (Sequence, Iterable)) and sizes and isinstance(sizes[0], (cst.List, cst.Tuple, cst.ListComp)):
                scalar = False
                shape = self._literal_shape(sizes[0])  # `torch.tensor([[0, 1], [1, 2]])`
                layout = Layout(len(shape), shape, ()) if shape is not None else None
            elif isinstance(data, TensorFacts):
                return replace(data, device=device, origin=call if device is Device.CPU else None, maybe=False)
            else:
                scalar = None  # a list, an array or a number held in a variable
        elif qualified in SIZE_FACTORIES and not any(arg.star for arg in call.args):
            # (`torch.zeros(n, *weight.shape)` shows no sizes: its layout stays unknown.)
            size_keyword = keyword_arg(call, "size")
            if not sizes and size_keyword is not None:
                sizes = [size_keyword.value]  # `torch.rand(size=(1, 28, 28))`
            if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
                sizes = [element.value for element in sizes[0].elements]
                scalar = False if sizes else True
            if qualified == "torch.full" and sizes and isinstance(sizes[0], (cst.Tuple, cst.List)):
                sizes = [element.value for element in sizes[0].elements] + sizes[1:]  # `torch.full((B,), BOS)`
            if qualified in ("torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"):
                dims = sizes[:-1] if qualified == "torch.full" else sizes
                if len(dims) == 1 and self._holds_shape(dims[0]):
                    layout = self._layout_of_shape(dims[0])  # `torch.zeros(x.size())`
                elif dims and all(isinstance(value, (cst.Integer, cst.Name, cst.Attribute, cst.BinaryOperation, cst.Subscript, cst.Call)) for value in dims):
                    layout = Layout(len(dims), tuple(self._size_code(value) for value in dims), ())
                elif not dims:
                    layout, scalar = Layout(0, (), ()), True
            elif qualified == "torch.randint" and len(sizes) >= 2 and isinstance(sizes[-1], (cst.Tuple, cst.List)):
                dims = [element.value for element in sizes[-1].elements]
                layout = Layout(len(dims), tuple(self._size_code(value) for value in dims), ())
            elif qualified in ("torch.arange", "torch.linspace", "torch.logspace", "torch.randperm", "torch.range"):
                layout = Layout(1, (self._sequence_length(call, qualified),), ())
            elif qualified == "torch.eye":
                layout = Layout(2, None, ())
        elif qualified in LEGACY_CONSTRUCTORS and not sizes:
            scalar = None
        elif qualified in LEGACY_CONSTRUCTORS and len(positional) == 1 and isinstance(positional[0], TensorFacts) \
                and device is None:
            return replace(positional[0], maybe=False)  # `torch.Tensor(t)` aliases `t`, on its device
        elif qualified in LEGACY_CONSTRUCTORS and all(isinstance(value, cst.Integer) for value in sizes):
            # `torch.Tensor(32, 1, 28, 28)`: sizes (Lightning's documented `example_input_array`).
            layout = Layout(len(sizes), tuple(arg_code(self.ctx, value) for value in sizes), ())
        dtype = LEGACY_CONSTRUCTOR_DTYPES[qualified.removeprefix("torch.")] if qualified in LEGACY_CONSTRUCTORS else (
            self._dtype_kwarg(call) or _INTEGER_FACTORIES.get(qualified))
        # `torch.zeros(capacity, 1)`: a column made on purpose, to meet rows of its length as one.
        column = layout is not None and layout.base_sizes is not None and len(layout.base_sizes) == 2 \
            and layout.base_sizes[1] == "1" and layout.base_sizes[0] != "1"
        facts = TensorFacts(layout=layout, scalar=scalar, dtype=dtype, requires_grad=requires_grad_true(call),
                            column_of=call if column else None)
        if device is not None:
            return replace(facts, device=device, origin=call if device is Device.CPU else None)
        return self._on_default_device(call, facts)

    def _literal_shape(self, data: cst.BaseExpression) -> tuple[str, ...] | None:
        """The shape of a list of numbers written out (`[0, 2]`: (2,)), or of a list of such lists
        of one length; None for anything else (a name may hold a list or a tensor)."""
        if not isinstance(data, (cst.List, cst.Tuple)) or not data.elements \
                or any(isinstance(element, cst.StarredElement) for element in data.elements):
            return None
        values = [element.value for element in data.elements]
        if all(isinstance(value, (cst.List, cst.Tuple)) for value in values):
            inner = {self._literal_shape(value) for value in values}
            shape = inner.pop() if len(inner) == 1 else None
            return (str(len(values)), *shape) if shape is not None else None
        if all(isinstance(self.model.memo.get(id(value)), Number) for value in values):
            return (str(len(values)),)
        return None

    def _sequence_length(self, call: cst.Call, qualified: str) -> str | None:
        """How many values `torch.arange(n)` / `torch.randperm(n)` make, `torch.arange(start, end,
        step)` of known whole numbers, `torch.linspace(a, b, steps)`; None where unknown."""
        if qualified in ("torch.linspace", "torch.logspace"):
            steps = argument(call, 2, "steps")
            return self._size_code(steps) if steps is not None else None
        bounds = [arg.value for arg in positional_args(call)]
        if qualified == "torch.range" or not bounds or any(type(bound) is cst.Float for bound in bounds):
            return None  # `torch.range` includes its end; `torch.arange(2.5)` makes 3 values
        if len(bounds) == 1:
            return self._size_code(bounds[0])
        numbers = [literal(self._size_code(bound)) for bound in bounds[:3]]
        if None in numbers:
            return None
        start, end, step = (*numbers, 1)[:3]
        return str(max(0, -(-(end - start) // step))) if step else None

    def _on_default_device(self, call: cst.Call, facts: TensorFacts) -> TensorFacts:
        if self.model.default_device_changed or self._device_context:
            return facts
        return replace(facts, device=Device.DEFAULT, origin=call)

    def _dtype_kwarg(self, call: cst.Call) -> str | None:
        """`uint8` for `dtype=torch.uint8` (the dtype names `.byte()` and the legacy constructors give)."""
        arg = keyword_arg(call, "dtype")
        return self._dtype_name(arg.value) if arg is not None else None

    def _dtype_name(self, expr: cst.BaseExpression) -> str | None:
        return dtype_named(self.ctx.qualified_name(expr))

    def _parameter_values(self, function: cst.FunctionDef, call: cst.Call) -> tuple[dict[str, str], dict]:
        """The literal sizes and the layers (LayerConfig) a call gives the function's parameters
        (by position, keyword or default)."""
        params = function.params
        if any(arg.star for arg in call.args):
            return {}, {}
        positional = [*params.posonly_params, *params.params]
        sizes, layers = {}, {}
        for index, param in enumerate([*positional, *params.kwonly_params]):
            name = param.name.value
            if index < len(positional):
                given = argument(call, index, name)
            else:
                given = getattr(keyword_arg(call, name), "value", None)
            # A default is read as `__init__`'s are (`TensorModel._example_value`): a literal or a
            # module constant.
            default = self.model.examples.integer(param.default) if given is None and param.default is not None else None
            code = self._size_code(given) if given is not None else None if default is None else str(default)
            if literal(code) is not None:
                sizes[name] = code
            layer = getattr(self.model.memo.get(id(given)), "config", None) if given is not None else None
            if layer is not None:
                layers[name] = layer
        return sizes, layers

    def _device_passed(self, call: cst.Call, function: cst.FunctionDef | None) -> Device | None:
        """Where the call's `device=` argument points, also given by position to a helper of the
        file whose parameter it is (`normalize(size, "cpu", dtype)`)."""
        names = [param.name.value for param in function.params.params] if function is not None else []
        if keyword_arg(call, "device") is None and "device" in names and not any(arg.star for arg in call.args):
            given = argument(call, names.index("device"), "device")
            return self._device_of(given) if given is not None else None
        return self._explicit_device(call)

    def _explicit_device(self, call: cst.Call) -> Device | None:
        arg = keyword_arg(call, "device")
        if arg is None:
            return Device.UNKNOWN if any(a.star == "**" for a in call.args) else None
        return self._device_of(arg.value)

    def _device_of(self, expr: cst.BaseExpression) -> Device:
        value = self.model.memo.get(id(expr))
        if isinstance(value, DeviceValue):
            return value.device
        found = self.device_value(expr, value)
        return Device.UNKNOWN if found is None else found

    def device_value(self, expr: cst.BaseExpression, value: Value | None = None) -> Device | None:
        """Where a device argument points (`"cuda"`, `torch.device("cpu")`, `device`, `x.device`)."""
        if isinstance(value, DeviceValue):
            return value.device
        text = string_value(expr)
        if text is not None:
            return device_string_kind(text)
        if isinstance(expr, cst.Integer):
            return Device.ACCELERATOR
        if isinstance(expr, cst.Name) and expr.value == "None":
            return Device.DEFAULT
        if isinstance(expr, cst.Call) and self.ctx.callee(expr) == "torch.device":
            positional = positional_args(expr)
            kind = keyword_arg(expr, "type")
            first = kind.value if kind is not None else (positional[0].value if positional else None)
            found = self.device_value(first, self.model.memo.get(id(first))) if first is not None else None
            return found if found is not None else Device.TARGET
        if isinstance(expr, cst.IfExp):
            if self.device_value(expr.body) is not None or self.device_value(expr.orelse) is not None:
                return Device.ACCELERATOR
            return None
        name = expr.value if isinstance(expr, cst.Name) else (expr.attr.value if isinstance(expr, cst.Attribute) else None)
        if name is not None:
            lowered = name.lower()
            if "device" in lowered or lowered in ("dev", "rank", "local_rank", "gpu", "gpu_id"):
                return Device.TARGET
        return None

    def _is_dtype(self, expr: cst.BaseExpression, value: Value) -> bool:
        if isinstance(value, DtypeValue):
            return True
        name = expr.value if isinstance(expr, cst.Name) else (expr.attr.value if isinstance(expr, cst.Attribute) else None)
        return name is not None and "dtype" in name.lower()

    def _typed(self, call: cst.Call, receiver: TensorFacts) -> TensorFacts:
        """`x.type(torch.FloatTensor)` moves to the CPU, `x.type(torch.cuda.FloatTensor)` to the
        GPU (a tensor type names a device); `x.type(torch.float32)` keeps the device, and
        `x.type(other.type())` takes other's device with its type ('torch.cuda.FloatTensor')."""
        asked = call.args[0].value
        if type(asked) is cst.Call and not asked.args and type(asked.func) is cst.Attribute and asked.func.attr.value == "type":
            other = self.model.memo.get(id(asked.func.value))
            if isinstance(other, TensorFacts):
                return receiver.moved(other.device, origin=other.origin)
            return receiver.moved(Device.UNKNOWN)
        written = self.ctx.qualified_name(asked) or ""
        if written.startswith("torch.cuda.") and written.endswith("Tensor"):
            return receiver.moved(Device.ACCELERATOR)
        if written.startswith("torch.") and written.endswith("Tensor") and written.count(".") == 1:
            return receiver.moved(Device.CPU, origin=call)
        return receiver

    def _move(self, call: cst.Call, name: str, receiver: TensorFacts, args) -> TensorFacts:
        if name == "cuda" or name in ("xpu", "mps"):
            return receiver.moved(Device.ACCELERATOR)
        if name == "cpu":
            return receiver.moved(Device.CPU, origin=call)
        target: Device | None = None
        unknown = False
        for arg, value in args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if arg.star or keyword not in (None, "device", "other", "dtype", "non_blocking", "copy", "memory_format"):
                unknown = True
                continue
            if keyword == "dtype":
                receiver = replace(receiver, dtype=self._dtype_name(arg.value))
            if keyword in ("dtype", "non_blocking", "copy", "memory_format"):
                continue
            if isinstance(value, TensorFacts):
                target = value.device
                continue
            if keyword is None and self._is_dtype(arg.value, value):
                receiver = replace(receiver, dtype=self._dtype_name(arg.value))
                continue
            found = self.device_value(arg.value, value)
            if found is None or found is Device.DEFAULT:
                unknown = True
                continue
            target = found
        if target is not None:
            return receiver.moved(target, origin=call if target is Device.CPU else None)
        if unknown:
            return receiver.moved(Device.UNKNOWN)
        return receiver


# The interpreter's rule for each expression class; any other expression is only walked into.
_EVALUATORS = {
    cst.Name: Interpreter._name,
    cst.Call: Interpreter._typed_call,
    cst.Attribute: Interpreter._attribute,
    cst.BinaryOperation: Interpreter._binary_operation,
    cst.Subscript: Interpreter._subscript,
    cst.Integer: Interpreter._number_literal,
    cst.Float: Interpreter._number_literal,
    cst.Imaginary: Interpreter._number_literal,
    cst.UnaryOperation: Interpreter._unary,
    cst.Comparison: Interpreter._comparison,
    cst.IfExp: Interpreter._conditional,
    cst.SimpleString: Interpreter._string,
    cst.FormattedString: Interpreter._string,
    cst.BooleanOperation: Interpreter._boolean,
    cst.Tuple: Interpreter._display,
    cst.List: Interpreter._display,
    cst.ListComp: Interpreter._comprehension,
    cst.GeneratorExp: Interpreter._comprehension,
    cst.SetComp: Interpreter._comprehension,
    cst.DictComp: Interpreter._comprehension,
    cst.NamedExpr: Interpreter._walrus,
    cst.Lambda: Interpreter._lambda,
}


def _result_sizes(shapes: list, rule: Rule) -> tuple | None:
    """The sizes of `a @ b` (batch dims broadcast, then `(a[-2], b[-1])`) or of an elementwise op
    (broadcast from the right), when every operand's sizes are known."""
    if not shapes or any(shape is None for shape in shapes):
        return None  # a size unknown
    if rule is Rule.ELEMENTWISE and any(shapes):
        # A 0-dim operand (`series.mean()`) broadcasts to any shape: the others give the sizes.
        return _broadcast([shape for shape in shapes if shape])
    if any(not shape for shape in shapes):
        return None  # only 0-dim operands (which the device rules treat apart), or one in a product
    if rule is Rule.MATMUL:
        if len(shapes) != 2:
            return None
        first, second = shapes
        if _differ(first[-1], second[-2] if len(second) >= 2 else second[0]):
            return None  # the product raises (the shape checks report it): nothing follows from it
        if len(second) == 1 and len(first) >= 2:
            return first[:-1]  # a matrix times a vector
        if len(first) == 1 and len(second) >= 2:
            return (*second[:-2], second[-1])
        if min(len(first), len(second)) < 2:
            return None
        batch = _broadcast([first[:-2], second[:-2]])
        return None if batch is None else (*batch, first[-2], second[-1])
    return _broadcast(shapes) if rule is Rule.ELEMENTWISE else None


def _differ(size: str | None, other: str | None) -> bool:
    """Two sizes written as different integers (None: a size unknown)."""
    return size != other and None not in (size, other) and integer(size) is not None and integer(other) is not None


def _broadcast(shapes: list) -> tuple | None:
    rank = max(len(shape) for shape in shapes)
    result = []
    for offset in range(rank, 0, -1):
        sizes = {shape[-offset] for shape in shapes if len(shape) >= offset} - {"1"}
        if len(sizes) > 1:
            return None  # a mismatch (the shape checks report it), or sizes the code does not equate
        result.append(sizes.pop() if sizes else "1")
    return tuple(result)


def _chunked(call: cst.Call, count: int, receiver: TensorFacts) -> Layout | None:
    """Each piece of `x.chunk(count, dim)` of known sizes, where `count` divides that dim."""
    sizes = known_sizes(receiver)
    dim_arg = call.args[1] if len(call.args) > 1 else keyword_arg(call, "dim")
    dim = int_value(dim_arg.value) if dim_arg is not None else 0
    if sizes is None or dim is None or not -len(sizes) <= dim < len(sizes) or receiver.layout.reordered:
        return None
    whole = literal(sizes[dim])
    if whole is None or whole % count:
        return None
    pieces = list(sizes)
    pieces[dim] = str(whole // count)
    return Layout(len(pieces), tuple(pieces), ())


def _split_sizes(call: cst.Call, receiver: TensorFacts) -> list[tuple] | None:
    """The sizes of each piece of `x.split(sizes, dim)` (a list written out) or `x.split(n, dim)`
    (pieces of n, the last one what is left), where the dim's size is a literal."""
    sizes = known_sizes(receiver)
    how, dim_arg = argument(call, 0, "split_size_or_sections"), argument(call, 1, "dim")
    dim = int_value(dim_arg) if dim_arg is not None else 0
    if sizes is None or how is None or dim is None or not -len(sizes) <= dim < len(sizes):
        return None
    dim %= len(sizes)
    whole = literal(sizes[dim])
    if isinstance(how, (cst.List, cst.Tuple)):
        lengths = [int_value(element.value) for element in how.elements]
        if None in lengths or (whole is not None and sum(lengths) != whole):
            return None  # torch raises unless the sections add up: not a shape to go on with
    else:
        step = int_value(how)
        if step is None or step <= 0 or whole is None or -(-whole // step) > 16:
            return None
        lengths = [min(step, whole - start) for start in range(0, whole, step)]
    return [(*sizes[:dim], str(length), *sizes[dim + 1:]) for length in lengths]


def _inferred(wanted: tuple[str, ...], have: tuple[str | None, ...] | None) -> tuple[str, ...]:
    """The `-1` of `view(B, T, 4, -1)` worked out where every other size is a literal."""
    if "-1" not in wanted:
        return wanted
    total = math.prod(literal(size) or 0 for size in have) if have is not None else 0
    rest = math.prod(literal(size) or 0 for size in wanted if size != "-1")
    if total == 0 or rest == 0 or total % rest or wanted.count("-1") > 1:
        return tuple(None if size == "-1" else size for size in wanted)  # some size, not the symbol -1
    return tuple(str(total // rest) if size == "-1" else size for size in wanted)


# In the per-element bounds of a subscript: an index whose value is a known Python number.
_NUMBER_INDEX: tuple[int | None, int | None] = tuple([None, None])  # compared by identity


def _indexed_sizes(node: cst.Subscript, receiver: TensorFacts, bounds: list[tuple[int | None, int | None] | None],
                   tensor_indexes: list[TensorFacts | None]) -> Layout | None:
    """`h_n[-1]`, `out[:, -1]`, `x[0, :, None]`, `x[i]` of a tensor of known sizes: an integer
    (written, or a number the facts know: `_NUMBER_INDEX` in `bounds`) drops its dim, `:` keeps
    it, `None` adds a 1; a slice whose bounds are known integers (`bounds`, per element) keeps
    what Python's slicing keeps, clamped to the size (`pos[:, :T]` with T = 24 of a dim of 16
    keeps 16), any other bounded slice makes the size unknown. One integer tensor of known sizes
    (`tensor_indexes`, per element) puts its sizes in place of its dim: `centers[labels]` of a
    (3, 8) table and (60,) labels is (60, 8)."""
    sizes = known_sizes(receiver)
    if sizes is None or any(isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.Ellipsis)
                            for element in node.slice):
        return None
    if sum(index is not None for index in tensor_indexes) > 1:
        return None  # several index tensors broadcast together
    kept: list[str | None] = []
    position = 0
    for element, bound, tensor_index in zip(node.slice, bounds, tensor_indexes):
        index = element.slice
        if isinstance(index, cst.Slice):
            if position >= len(sizes):
                return None
            whole = index.lower is None and index.upper is None and index.step is None
            kept.append(sizes[position] if whole else sliced_size(sizes[position], bound))
            position += 1
        elif isinstance(index.value, cst.Name) and index.value.value == "None":
            kept.append("1")
        elif (int_value(index.value) is not None or bound is _NUMBER_INDEX) and position < len(sizes):
            position += 1
        elif _integer_tensor(tensor_index) and known_sizes(tensor_index) is not None and position < len(sizes):
            kept.extend(known_sizes(tensor_index))
            position += 1
        else:
            return None
    kept.extend(sizes[position:])
    return Layout(len(kept), tuple(kept), ())


# Operators on Python numbers whose result the size arithmetic may need (`int(RATE * 0.5)`).
_FLOAT_OPERATORS = {cst.Add: float.__add__, cst.Subtract: float.__sub__, cst.Multiply: float.__mul__,
                    cst.Divide: float.__truediv__}
# Larger numbers are no size, and a float past this loses whole units.
_LARGEST_EXACT = 2 ** 52


def _number_value(code: str | None) -> float | None:
    """The value of a number written as a literal (`"0.5"`, `"22050"`), else None."""
    try:
        value = float(code) if code is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and abs(value) < _LARGEST_EXACT else None


def _float_arithmetic(operator: cst.BaseBinaryOp, left: float | None, right: float | None) -> float | None:
    """`left <operator> right` on numbers as Python computes it with a float among them
    (`22050 * 0.5` is 11025.0); None for other operators and a division by zero."""
    compute = _FLOAT_OPERATORS.get(type(operator))
    if left is None or right is None or compute is None or (right == 0 and isinstance(operator, cst.Divide)):
        return None
    result = compute(float(left), float(right))
    if not math.isfinite(result) or abs(result) >= _LARGEST_EXACT:
        return None
    return result


def _einsum_sizes(equation: str, shapes: list) -> tuple | None:
    """The output sizes of an einsum equation without `...` (`"bhqd,bhkd->bhqk"`), each letter's
    size read off an operand of known sizes (a size of 1 broadcasts: another one wins)."""
    inputs, output = equation.replace(" ", "").split("->", 1)
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        return None
    bound: dict[str, str | None] = {}
    for term, shape in zip(terms, shapes):
        if shape is None or len(shape) != len(term):
            continue
        for letter, size in zip(term, shape):
            if bound.get(letter) in (None, "1"):
                bound[letter] = size
    sizes = tuple(bound.get(letter) for letter in output)
    return sizes if any(size is not None for size in sizes) else None


def _integer_tensor(value: TensorFacts | None) -> bool:
    """A tensor of indices (`torch.randint`, `.long()`): not a mask, which keeps a count only the data knows."""
    return value is not None and (value.dtype or "").startswith(("int", "uint"))


def _length_of(iterated_node: cst.BaseExpression, iterated: Value) -> str | None:
    """How many elements iterating gives: a tensor's first size, a tuple's items, `range(n)`."""
    if isinstance(iterated, TensorFacts):
        sizes = known_sizes(iterated)
        return sizes[0] if sizes else None
    if isinstance(iterated, Sequence):
        return str(len(iterated.items))
    if isinstance(iterated, Iterable):
        return iterated.length
    if isinstance(iterated_node, cst.Call) and dotted_name(iterated_node.func) == "range" and len(iterated_node.args) == 1:
        count = int_value(iterated_node.args[0].value)
        return str(count) if count is not None and count >= 0 else None
    return None


def _known_int(expression: cst.BaseExpression | None, value: Value | None) -> int | None:
    """An integer written as one, or a number whose value the facts know (`T` of `B, T = x.shape`)."""
    if expression is None:
        return None
    written = int_value(expression)
    if written is not None:
        return written
    return literal(value.code) if isinstance(value, Number) else None


# Factories whose tensors are int64 unless `dtype=` says otherwise.
_INTEGER_FACTORIES = {"torch.randint": "int64", "torch.randperm": "int64"}


def _activations_of(value: Value) -> Value:
    """What a method of another object returns, as its caller may use it: the tensors it returns
    and the activation they hold (their devices are the object's, not the caller's)."""
    if isinstance(value, TensorFacts):
        return TensorFacts(scalar=value.scalar, maybe=value.maybe, activation=value.activation,
                           activated_by=value.activated_by)
    if isinstance(value, Sequence):
        return Sequence(tuple(_activations_of(item) for item in value.items))
    return UNKNOWN


def _batched(item: Value, batch: str) -> TensorFacts:
    """A DataLoader batch of dataset items: on the CPU as loaded when the items are; `batch`
    rows of an item's known sizes (the first batch, which is full), of the items' dtype (the
    default collation stacks them)."""
    rows = known_sizes(item)
    layout = Layout(len(rows) + 1, (batch, *rows), ()) if rows is not None else None
    dtype = item.dtype if isinstance(item, TensorFacts) else None
    if isinstance(item, TensorFacts) and item.device.follows_input:
        return TensorFacts(device=item.device, scalar=False, layout=layout, dtype=dtype)
    if isinstance(item, TensorFacts) and item.device not in (Device.DEFAULT, Device.CPU):
        return TensorFacts(scalar=False, layout=layout, dtype=dtype)
    return TensorFacts(device=Device.DEFAULT, scalar=False, loaded=True, layout=layout, dtype=dtype)


def _row(value: Value) -> Value:
    """One item of a `TensorDataset` over `value`: its sizes after the first."""
    sizes = known_sizes(value)
    row = element_of(value)
    return replace(row, layout=Layout(len(sizes) - 1, sizes[1:], ())) if sizes and isinstance(row, TensorFacts) else row


def _is_whole_shape(expr: cst.BaseExpression) -> bool:
    """`x.shape` or `x.size()`: a tensor's whole shape, whatever is known of it."""
    if type(expr) is cst.Attribute:
        return expr.attr.value == "shape"
    return type(expr) is cst.Call and not expr.args and type(expr.func) is cst.Attribute and expr.func.attr.value == "size"


def _passed(args) -> tuple | None:
    """A call's arguments as `((keyword or None, value), ...)`; None where `*args` or `**kwargs`
    may pass more."""
    if any(arg.star for arg, _ in args):
        return None
    return tuple((arg.keyword.value if arg.keyword is not None else None, value) for arg, value in args)


def _known_layout(value: Value | None) -> Layout | None:
    """The layout of a tensor whose sizes are known, else None."""
    return value.layout if isinstance(value, TensorFacts) and known_sizes(value) else None


def _fresh_layout(facts: TensorFacts) -> Layout:
    """A new contiguous tensor of the sizes of `facts` (of its rank where they are unknown)."""
    sizes = known_sizes(facts)
    return Layout(len(sizes), sizes, ()) if sizes is not None else Layout(facts.rank, None, ())


def _as_matrix(layout: Layout) -> Layout:
    """`.t()` and `.T` are written for matrices (on a vector they do nothing): a base of unknown
    rank that they reorder is taken as 2-D."""
    if layout.base_rank is None and not layout.ops:
        return Layout(2, None, (), layout.unit_sizes_likely)
    return layout


def _expression_children(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The expressions directly inside a node the interpreter has no rule for (f-strings, dicts...)."""
    found = []
    pending = list(child_nodes(node))
    while pending:
        child = pending.pop(0)
        if isinstance(child, cst.BaseExpression):
            found.append(child)
        elif not isinstance(child, (cst.BaseSuite, cst.BaseStatement)):
            pending.extend(child_nodes(child))
    return found


# Tensor methods that change the receiver's shape in place.
_RESHAPING_IN_PLACE = frozenset({
    "unsqueeze_", "squeeze_", "transpose_", "t_", "swapaxes_", "swapdims_", "resize_", "resize_as_", "as_strided_",
})


# The joins whose result sizes follow from their operands' and the `dim` argument.
_JOINS = frozenset({"cat", "concat", "concatenate", "stack"})


def _joined_sizes(call: cst.Call, name: str, operands: list) -> tuple[str | None, ...] | None:
    """The sizes of `torch.cat` / `torch.stack` of a list written out (`[a, b]`) or a comprehension
    (`operands` then holds its element's sizes once per element) whose tensors' sizes are known: cat adds up the sizes along `dim` (literals only), stack puts the count of
    tensors there; each other dim is the size the operands agree on (None where it is unknown)."""
    written = argument(call, 0, "tensors")
    dim = int_value(argument(call, 1, "dim") or cst.Integer("0"))
    if isinstance(written, (cst.List, cst.Tuple)):
        if len(operands) != len(written.elements) or any(isinstance(element, cst.StarredElement)
                                                         for element in written.elements):
            return None
    elif not isinstance(written, (cst.ListComp, cst.GeneratorExp)):
        return None
    if dim is None or not operands or None in operands or len({len(sizes) for sizes in operands}) != 1:
        return None
    rank = len(operands[0]) + (name == "stack")
    position = dim + rank if dim < 0 else dim
    if not 0 <= position < rank:
        return None
    shared = [_agreed(column) for column in zip(*operands)]
    if name == "stack":
        return (*shared[:position], str(len(operands)), *shared[position:])
    along = [literal(size) for size in (sizes[position] for sizes in operands)]
    shared[position] = str(sum(along)) if None not in along else None
    return tuple(shared)


def _agreed(sizes: tuple[str | None, ...]) -> str | None:
    """The one size a dim of several tensors has, as the code gives it (a literal over a symbol)."""
    literals = {size for size in sizes if literal(size) is not None}
    if len(literals) == 1:
        return literals.pop()
    return sizes[0] if not literals and len(set(sizes)) == 1 else None


# The floating dtypes, which a 0-dim operand of a real dtype does not change.
_FLOATING = frozenset({"float64", "float32", "float16", "bfloat16"})


def _promoted_dtype(facts: list[TensorFacts]) -> str | None:
    """The dtype of an elementwise result: the operands' common one, or, as torch promotes, that
    of the operands with dimensions when they share a floating one and the others are 0-dim real
    values (a float64 schedule divided by a 0-dim float32 tensor stays float64)."""
    if all(value.dtype == facts[0].dtype for value in facts):
        return facts[0].dtype
    dimensioned = {value.dtype for value in facts if value.scalar is not True}
    if len(dimensioned) != 1 or not dimensioned <= _FLOATING:
        return None
    zero_dim = [value.dtype for value in facts if value.scalar is True]
    return None if any(dtype is not None and dtype.startswith("complex") for dtype in zero_dim) else dimensioned.pop()


def _device_defaults_to_none(call: cst.Call, function: cst.FunctionDef | None) -> bool:
    """The helper's `device` parameter defaults to None, and the call, passing no device
    (`_device_passed` found none), passes no `*args` that could hold one either."""
    params = function.params.params if function is not None else ()
    param = next((param for param in params if param.name.value == "device"), None)
    return param is not None and is_constant_none(param.default) and not any(arg.star for arg in call.args)


def _asserted_rank(test: cst.BaseExpression) -> tuple[str, int] | None:
    """(`x`, 2) for `x.dim() == 2`, `x.ndim == 2`, `x.ndimension() == 2`, `len(x.shape) == 2`,
    also written `2 == ...`."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.Integer):
        left, right = right, left
    if not isinstance(right, cst.Integer):
        return None
    measured = _rank_of(left)
    return (measured, int(right.value)) if measured is not None else None


def _rank_of(expr: cst.BaseExpression) -> str | None:
    """The name whose rank `expr` measures: `x.dim()`, `x.ndimension()`, `x.ndim`, `len(x.shape)`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args \
            and expr.func.attr.value in ("dim", "ndimension"):
        measured = expr.func.value
    elif isinstance(expr, cst.Attribute) and expr.attr.value == "ndim":
        measured = expr.value
    elif isinstance(expr, cst.Call) and is_name(expr.func, "len") and len(expr.args) == 1 \
            and isinstance(expr.args[0].value, cst.Attribute) and expr.args[0].value.attr.value == "shape":
        measured = expr.args[0].value.value
    else:
        return None
    return measured.value if isinstance(measured, cst.Name) else None
