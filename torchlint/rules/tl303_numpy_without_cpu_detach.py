from __future__ import annotations

from functools import cached_property

import libcst as cst

from torchlint.analysis.literals import needs_parentheses
from torchlint.analysis.names import dotted_name
from torchlint.analysis.tensor_evidence import places_on_accelerator
from torchlint.analysis.tensor_facts.domain import Device, TensorFacts
from torchlint.analysis.torch_api import PASSED_BY_A_CALLER, passed_here
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

_PLACES = {
    Device.ACCELERATOR: "on the accelerator",
    Device.TARGET: "on the working `device`",
    Device.CONDITIONAL: "on the accelerator on the path that moves it",
    Device.MODULE: "on the module's device (the GPU once the model is moved there)",
}


# NumPy functions that convert a tensor argument with `__array__`, that is `.numpy()`.
_NUMPY_CONVERTING = frozenset(
    "array asarray asanyarray ascontiguousarray isnan isinf isfinite exp log log1p sqrt abs absolute square "
    "round around clip floor ceil sign tanh sin cos argmax argmin argsort sort unique nonzero where percentile "
    "median histogram concatenate stack vstack hstack save".split()
)
_SEQUENCE_ARGUMENTS = frozenset({"concatenate", "stack", "vstack", "hstack"})


class NumpyWithoutCpuDetach(Rule):
    """
    ## What it does
    Flags `.numpy()` on a tensor known to be on an accelerator or the working device (moved with
    `.cuda()` / `.to(device)`, created with `device=`, the output of a model moved there, any op
    on such a tensor, or, in a Module's methods, its inputs, parameters and submodule outputs),
    or known to require grad (`requires_grad=True`, `nn.Parameter`, a model's output outside
    `torch.no_grad()`), with no `.cpu()` / `.detach()` on the way. A tensor moved under a flag
    (`if use_cuda: x = x.cuda()`) is on the GPU where the flag holds, and so is what a model
    parameter (`def detect(model, image)`) computes from it; under a later `if` or `... if ...
    else ...` on the same flag, the branch where it does not hold converts a CPU tensor, and so
    does the branch where the tensor's own flag fails (`if x.is_cuda or ...: ... else:
    x.numpy()`, a CPU fallback). The
    parameters of a top-level function are on the GPU when a call anywhere in the project (this
    file or another, imported by name, through a module or with `*`) passes them a tensor moved
    with `.cuda()` / `.to(device)`; the finding names that call. NumPy functions that convert
    their argument with `.numpy()` fail the same way and are flagged at the tensor they are given:
    `np.array(t)`, `np.asarray(t)`, `np.isnan(t)`, `np.exp(t)`, `np.argmax(t)`,
    `np.concatenate([a, b])`, `np.save(path, t)` and other such functions; not an input of
    `forward()` that the code never uses as a tensor (`np.ceil(H / self.window_size)` of Swin's
    `forward(self, x, H, W)`): NumPy functions are as often given numbers.

    Under `torch.no_grad()` / `torch.inference_mode()` (blocks or decorated functions) a result
    no longer requires grad, but it stays on its device. A layer with no weights of its own
    (`nn.Softmax(dim=-1)(scores)`, `nn.ReLU()`) gives an output that requires grad only where its
    input does: probabilities of predictions another method gathered with `.detach().cpu()`
    convert; those of a model's output do not. Tensors moved back to the CPU earlier
    (also through local variables and branches, and by a CPU tensor type:
    `.type(torch.FloatTensor)`), tensors whose device or grad state is unknown,
    the inputs of a Module written as a data transform (defined in a `transforms/` folder, or
    built into a `Compose([...])`: it runs on samples in the data pipeline, on the CPU in
    DataLoader workers), and tensors on the device of an input of unknown placement
    (`device=x.device` for an `x` that may come from numpy, or `.to(get_device(x))`: a helper
    named for the device and given a tensor answers where that tensor is) are not reported.
    Notebooks are checked like scripts. In a file that never moves a model or tensor to an
    accelerator, a model's output is on the CPU: its `.numpy()` fails only for requiring grad,
    and otherwise is a warning about portability (it fails once the model runs on a GPU).

    ## Why is this bad?
    `.numpy()` shares memory with the tensor, so it only works for CPU tensors outside autograd:
    `TypeError: can't convert cuda:0 device type tensor to numpy` on an accelerator, and
    `RuntimeError: Can't call numpy() on Tensor that requires grad` for a tensor in the graph.
    Code that works in a CPU test crashes on the GPU.

    ## Example
    ```python
    scores = model_scores.to(device)
    array = scores.numpy()
    ```

    ## Use instead
    ```python
    array = scores.detach().cpu().numpy()
    ```

    ## Fix safety
    The fix inserts the missing `.cpu()` and/or `.detach()` before `.numpy()`. It is safe: the
    values are the same and the code no longer raises.

    Bug left in place: no. Computation changed: no. The array of an accelerator tensor is a copy
    (the old line raised); for a CPU tensor `.detach().numpy()` still shares its memory, as the old
    `.numpy()` would have.
    """

    code = "TL303"
    name = "numpy-without-cpu-detach"
    summary = "`.numpy()` on an accelerator tensor or one that requires grad: call `.detach().cpu()` first"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self._imports_numpy and isinstance(func, cst.Attribute) and func.attr.value in _NUMPY_CONVERTING:
            callee = self.ctx.callee(node) or ""
            if callee.startswith("numpy."):
                self._check_numpy_function(node, callee[6:])
                return
        if not isinstance(func, cst.Attribute) or func.attr.value != "numpy" or node.args:
            return
        receiver = func.value
        if self.ctx.callee(node) is not None:
            return  # `np.numpy`, module attributes
        facts = self.ctx.tensors.facts(receiver)
        if not isinstance(facts, TensorFacts):
            return
        on_accelerator = facts.device.is_placed
        needs_detach = facts.requires_grad and not facts.maybe
        if not on_accelerator and not needs_detach:
            return
        missing = ".detach().cpu()" if on_accelerator and needs_detach else (".cpu()" if on_accelerator else ".detach()")
        written = dotted_name(receiver) or self._short_item(receiver)
        subject = f"`{written}`" if written else "the tensor"
        fix = FixSpec(f"Insert `{missing}` before `.numpy()`", ((func.attr, f"{missing[1:]}.numpy"),), Applicability.SAFE)
        use = f"use `{written or 'x'}{missing}.numpy()`"
        if facts.device is Device.MODULE and not self._places_on_accelerator:
            # The model stays on the CPU in this file: only a run on a GPU would fail.
            if needs_detach:
                self.report(node, f"`.numpy()` fails because {subject} requires grad (and would be on the GPU once "
                            f"the model is moved there); {use}", fix=fix)
            else:
                self.report(node, f"`.numpy()` of {subject}, computed by the model, works only while the model stays "
                            f"on the CPU, as it does in this file; {use} so that it also runs on a GPU",
                            fix=fix, severity=Severity.WARNING)
            return
        place = _place(facts) if on_accelerator else None
        reason = (
            f"is {place} and requires grad" if on_accelerator and needs_detach
            else (f"is {place}" if on_accelerator else "requires grad")
        )
        # A parameter passed on the GPU by a caller: the call is the evidence.
        related = passed_here(self.ctx, facts) if on_accelerator else ()
        self.report(node, f"`.numpy()` fails because {subject} {reason}; {use}", related=related, fix=fix)

    def _check_numpy_function(self, node: cst.Call, function: str) -> None:
        """`np.isnan(t)`, `np.array(t)`: NumPy converts the tensor with `.numpy()`, which fails the same way."""
        position = 1 if function == "save" else 0  # `np.save(path, array)`
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        first = positional[position].value if len(positional) > position else None
        if function in _SEQUENCE_ARGUMENTS and isinstance(first, (cst.List, cst.Tuple)):
            tensors = [element.value for element in first.elements if not isinstance(element, cst.StarredElement)]
        else:
            tensors = [first] if first is not None else []
        for tensor in tensors:
            facts = self.ctx.tensors.facts(tensor)
            if not isinstance(facts, TensorFacts) or facts.maybe and facts.device is Device.MODULE:
                continue
            # A parameter that a caller passes on the GPU is not evidence enough here, nor is an
            # input of `forward()` that the code never uses as a tensor (`np.ceil(H / window)`):
            # NumPy functions are as often given numbers, lists and arrays.
            on_accelerator = facts.device.is_placed and facts.placed_by is None and not (
                facts.device is Device.MODULE and not self._places_on_accelerator)
            needs_detach = facts.requires_grad and not facts.maybe
            if not on_accelerator and not needs_detach:
                continue
            missing = ".detach().cpu()" if on_accelerator and needs_detach else (".cpu()" if on_accelerator else ".detach()")
            written = self.ctx.code_for(tensor)
            reason = f"is {_place(facts)}" if on_accelerator else "requires grad"
            if on_accelerator and needs_detach:
                reason += " and requires grad"
            converted = f"({written}){missing}.numpy()" if needs_parentheses(tensor) else f"{written}{missing}.numpy()"
            self.report(
                tensor, f"`np.{function}` converts `{written}` with `.numpy()`, which fails because it {reason}; pass "
                f"`{converted}` (or use the torch function)",
                fix=FixSpec(f"Convert with `{missing}.numpy()` first", ((tensor, converted),), Applicability.SAFE),
            )

    @cached_property
    def _imports_numpy(self) -> bool:
        return "numpy" in self.ctx.source

    @cached_property
    def _places_on_accelerator(self) -> bool:
        return places_on_accelerator(self.ctx.source)

    def _short_item(self, receiver: cst.BaseExpression) -> str | None:
        """`imgs[i]` as written, when the receiver is a short one-line subscript."""
        if not isinstance(receiver, cst.Subscript):
            return None
        code = self.ctx.code_for(receiver).strip()
        return code if len(code) <= 30 and "\n" not in code else None


def _place(facts: TensorFacts) -> str:
    """Where the tensor is, naming the test under which a branch moved it."""
    if facts.placed_by is not None:
        return PASSED_BY_A_CALLER
    if facts.placed_when is not None:
        code, truth = facts.placed_when
        return f"on the accelerator when `{code}` is {'true' if truth else 'false'}"
    return _PLACES[facts.device]

