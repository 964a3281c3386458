from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.module_attributes import registration_of, self_attribute
from torchlint.analysis.names import (
    SEQUENCE_TYPE_NAMES, annotation_words, dotted_name, is_name, keyword_arg, method_name, method_receiver,
    parameter_named, positional_args, suite_statements,
)
from torchlint.analysis.shape_checks import brief_code
from torchlint.analysis.tensor_facts.domain import Device
from torchlint.analysis.tensors import LEGACY_CONSTRUCTOR_DTYPES, PARAMETER_CLASSES
from torchlint.analysis.torch_api import torch_module_name
from torchlint.analysis.values import device_string_kind, string_value
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule
from torchlint.walker import every_node, nodes_in_order

_CONSTRUCTORS = {
    f"{module}.{name}": (name, module == "torch.cuda")
    for module in ("torch", "torch.cuda")
    for name in LEGACY_CONSTRUCTOR_DTYPES
    if not (module == "torch.cuda" and name == "Tensor")
}


# `FloatTensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`: a constructor named, not called.
_ALIAS_TEXT = re.compile(r"=[^=\n]*\b\w*Tensor\b(?!\s*\()")

# In-place methods that overwrite every element of a freshly allocated tensor.
_INITIALISERS = frozenset(
    {"uniform_", "normal_", "zero_", "fill_", "copy_", "random_", "bernoulli_", "exponential_",
     "geometric_", "cauchy_", "log_normal_"}
)


def _is_int_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer)


def _is_size(expr: cst.BaseExpression) -> bool:
    """An expression that can be a dimension size (`4`, `n`, `config.hidden_size`, `2 * d`,
    `len(batch)`), not data (a list, a tuple, a call that returns an array)."""
    if isinstance(expr, cst.BinaryOperation):
        return _is_size(expr.left) and _is_size(expr.right)
    if isinstance(expr, cst.Call):  # `len(batch)`, or `x.size()`: the whole shape
        return dotted_name(expr.func) == "len" or (method_name(expr) == "size" and not expr.args)
    return isinstance(expr, (cst.Integer, cst.Name, cst.Attribute, cst.Subscript))


class LegacyTensorConstructor(Rule):
    """
    ## What it does
    Flags calls of the legacy constructors `torch.Tensor(...)`, `torch.FloatTensor(...)`,
    `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` and their kin with arguments, also
    through a name assigned one (`FloatTensor = torch.FloatTensor`, or
    `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`).

    ## Why is this bad?
    The legacy constructors guess what their arguments mean. Integers are taken as a shape:
    `torch.Tensor(3)` is a tensor of three *uninitialized* floats, not the number 3, and its
    garbage values silently flow into the computation. A tensor argument is aliased rather than
    copied, and `torch.Tensor` always produces the default float dtype, whatever the data.

    ## Example
    ```python
    scale = torch.Tensor(3)            # three uninitialized floats
    weights = torch.Tensor([1, 2, 3])  # floats of the default dtype, though the data are ints
    ```

    ## Use instead
    ```python
    scale = torch.tensor(3.0)          # the number 3
    buffer = torch.empty(3)            # explicitly uninitialized, if that is what was meant
    weights = torch.tensor([1.0, 2.0, 3.0])
    ```

    ## Fix safety
    Integer arguments are ambiguous: `torch.Tensor(3)` may be a shape or a botched value, and
    turning it into `torch.empty(3)` would keep the uninitialized memory and silence the warning.
    So integers get no fix, and the message shows both replacements, unless the code shows a
    shape to be filled: inside `nn.Parameter(...)`, or followed by an in-place initialiser
    (`torch.Tensor(n).uniform_()`, or `w = torch.Tensor(n, m)` whose first use is `w.normal_()`
    or `nn.init.xavier_uniform_(w)`), or by a loop that stores each element. There the fix to
    `torch.empty(...)` is safe: identical behaviour, now explicit. A list or tuple argument is
    data, and the fix keeps its dtype: `torch.LongTensor([1, 2])` becomes
    `torch.tensor([1, 2], dtype=torch.int64)`, and `torch.Tensor([1, 2])`, whose dtype is the
    default one (float64 after `torch.set_default_dtype(torch.float64)`, as in code that calls a
    library), becomes `torch.tensor([1, 2], dtype=torch.get_default_dtype())`, or
    `torch.tensor([0.5, 1])` where a float literal already makes `torch.tensor` infer that dtype. A
    constructor called through an alias (`Tensor = torch.cuda.FloatTensor if cuda else
    torch.FloatTensor`) and other argument forms get no fix.

    ## Severity
    An error where the call passes `device=` anything but the CPU
    (`torch.LongTensor(ids, device=x.device)`): the legacy constructors allocate on the CPU only,
    and raise "legacy constructor expects device type: cpu" for any other device, so the code fails
    as soon as it runs on the accelerator it was written for. A warning where the code shows the
    arguments are misread: integers, or a number (a parameter annotated `int`, `len(...)`, a
    function that returns `-> int`), that are not shown to be a shape to fill; sizes allocated and
    not filled before use; a tensor, which `torch.Tensor(t)` returns as it is (same storage, dtype
    and device: no copy, no conversion) and a typed constructor (`torch.FloatTensor(t)`) shares, or
    raises for any tensor but a CPU one of its dtype.

    Where the code shows what it means, or does not show it at all, the legacy constructor works as
    intended in most code and the finding is a hint (a newer spelling of the same code, reported only
    under `show-hints = true` or `--show-hints`, and in the editor):
    - a shape filled before any read: `nn.Parameter(torch.Tensor(n, m))` then `reset_parameters()`,
      `nn.init.zeros_(torch.Tensor(n, m))`, `torch.LongTensor(len(batch), T).zero_()`, or
      `mask = torch.FloatTensor(*shape)` in an `if` whose next use, after it, is `mask.uniform_()`,
      or `lengths = torch.LongTensor(len(batch))` then a loop whose first use stores the element
      its variable indexes (`for i in range(n): lengths[i] = mel.size(1)`, Tacotron2's collate);
    - a shape whose first use fills a part of it (`padded.narrow(1, top, h).copy_(img)`,
      `padded[:, :top].copy_(...)`), or stores the elements of nested loops (`for i in ...: for j
      in ...: out[j, i, :] = ...`, MATLAB's `imresize` ported);
    - a shape never read, kept for its dtype and device: fairseq's
      `self.register_buffer("_float_tensor", torch.FloatTensor(1))` (or `self._pe = ...`), which
      the class uses only as `x.type_as(self._float_tensor)`, `x.to(self._pe)` or `.device`;
    - values given as a list (`torch.LongTensor([1, 2])`, a list comprehension, `list(...)`,
      `range(...)`, `sorted(...)`, `.tolist()`, a list repeated as `[1.0] * n`, a name assigned one, a
      parameter annotated or defaulted as a sequence, an entry of a dict the function fills with
      lists, `defaultdict(list)` or `d[k] += list(...)`, and the values its `.items()` walks), or a
      NumPy array (shared when its dtype matches, as `torch.as_tensor` shares it);
    - a floating tensor no one else holds, which `torch.Tensor` returns unchanged
      (`torch.Tensor(torch.randn(n))`, `qs = torch.Tensor(qs)`, also where a helper made `qs` with
      `torch.Tensor(data)`, whose default dtype is always a floating one);
    - one argument of a kind the code does not show (`torch.FloatTensor(obs)`): in most code it is
      data, converted as intended; the hint says what it would be if it were an integer or a tensor.
    A whole shape such as `x.size()` counts as integers. A storage
    (`torch.ByteTensor(torch.ByteStorage.from_buffer(buffer))`, `t.untyped_storage()`) is neither: a
    hint that names `torch.frombuffer(buffer, dtype=torch.uint8)` or `.set_(storage)`. A
    `torch.cuda.*Tensor` call is never a hint: torch warns at every such call since 2.1.

    Bug left in place: the `torch.empty` fix keeps uninitialized memory, which is why it is offered
    only where the code fills it. Computation changed: no. One difference remains, on purpose:
    under `torch.set_default_device(...)` or inside `with torch.device("meta"):` the legacy
    constructors still allocate on the CPU, while `torch.empty` and `torch.tensor` follow the
    default device as every other factory (and `nn.Linear`'s weights) do.
    """

    code = "TL102"
    name = "legacy-tensor-constructor"
    summary = "Legacy tensor constructor: integer arguments become a shape of uninitialized memory"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Only a file that assigns a constructor without calling it can call one through an alias.
        self._may_alias = _ALIAS_TEXT.search(ctx.source) is not None

    def visit_Call(self, node: cst.Call) -> None:
        if not node.args:
            return
        constructor = self._constructor(node.func)
        if constructor is None:
            return
        name, on_cuda, aliased = constructor
        written = self.ctx.code_for(node.func)
        if not on_cuda and (device := self._device_off_the_cpu(node)) is not None:
            message = (
                f"`{written}(..., device={self.ctx.code_for(device)})` raises for every device but the CPU "
                "(legacy constructor expects device type: cpu); use `torch.tensor(..., device=...)` for data or "
                "`torch.empty(..., device=...)` for a shape"
            )
            self.report(node, message, severity=Severity.ERROR)
            return
        plain = all(not arg.keyword and not arg.star for arg in node.args)
        shape_fix = None if aliased or not plain else self._shape_fix(node, name, on_cuda)
        # A `device=` still here names the CPU, where the constructor allocates anyway: one value.
        one_value = len(node.args) == 1 and plain or len(node.args) == 2 and not node.args[0].keyword \
            and not node.args[0].star and keyword_arg(node, "device") is not None
        # Two sizes or an unpacked shape can only be a shape; one size may be data.
        shape_given = any(arg.star for arg in node.args) or len(positional_args(node)) >= 2
        sizes = all(_is_size(arg.value) and not self.ctx.kinds.is_tensor(arg.value) for arg in node.args)
        if not aliased and (sizes or shape_given) and self._filled_as_shape(node):
            message = (
                f"`{written}(...)` allocates uninitialized memory of that shape through a legacy constructor; "
                "say so with `torch.empty(...)`"
            )
            self._report(node, message, on_cuda, Severity.HINT, fix=shape_fix)
        elif not aliased and sizes and (held := self._kept_for_dtype_and_device(node)) is not None:
            message = (
                f"`{written}(...)` allocates uninitialized memory that `self.{held}` keeps only for its dtype and "
                "device, its values never read; say so with `torch.empty(...)`"
            )
            self._report(node, message, on_cuda, Severity.HINT, fix=shape_fix)
        elif plain and all(_is_int_literal(arg.value) for arg in node.args):
            shape, values = self._replacements(node, name, on_cuda)
            self.report(
                node,
                f"`{written}(...)` with integers allocates uninitialized memory of that shape, not a tensor of "
                f"those values; use `{shape}` (or `torch.zeros`) for a shape, `{values}` for values",
            )
        elif one_value and (storage := self._storage(node.args[0].value)) is not None:
            self._report(node, self._storage_message(written, name, storage), on_cuda, Severity.HINT)
        elif one_value and self._holds_values(node.args[0].value):
            # A NumPy array of the constructor's dtype is shared, not copied: as `torch.as_tensor` does.
            same = "torch.as_tensor" if self._numpy_array(node.args[0].value) else "torch.tensor"
            message = (
                f"`{written}(...)` builds a tensor of these values through a legacy constructor; "
                f"`{same}(..., dtype=...)` says the same"
            )
            fix = None if aliased else self._data_fix(node, name, on_cuda)
            self._report(node, message, on_cuda, Severity.HINT, fix=fix)
        elif one_value:
            message, severity = self._single_value_message(written, name, on_cuda, node.args[0].value)
            self._report(node, message, on_cuda, severity)
        elif shape_given:
            message = (
                f"`{written}(...)` with sizes allocates uninitialized memory of that shape; fill it before use, "
                "and say so with `torch.empty(...)` (or `torch.zeros(...)`)"
            )
            self.report(node, message)
        else:
            message = (
                f"`{written}(...)` is a legacy constructor (integers become a shape, tensors are aliased); "
                "use `torch.tensor(...)` for data or `torch.empty(...)` for a shape"
            )
            self.report(node, message, fix=None if aliased else self._data_fix(node, name, on_cuda))

    def _report(self, node: cst.Call, message: str, on_cuda: bool, severity: Severity, fix=None) -> None:
        """Report; a `torch.cuda.*Tensor` call is never a mere spelling: it warns at every call."""
        if on_cuda and severity is Severity.HINT:
            message += " (and `torch.cuda.*Tensor` constructors warn at every call since torch 2.1)"
            severity = Severity.WARNING
        self.report(node, message, fix=fix, severity=severity)

    def _single_value_message(self, written: str, name: str, on_cuda: bool,
                              arg: cst.BaseExpression) -> tuple[str, Severity]:
        """What `torch.FloatTensor(x)` does with the one argument the code shows the kind of, and how
        much that matters: a number becomes a shape and a tensor is shared (warnings); a value of a
        kind the code does not show is data in most code, converted as intended (a hint)."""
        shown = brief_code(self.ctx, arg, limit=30)
        dtype = LEGACY_CONSTRUCTOR_DTYPES.get(name)
        if self.ctx.kinds.is_number(arg):
            return (f"`{written}({shown})` of a number allocates that many uninitialized elements (a shape), not a "
                    f"tensor holding the number; use `torch.tensor({shown})` for the value, `torch.empty({shown})` "
                    "for a shape"), Severity.WARNING
        if not self._shown_tensor(arg):
            return (f"`{written}({shown})` converts data through a legacy constructor (were it an integer, it would "
                    "be a shape; a tensor, shared); `torch.tensor(..., dtype=...)` says it is data"), Severity.HINT
        if dtype is not None:
            device = "CUDA" if on_cuda else "CPU"
            return (f"`{written}({shown})` of a tensor raises unless it is already a {device} {dtype} tensor, and "
                    f"then shares its storage rather than copying; use `.to(torch.{dtype})` (and `.clone()` for a "
                    "copy)"), Severity.WARNING
        if self._nothing_else_holds(arg):
            return (f"`{written}({shown})` returns that tensor itself (no copy, no conversion to the default "
                    "dtype), which nothing else holds; drop the call"), Severity.HINT
        return (f"`{written}({shown})` of a tensor returns a tensor sharing its storage, dtype and device, not a copy "
                "in the default dtype; use `.clone()` for a copy, `.float()` for a conversion"), Severity.WARNING

    def _shown_tensor(self, arg: cst.BaseExpression) -> bool:
        """A tensor by what made it or an annotation; not a parameter known only by how it is used
        (`integers.shape[0]`), which a NumPy array, converted as data, is used alike."""
        if not self.ctx.kinds.is_tensor(arg):
            return False
        function = self.ctx.enclosing_function()
        if not isinstance(arg, cst.Name) or function is None or self._resolved(arg) is not arg:
            return True
        parameter = parameter_named(function, arg.value)
        return parameter is None or parameter.annotation is not None

    def _nothing_else_holds(self, tensor: cst.BaseExpression) -> bool:
        """A floating tensor that `torch.Tensor(...)` shares with no one: a temporary
        (`torch.Tensor(torch.randn(n))`), or a name the statement rebinds (`qs = torch.Tensor(qs)`)."""
        facts = self.ctx.kinds.tensor(tensor)
        if facts is None or not self._floating(facts):
            return False
        if isinstance(tensor, cst.Call):
            return True
        assignment = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        return isinstance(assignment, cst.Assign) and len(assignment.targets) == 1 \
            and dotted_name(assignment.targets[0].target) == dotted_name(tensor) is not None

    def _floating(self, facts) -> bool:
        """The tensor has a floating dtype: known, or made by a factory whose default dtype is one."""
        if facts.dtype is not None:
            return facts.dtype.startswith(("float", "bfloat"))
        origin = facts.origin
        return origin is not None and self.ctx.callee(origin) in _FLOAT_FACTORIES \
            and keyword_arg(origin, "dtype") is None

    def _device_off_the_cpu(self, node: cst.Call) -> cst.BaseExpression | None:
        """The `device=` argument, unless it names the CPU (`"cpu"`, `torch.device("cpu")`, or a
        name assigned one): a legacy constructor allocates on the CPU and raises for any other."""
        arg = keyword_arg(node, "device")
        if arg is None:
            return None
        value = self._resolved(arg.value)
        if isinstance(value, cst.Call) and self.ctx.qualified_name(value.func) == "torch.device" and value.args:
            value = self._resolved(value.args[0].value)
        text = string_value(value)
        return None if text is not None and device_string_kind(text) is Device.CPU else arg.value

    def _resolved(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        return self.ctx.kinds.resolve(expr) if isinstance(expr, cst.Name) else expr

    def _storage(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The call that made a storage (`torch.ByteStorage.from_buffer(buffer)`, `t.untyped_storage()`)
        that `expr` is, or is a name assigned: a tensor on it is neither a shape nor a copy of data."""
        value = self._resolved(expr)
        if not isinstance(value, cst.Call):
            return None
        callee = self.ctx.callee(value) or ""
        made = callee.startswith("torch.") and any(part.endswith("Storage") for part in callee.split(".")[1:])
        return value if made or method_name(value) in _STORAGE_METHODS else None

    def _storage_message(self, written: str, name: str, storage: cst.Call) -> str:
        message = f"`{written}(storage)` makes a tensor on a storage through a legacy constructor; "
        dtype = LEGACY_CONSTRUCTOR_DTYPES.get(name)
        if method_name(storage) == "from_buffer" and storage.args and dtype is not None:
            buffer = self.ctx.code_for(storage.args[0].value)
            return message + (f"`torch.frombuffer({buffer}, dtype=torch.{dtype})` makes the same tensor from the "
                              "buffer (a writable one: `bytearray(...)` of `bytes`)")
        return message + "`torch.empty(0, dtype=...).set_(storage)` says the same"

    def _holds_values(self, expr: cst.BaseExpression) -> bool:
        """A list of values, neither sizes nor a tensor: a list or tuple display, a list
        comprehension, `list(...)`, `tuple(...)`, `range(...)`, `x.tolist()`, a NumPy array
        (`np.vstack(...)`), a name assigned one of these, or a parameter annotated as a sequence
        or with one for its default (`std: tuple[float, ...] = (58.4, 57.1, 57.4)`)."""
        value = self._resolved(expr)
        if isinstance(value, (cst.List, cst.Tuple, cst.ListComp)) or self._numpy_array(expr):
            return True
        if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
            return self._dict_of_lists(value.value.value)
        if isinstance(value, cst.Name):
            words = annotation_words(self.ctx.enclosing_function(), value.value)
            if words is not None:
                return bool(words & SEQUENCE_TYPE_NAMES)
            return self._sequence_default(value.value) or self._value_of_dict_of_lists(value.value)
        return _makes_list(value)

    def _dict_of_lists(self, name: str) -> bool:
        """`name` is a dict whose values the function shows to be lists: made as
        `defaultdict(list)` (or `defaultdict(lambda: [])`), or its entries extended with lists
        (`indices[key] += list(range(...))`, `indices[key].append(i)`)."""
        function = self.ctx.enclosing_function()
        if function is None:
            return False
        for node in nodes_in_order(function):
            if isinstance(node, cst.Assign) and any(is_name(target.target, name) for target in node.targets) \
                    and isinstance(node.value, cst.Call) and _makes_list_factory(node.value):
                return True
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Subscript) \
                    and is_name(node.target.value, name) and _makes_list(node.value):
                return True
            if isinstance(node, cst.Call) and method_name(node) in ("append", "extend") \
                    and isinstance(node.func.value, cst.Subscript) and is_name(node.func.value.value, name):
                return True
        return False

    def _value_of_dict_of_lists(self, name: str) -> bool:
        """`name` walks the values of a dict of lists: `for key, indices in by_name.items():`."""
        for loop in self.ctx.ancestors:
            if not (isinstance(loop, cst.For) and isinstance(loop.iter, cst.Call)):
                continue
            walked = method_name(loop.iter)
            target = loop.target
            value = target.elements[-1].value if walked == "items" and isinstance(target, cst.Tuple) \
                and len(target.elements) == 2 else target if walked == "values" else None
            receiver = loop.iter.func.value
            if is_name(value, name) and isinstance(receiver, cst.Name) and self._dict_of_lists(receiver.value):
                return True
        return False

    def _numpy_array(self, expr: cst.BaseExpression) -> bool:
        """`np.vstack(...)`, a name assigned one, or a parameter annotated `np.ndarray`."""
        value = self._resolved(expr)
        if isinstance(value, cst.Call):
            return (self.ctx.qualified_name(value.func) or "").startswith("numpy.")
        return isinstance(value, cst.Name) and "ndarray" in (annotation_words(self.ctx.enclosing_function(), value.value) or ())

    def _sequence_default(self, name: str) -> bool:
        function = self.ctx.enclosing_function()
        param = parameter_named(function, name) if function is not None else None
        return param is not None and isinstance(param.default, (cst.List, cst.Tuple))

    def _constructor(self, func: cst.BaseExpression) -> tuple[str, bool, bool] | None:
        """(constructor name, on CUDA, reached through an alias) for the called expression:
        `torch.FloatTensor`, or a name assigned one (`Tensor = torch.cuda.FloatTensor if cuda
        else torch.FloatTensor`, where the first branch names it)."""
        found = _CONSTRUCTORS.get(self.ctx.qualified_name(func) or "")
        if found is not None:
            return (*found, False)
        if not isinstance(func, cst.Name) or not self._may_alias:
            return None
        value = self.ctx.kinds.resolve(func)
        branches = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        constructors = [_CONSTRUCTORS.get(self.ctx.qualified_name(branch) or "") for branch in branches]
        if value is func or None in constructors:
            return None
        return (*constructors[0], True)

    def _filled_as_shape(self, node: cst.Call) -> bool:
        """The code shows the integers are a shape to be filled: `nn.Parameter(torch.Tensor(n, m))`,
        `nn.init.zeros_(torch.Tensor(n, m))`, `torch.Tensor(n).uniform_(...)`, or `w = torch.Tensor(n, m)`
        whose first use, in its block or after the `if` that holds it, is an in-place initialiser
        (`w.normal_()`, `nn.init.xavier_uniform_(w)`, `mask = mask.uniform_() > p`). A conversion
        on the way (`torch.Tensor(*size).to(torch.float32)`) changes none of that."""
        ancestors = self.ctx.ancestors
        while len(ancestors) >= 2 and isinstance(ancestors[-1], cst.Attribute) and ancestors[-1].value is node \
                and ancestors[-1].attr.value in _CONVERSIONS and isinstance(ancestors[-2], cst.Call):
            node, ancestors = ancestors[-2], ancestors[:-2]
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, cst.Arg) and len(ancestors) >= 2 and isinstance(ancestors[-2], cst.Call):
            callee = self.ctx.callee(ancestors[-2]) or ""
            first = positional_args(ancestors[-2])[:1] == [parent]
            return callee in PARAMETER_CLASSES or first and callee.startswith("torch.nn.init.")
        if isinstance(parent, cst.Attribute) and len(ancestors) >= 2 and isinstance(ancestors[-2], cst.Call):
            return parent.value is node and parent.attr.value in _INITIALISERS
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and len(ancestors) >= 2:
            return self._initialised_next(parent, ancestors[:-1])
        return False

    def _kept_for_dtype_and_device(self, node: cst.Call) -> str | None:
        """The attribute `self.register_buffer("_float_tensor", torch.FloatTensor(1))` (or
        `self._pe = torch.FloatTensor(1)`) registers, where every use of it in the class reads only
        its dtype and device: `x.type_as(self._float_tensor)`, `x.to(self._pe)`, `self._pe.device`.
        fairseq's idiom of a buffer that follows the module's moves; its values are never read."""
        ancestors = self.ctx.ancestors
        parent = ancestors[-1] if ancestors else None
        made_by = ancestors[-2] if len(ancestors) >= 2 else None
        if isinstance(parent, cst.Arg) and isinstance(made_by, cst.Call) and parent in made_by.args[1:2]:
            registration = registration_of(made_by)
            name = registration[1] if registration and registration[0] == "register_buffer" else None
            assignments = 0
        elif isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            name, assignments = self_attribute(parent.targets[0].target), 1
        else:
            return None
        classdef = self.ctx.enclosing_class()
        if name is None or classdef is None:
            return None
        mentions = references = 0
        for found in every_node(classdef):
            if isinstance(found, cst.Attribute) and self_attribute(found) == name:
                mentions += 1
            elif isinstance(found, cst.Attribute) and found.attr.value in _DTYPE_AND_DEVICE \
                    and self_attribute(found.value) == name:
                references += 1
            elif isinstance(found, cst.Call) and method_name(found) in _FOLLOWING_METHODS and len(found.args) == 1 \
                    and self_attribute(found.args[0].value) == name:
                references += 1
        return name if references and mentions - assignments == references else None

    def _initialised_next(self, assignment: cst.Assign, ancestors: list[cst.CSTNode]) -> bool:
        written = dotted_name(assignment.targets[0].target)
        if written is None or not isinstance(ancestors[-1], cst.SimpleStatementLine):
            return False
        mention = re.compile(rf"(?<![\w.]){re.escape(written)}(?!\w)")
        for statement in _statements_after(ancestors):
            if mention.search(self.ctx.module.code_for_node(statement)):
                return self._fills_elements(statement, written, mention) if isinstance(statement, cst.For) \
                    else self._initialises(statement, written)
        return False

    def _fills_elements(self, loop: cst.For, written: str, mention: re.Pattern,
                        outer: frozenset[str] = frozenset()) -> bool:
        """`for i in range(len(ids)): ... lengths[i] = mel.size(1)`: the loop's first use of the
        tensor stores the element its variable indexes, as Tacotron2's collate fills the lengths;
        also from a loop nested in it (`for i in ...: for j in ...: out[j, i, :] = ...`, MATLAB's
        `imresize` ported)."""
        variables = outer | set(target_names(loop.target))
        line = next((line for line in suite_statements(loop.body)
                     if mention.search(self.ctx.module.code_for_node(line))), None)
        if isinstance(line, cst.For):
            return self._fills_elements(line, written, mention, frozenset(variables))
        store = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        if not isinstance(store, cst.Assign) or len(store.targets) != 1:
            return False
        target = store.targets[0].target
        return isinstance(target, cst.Subscript) and dotted_name(target.value) == written and any(
            isinstance(node, cst.Name) and node.value in variables
            for element in target.slice for node in nodes_in_order(element))

    def _initialises(self, statement: cst.CSTNode, written: str) -> bool:
        """The statement's first use of `written` fills it in place: `w.normal_(0, 0.02)`,
        `nn.init.xavier_uniform_(w)`, `mask = mask.uniform_() > p`."""
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
                and isinstance(statement.body[0], (cst.Expr, cst.Assign))):
            return False
        # The first call or mention in evaluation order: a call comes before its receiver.
        value = statement.body[0].value
        first = next((node for node in (value, *nodes_in_order(value))
                      if isinstance(node, cst.Call) or dotted_name(node) == written), None)
        if not isinstance(first, cst.Call):
            return False
        receiver = method_receiver(first)
        if receiver is not None and _part_of(receiver, written):
            return method_name(first) in _INITIALISERS
        arguments = positional_args(first)
        return (self.ctx.callee(first) or "").startswith("torch.nn.init.") and bool(arguments) \
            and dotted_name(arguments[0].value) == written

    def _shape_fix(self, node: cst.Call, name: str, on_cuda: bool) -> FixSpec | None:
        torch_name = torch_module_name(self.ctx)
        if torch_name is None:
            return None
        shape, _ = self._replacements(node, name, on_cuda, torch_name)
        return FixSpec("Replace with `torch.empty(...)`", ((node, shape),))

    def _replacements(self, node: cst.Call, name: str, on_cuda: bool, torch_name: str = "torch") -> tuple[str, str]:
        """`torch.empty(3, 4)` (a shape) and `torch.tensor([3.0, 4.0])` (values) for integer arguments."""
        arguments = [self.ctx.code_for(arg.value) for arg in node.args]
        device = ', device="cuda"' if on_cuda else ""
        dtype = LEGACY_CONSTRUCTOR_DTYPES[name]
        # `torch.Tensor(3, 4)` already had the default dtype: say nothing more than it did.
        dtype_argument = f", dtype={torch_name}.{dtype}" if dtype else ""
        shape = f"{torch_name}.empty({', '.join(arguments)}{dtype_argument}{device})"
        as_values = [f"{value}.0" for value in arguments] if dtype in (None, "float32", "float64", "float16", "bfloat16") else arguments
        values = f"{torch_name}.tensor([{', '.join(as_values)}]{dtype_argument}{device})"
        return shape, values

    def _data_fix(self, node: cst.Call, name: str, on_cuda: bool) -> FixSpec | None:
        torch_name = torch_module_name(self.ctx)
        if torch_name is None or len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
            return None
        if not isinstance(node.args[0].value, (cst.List, cst.Tuple)):
            return None
        device = ', device="cuda"' if on_cuda else ""
        data = node.args[0].value
        dtype = LEGACY_CONSTRUCTOR_DTYPES[name]
        # `torch.tensor` would infer int64 from integer data: keep the legacy dtype. `torch.Tensor`'s
        # is the default dtype, float64 where a project sets it so; Python floats infer just that.
        if dtype is not None:
            dtype_argument = f", dtype={torch_name}.{dtype}"
        else:
            dtype_argument = "" if _floats_of_literals(data) else f", dtype={torch_name}.get_default_dtype()"
        replacement = f"{torch_name}.tensor({self.ctx.code_for(data)}{dtype_argument}{device})"
        return FixSpec("Replace with `torch.tensor(...)`", ((node, replacement),))


# Conversions that keep a freshly allocated tensor's role (and its garbage).
_CONVERSIONS = frozenset({"to", "float", "double", "half", "bfloat16", "cuda", "cpu"})

# Factories whose tensor has the default (floating) dtype unless `dtype=` says otherwise.
# `torch.Tensor(data)` is one too: the default dtype, which is always a floating one.
_FLOAT_FACTORIES = frozenset(
    f"torch.{name}" for name in ("randn", "rand", "zeros", "ones", "empty", "linspace", "logspace", "randn_like",
                                 "rand_like", "Tensor")
)

# What a tensor answers of another tensor, or of itself, reading only its dtype and device.
_FOLLOWING_METHODS = frozenset({"to", "type_as"})
_DTYPE_AND_DEVICE = frozenset({"dtype", "device"})

# Methods that return a view of part of a tensor.
_VIEWS = frozenset({"narrow", "select", "view", "unfold", "diagonal", "t", "transpose"})

# Methods of a tensor that return its storage.
_STORAGE_METHODS = frozenset({"storage", "untyped_storage", "_typed_storage"})


def _part_of(expr: cst.BaseExpression, written: str) -> bool:
    """`w`, `w.data`, or a view of it (`w.narrow(1, 0, n)`, `w.select(0, i)`, `w[:, :n]`): a fill
    of it fills `w`, or the part the code fills first."""
    if dotted_name(expr) in (written, f"{written}.data"):
        return True
    if isinstance(expr, cst.Subscript):
        return _part_of(expr.value, written)
    return isinstance(expr, cst.Call) and method_name(expr) in _VIEWS and _part_of(expr.func.value, written)


def _makes_list(value: cst.BaseExpression) -> bool:
    """A list display or comprehension, `list(...)`, `tuple(...)`, `range(...)`, `sorted(...)`,
    `x.tolist()`, or a list display repeated (`[1.0] * n`)."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        return isinstance(value.left, cst.List) or isinstance(value.right, cst.List)
    return isinstance(value, (cst.List, cst.ListComp)) or isinstance(value, cst.Call) and (
        dotted_name(value.func) in ("list", "tuple", "range", "sorted") or method_name(value) == "tolist"
    )


def _makes_list_factory(call: cst.Call) -> bool:
    """`defaultdict(list)`, `defaultdict(lambda: [])`: a dict whose missing entries are lists."""
    if dotted_name(call.func) not in ("defaultdict", "collections.defaultdict") or not call.args:
        return False
    factory = call.args[0].value
    return is_name(factory, "list") or isinstance(factory, cst.Lambda) and isinstance(factory.body, cst.List)


def _floats_of_literals(data: cst.BaseExpression) -> bool:
    """Whether `data` is nested lists or tuples of number literals, at least one a float
    (`[0.5, 1]`), or of nothing (`[]`): then `torch.tensor` infers the default dtype, as
    `torch.Tensor` uses."""
    leaves = list(_leaves(data))
    return all(isinstance(leaf, (cst.Integer, cst.Float)) for leaf in leaves) and (
        not leaves or any(isinstance(leaf, cst.Float) for leaf in leaves))


def _leaves(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The innermost values of nested list and tuple literals, a number's minus sign dropped."""
    if isinstance(node, (cst.List, cst.Tuple)):
        for element in node.elements:
            yield from _leaves(element.value)
    elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        yield node.expression
    else:
        yield node


def _statements_after(ancestors: list[cst.CSTNode]) -> Iterator[cst.BaseStatement]:
    """The statements that run after the statement `ancestors[-1]`: the rest of its block, then
    the rest of each block around the `if`, `with` or `try` that holds it, up to a loop or a
    function (whose next run starts over)."""
    child = ancestors[-1]
    for node in reversed(ancestors[:-1]):
        if isinstance(node, (cst.IndentedBlock, cst.Module)):
            if child in node.body:
                yield from node.body[node.body.index(child) + 1:]
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.For, cst.While)):
            return
        elif isinstance(node, cst.BaseCompoundStatement):
            child = node
