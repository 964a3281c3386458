from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name, keyword_arg, method_name, method_receiver, positional_args
from torchlint.analysis.values import SIZE_FACTORIES, string_value
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# Factories that make a tensor from a size: given `device=`, they fill it there. `torch.tensor(data)`
# is not one: torch builds it in host memory and copies it even with `device=`.
_FACTORIES = SIZE_FACTORIES
# Made on the device, these draw from its generator instead of the CPU's: other numbers.
_RANDOM = frozenset({"torch.rand", "torch.randn", "torch.randint", "torch.randperm"})


class CreatedThenMoved(Rule):
    """
    ## What it does
    Flags a tensor made by a factory on the CPU and moved at once: `torch.zeros(n).to(device)`,
    `torch.ones(b, t).cuda()`, `torch.arange(n).to("cuda")`. A note: the code is correct.
    Moves that also change the dtype, `non_blocking` copies, moves to the CPU and tensors made
    with `requires_grad` (TL008: the move makes a non-leaf copy) or drawn from a `generator=`
    (which must be on the device it draws for) are left alone, and so are
    tensors of data (`torch.tensor(values).cuda()`, `torch.as_tensor(...)`, `torch.from_numpy`):
    torch builds those in host memory and copies them even when given `device=`. Nor is code
    that runs once: `__init__`, a cached property (`@functools.cached_property`, `@functools.cache`),
    module-level code or `main()` outside a loop (a `__main__` block too), and test code (a test
    module, a module of a `test/`, `tests/`, `testing/` or `test_utils/` folder): one copy there
    costs nothing worth a change. Nor is a probe whose device alone is read
    (`torch.zeros(1).to(device).device`, to learn the index of `"cuda"`), nor a copy in a loop
    over the GPUs (`for d in range(torch.cuda.device_count()):`, a check that touches each).

    ## Why is this bad?
    The tensor is allocated and filled in host memory, then copied to the device: two
    allocations and a host-to-device copy that waits for the device, where `device=` creates it
    there directly. In a training step, or for large tensors, the copy is measurable.

    ## Example
    ```python
    mask = torch.ones(batch, seq_len).to(device)
    ```

    ## Use instead
    ```python
    mask = torch.ones(batch, seq_len, device=device)
    ```

    ## Fix safety
    The fix moves the device into the factory call. It is safe when the target is written as a
    device (`"cuda"`, `torch.device(...)`, `x.device`, `.cuda()`), and unsafe for a name
    (`.to(device)`), which could hold a dtype or a tensor where the call would mean something
    else, and for random factories (`torch.randn`), which then draw from the device's generator:
    other numbers for the same seed.
    Bug left in place: none. Computation changed: no (random factories: other random numbers).
    """

    code = "TL309"
    name = "created-then-moved"
    summary = "Tensor created on the CPU and moved at once: create it on the device with `device=`"
    severity = Severity.NOTE

    def visit_Call(self, node: cst.Call) -> None:
        method = method_name(node)
        if method not in ("to", "cuda"):
            return
        factory = method_receiver(node)
        if not isinstance(factory, cst.Call) or self.ctx.callee(factory) not in _FACTORIES:
            return
        if self.ctx.runs_once() or self.ctx.serves_tests or self._asks_device(node) or self._once_per_device():
            return  # one copy costs nothing worth a change
        if any(keyword_arg(factory, name) is not None for name in ("device", "requires_grad", "generator")) \
                or any(arg.star for arg in factory.args):
            # A leaf that requires grad, moved, is TL008's non-leaf copy: not the same tensor; a
            # draw from a `generator` must be made on that generator's device.
            return
        target = self._target(node, method)
        if target is None:
            return
        written = self.ctx.code_for(target) if isinstance(target, cst.BaseExpression) else target
        self.report(
            node,
            f"the tensor is made on the CPU and copied to `{written}`; create it there with `device={written}`",
            fix=self._fix(node, factory, target),
        )

    def _asks_device(self, move: cst.Call) -> bool:
        """`torch.zeros(1).to(device).device`: a probe made to learn the device's index."""
        parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        return isinstance(parent, cst.Attribute) and parent.value is move and parent.attr.value == "device"

    def _once_per_device(self) -> bool:
        """Every loop around the call walks the GPUs (`for d in range(torch.cuda.device_count()):`),
        as a check or a set-up that touches each device: one copy per device, not per step."""
        loops = []
        for node in reversed(self.ctx.ancestors):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(node, cst.While):
                return False
            if isinstance(node, cst.For):
                loops.append(node)
        return bool(loops) and all(self._walks_devices(loop.iter) for loop in loops)

    def _walks_devices(self, walked: cst.BaseExpression) -> bool:
        if not (isinstance(walked, cst.Call) and dotted_name(walked.func) == "range" and len(walked.args) == 1):
            return False
        count = self.ctx.values.resolve(walked.args[0].value)
        return isinstance(count, cst.Call) and (self.ctx.callee(count) or "").endswith(".device_count")

    def _target(self, call: cst.Call, method: str) -> cst.BaseExpression | str | None:
        """The device the call moves to: the argument of `.to(...)`, `"cuda"` for `.cuda()`."""
        if method == "cuda":
            if not call.args:
                return '"cuda"'
            device = keyword_arg(call, "device")
            only = call.args[0].value if len(call.args) == 1 and call.args[0].keyword is None else None
            value = device.value if device is not None and len(call.args) == 1 else only
            return f'"cuda:{value.value}"' if isinstance(value, cst.Integer) else None
        positional = positional_args(call)
        device = keyword_arg(call, "device")
        if len(call.args) != 1:
            return None
        value = device.value if device is not None else positional[0].value if positional else None
        return value if value is not None and self._names_device(value) else None

    def _names_device(self, expr: cst.BaseExpression) -> bool:
        text = string_value(expr)
        if text is not None:
            return text.split(":")[0] in ("cuda", "mps", "xpu", "npu", "hpu", "xla")
        if isinstance(expr, cst.Call):
            return self.ctx.callee(expr) == "torch.device"
        last = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
        return "device" in last.lower()

    def _fix(self, call: cst.Call, factory: cst.Call, target) -> FixSpec | None:
        written = self.ctx.code_for(call)
        if "\n" in written or "#" in written:
            return None  # a comment inside the call would be lost
        if isinstance(target, str):
            device, safe = target, True
        else:
            device = self.ctx.code_for(target)
            safe = not isinstance(target, cst.Name)
        safe = safe and self.ctx.callee(factory) not in _RANDOM
        arguments = [self.ctx.code_for(arg.value) if arg.keyword is None else
                     f"{arg.keyword.value}={self.ctx.code_for(arg.value)}" for arg in factory.args]
        created = f"{self.ctx.code_for(factory.func)}({', '.join([*arguments, f'device={device}'])})"
        return FixSpec(
            "Create the tensor on the device", ((call, created),),
            Applicability.SAFE if safe else Applicability.UNSAFE,
        )
