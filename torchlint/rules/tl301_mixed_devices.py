from __future__ import annotations

from functools import cached_property

import libcst as cst

from torchlint.analysis.module_attributes import first_parameter
from torchlint.analysis.module_values import returns_module
from torchlint.analysis.names import dotted_name, keyword_arg, method_named
from torchlint.analysis.tensor_evidence import places_on_accelerator
from torchlint.analysis.tensor_facts.domain import Collected, Device, ModuleValue, TensorFacts
from torchlint.analysis.torch_api import PASSED_BY_A_CALLER, passed_here
from torchlint.analysis.tensors import LEGACY_CONSTRUCTORS
from torchlint.analysis.values import DATA_FACTORIES, SIZE_FACTORIES
from torchlint.context import RelatedNode
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# Calls that can put a tensor on the default device or the CPU (checked before asking the model).
_FACTORIES = SIZE_FACTORIES | DATA_FACTORIES | LEGACY_CONSTRUCTORS | {"torch.from_numpy"}
_PARTNERS = {
    Device.ACCELERATOR: "on the accelerator",
    Device.TARGET: "on the working `device`",
    Device.CONDITIONAL: "on the accelerator on the path that moves it",
    Device.MODULE: "on the module's device",
    Device.INPUT: "on its input's device",
}


class MixedDevices(Rule):
    """
    ## What it does
    Flags a tensor created on the default device (a factory such as `torch.zeros`, `torch.arange`,
    `torch.eye`, `torch.rand*`, `torch.full`, `torch.tensor` of a list, `torch.from_numpy`, also
    wrapped as `torch.triu(torch.ones(...))` or `torch.meshgrid(torch.arange(...), ...)`, or
    returned by a function or method of the same file, or by a function imported from another file
    of the project, with notes pointing there) or moved to the CPU (`.cpu()`,
    `device="cpu"`), when it meets a tensor on an accelerator, the working `device` or the
    module's device in any op: arithmetic nested at any depth, comparisons, `torch.cat`/`stack`
    lists, `F.*` calls, method arguments (`scores.masked_fill(mask, ...)`, `x.where(...)`,
    `index_select`), or the input of a model or submodule (`self.lstm(x, (h0, c0))`). A `torch.nn`
    layer computes with every input it gets; a Module class of the user (or of unknown class)
    with its first input: its other arguments may be CPU metadata (grid sizes, lengths), and a
    tensor moved to the CPU on purpose (`.cpu()`, `device="cpu"`) is meant to stay there. Not even
    with that where the class's `forward` only indexes with it or reads its shape
    (`self.adjustments[indices, :]`, nerfstudio's camera optimizer): CPU indices index a tensor on
    any device.

    Devices are followed through local variables, branches and loops (a tensor moved in both
    branches of an `if` is still moved). A tensor moved in one branch only (`if use_cuda: x =
    x.cuda()`) is on the GPU on that path, where it meets the CPU tensor; a later `if` on the same
    test knows which path ran, and in the branch where `torch.cuda.is_available()` is false
    nothing is on a GPU; where `isinstance(x, torch.Tensor)` is false, `x` is a number, on no
    device (`if isinstance(x, torch.Tensor): x = x.to("cpu")` leaves no path on the GPU). A list filled with `append`/`extend` remembers where its tensors are:
    one made on the default device beside GPU ones is reported when `torch.stack`/`torch.cat`
    joins them (a 0-dim tensor too: only elementwise ops accept a CPU scalar). The parameters of
    a top-level function that makes tensors without `device=` are on the GPU when a call in the
    project passes them a tensor moved there, or computed from one (`model(img)` after `img =
    img.to(device)`); the finding names that call. In `forward()` and the Module methods it calls, the
    inputs, parameters, registered buffers and submodule outputs are on the module's device; a
    plain tensor attribute (`self.mask = torch.ones(...)` in `__init__`) is not moved with the
    module and stays on the default device. Every input of `forward()` without a default is on the
    module's device, through `einops.rearrange`/`repeat`/`reduce` too; a top-level function named
    as a loss (`focal_loss(logits, labels)`) gets a model's outputs and targets, so its tensor
    parameters are on the device of its inputs. `F.ctc_loss` takes its targets and lengths on the
    CPU whatever the device of the log-probabilities, passed by position or by keyword. A dtype
    conversion of a Parameter (`nn.Parameter(w).float()`) may be the Parameter itself (`.float()`
    returns a float32 Parameter as it is), so its device is not judged.

    A batch from a DataLoader (`for x, y in loader:` over a DataLoader of the file, or a `loader`
    parameter of a training function in a file that builds its DataLoaders) is on the CPU as
    loaded: passed to a model on the accelerator without `.to(device)` / `.cuda()` it is reported
    at the argument. Not when the loop body moves the batch or its parts (any `.to(`, `.cuda(` or
    `device` on a line naming them), when a collate function or a dataset class of the file
    places tensors, or when the model's device is not known.

    The finding is reported at the call that created the tensor, where `device=` belongs. 0-dim
    tensors (`torch.tensor(2.0)`), Python scalars, tensors moved later (`torch.arange(n).to(x.device)`),
    factories given `device=x.device`, indexing with a CPU index and tensors whose device is
    unknown are not reported (so is the result of a helper whose `device=None` parameter the call
    leaves out, `change_basis(l)`: None stands for what the helper makes of it), nor a probe of the module in its own `__init__`
    (`self.forward(torch.zeros(1, 3, s, s))` to measure strides) or in a method that `__init__`
    calls through `self`, directly or not, and `forward` does not (`self.append(layer)` sizing the
    next layer by a dummy pass): its parameters are still on the default device there. Nor is the
    module's device held against a tensor in a file that places nothing on an accelerator and
    exposes no model (its Module classes are private, `_Name`, and no public function returns
    one): its models run only where its own code runs them, on the CPU.

    ## Why is this bad?
    The op raises `RuntimeError: Expected all tensors to be on the same device` as soon as the
    code runs on a GPU or MPS, although it passes every CPU-only test.

    ## Example
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1])
        return x + self.scale * positions
    ```

    ## Use instead
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device)
        return x + self.scale * positions
    ```
    """

    code = "TL301"
    name = "mixed-devices"
    summary = "Tensor created on the default device is combined with a tensor on the accelerator"
    severity = Severity.ERROR

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.callee(node) is None:
            self._report_unmoved_batch(node)
        origin = self._origin_kind(node)
        if origin is None:
            return
        origin, related = origin
        conflicts = self.ctx.tensors.conflicts(node)
        if conflicts and (constructor := self._unmoved_constructor()):
            # A shape probe in `__init__` (`self.forward(torch.zeros(1, 3, s, s))`): the module's
            # parameters are still on the default device, where `.to(device)` has yet to move them.
            conflicts = [(partner, device) for partner, device in conflicts
                         if device is not Device.MODULE or id(partner) not in constructor]
        if conflicts and self._models_stay_on_the_cpu:
            conflicts = [(partner, device) for partner, device in conflicts if device is not Device.MODULE]
        if not conflicts:
            return
        partner, device = conflicts[0]
        written = self.ctx.code_for(partner).strip() if isinstance(partner, (cst.Name, cst.Attribute)) else None
        partner_facts = self.ctx.tensors.facts(partner)
        passed = passed_here(self.ctx, partner_facts)
        if passed:
            # A parameter's tensor that a call in the project passes on the GPU: that call is the evidence.
            related = (*related, *passed)
            where = f"combined with {f'`{written}`' if written else 'a tensor'}, {PASSED_BY_A_CALLER}"
        elif isinstance(partner_facts, ModuleValue):
            where = f"passed to `{written or 'a module'}`, whose parameters are {_PARTNERS[device]}"
        elif isinstance(partner_facts, Collected):
            where = f"put in `{written or 'a list'}` beside tensors {_PARTNERS[device]}, which one op joins"
        elif written:
            where = f"combined with `{written}`, which is {_PARTNERS[device]}"
        else:
            where = f"combined with a tensor {_PARTNERS[device]}"
        # Where the devices meet: the op (or the module call) that raises on a GPU.
        meets = RelatedNode(partner, f"meets `{written}` here" if written else "meets the other tensor here")
        self.report(node, f"{origin} but it is {where}; {self._remedy(node)}", related=(*related, meets))

    @cached_property
    def _models_stay_on_the_cpu(self) -> bool:
        """The file places nothing on an accelerator and exposes no model: its Module classes are
        private (`_Name`) and no public function returns one. Its models then run only where its
        own code runs them (loaded with `map_location="cpu"`, fed `torch.from_numpy` arrays): on
        the CPU, which is the module's device there."""
        if places_on_accelerator(self.ctx.source):
            return False
        if any(not name.startswith("_") for name in self.ctx.module_classes.names()):
            return False
        return not any(isinstance(statement, cst.FunctionDef) and not statement.name.value.startswith("_")
                       and returns_module(self.ctx, statement) for statement in self.ctx.module.body)

    def _unmoved_constructor(self) -> set[int]:
        """The nodes of the method the call is in when that method runs while the Module is built
        (`_construction_methods`), unless construction moves the module itself (`self.to(device)`);
        else none."""
        function = self.ctx.enclosing_function()
        classdef = self.ctx.enclosing_class()
        construction = _construction_methods(classdef) if function is not None and classdef is not None else []
        if all(method is not function for method in construction):
            return set()
        moves = any(isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in ("to", "cuda") and dotted_name(node.func.value) == "self"
                    for method in construction for node in nodes_in_order(method.body))
        return set() if moves else {id(node) for node in nodes_in_order(function.body)}

    def _report_unmoved_batch(self, call: cst.Call) -> None:
        found = self.ctx.tensors.unmoved_batch(call)
        if found is None:
            return
        batch, device = found
        written = self.ctx.code_for(batch).strip()
        model = self.ctx.code_for(call.func).strip()
        moved = f"`{written} = {written}.to(device)`" if isinstance(batch, cst.Name) else "`.to(device)`"
        self.report(
            batch,
            f"`{written}` is a DataLoader batch, still on the CPU, but it is passed to `{model}`, whose "
            f"parameters are {_PARTNERS[device]}; move the batch first with {moved}",
        )

    def _origin_kind(self, call: cst.Call) -> tuple[str, tuple] | None:
        """How the call can put a tensor on the default device or the CPU, with the places that
        show it when they are elsewhere, or None (cheap checks)."""
        func = call.func
        qualified = self.ctx.callee(call)
        if qualified in _FACTORIES:
            device = keyword_arg(call, "device")
            if (device is not None and "cpu" not in self.ctx.code_for(device.value)) or any(
                arg.star == "**" for arg in call.args
            ):
                return None  # placed, or maybe placed by `**factory_kwargs`
            where = "the CPU" if device is not None else "the default device (CPU)"
            return f"`{dotted_name(func) or 'factory'}(...)` creates a tensor on {where}", ()
        if qualified is not None:
            # A function (not a class) imported from another file of the project may make one.
            fact = self.ctx.project.lookup(qualified) if qualified.rsplit(".", 1)[-1][:1].islower() else None
            if fact is not None and fact.kind == "tensor":
                return (f"`{dotted_name(func)}(...)` returns a tensor on the default device (CPU)",
                        self.ctx.project.related(fact.notes, self.ctx.path))
            return None
        if isinstance(func, cst.Attribute) and (
            func.attr.value == "cpu" or (func.attr.value == "to" and "cpu" in self.ctx.code_for(call))
        ):
            written = self.ctx.code_for(call).strip()
            return (f"`{written}` puts the tensor on the CPU" if len(written) <= 40 else "`.cpu()` puts the tensor on the CPU"), ()
        if self.ctx.tensors.is_same_file_callable(call):
            return f"`{dotted_name(func)}(...)` returns a tensor on the default device (CPU)", self._made_in_helper(func)
        return None

    def _made_in_helper(self, func: cst.BaseExpression) -> tuple[RelatedNode, ...]:
        """Where a top-level function of this file creates the tensor it returns."""
        summary = self.ctx.tensors.function_summary(func.value) if isinstance(func, cst.Name) else None
        origin = summary.origin if isinstance(summary, TensorFacts) else None
        if origin is None:
            return ()
        return (RelatedNode(origin, f"created on the default device (CPU) here, returned by `{func.value}`"),)

    def _remedy(self, call: cst.Call) -> str:
        qualified = self.ctx.callee(call)
        if qualified == "torch.from_numpy":
            return "move it with `.to(x.device)`"
        if qualified in _FACTORIES:
            return "pass `device=` (e.g. `device=x.device`)"
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("cpu", "to"):
            return "keep both operands on one device"
        return "create the tensor with `device=` in that function, or move the result with `.to(x.device)`"


def _construction_methods(classdef: cst.ClassDef) -> list[cst.FunctionDef]:
    """`__init__` and the methods it calls through `self`, directly or not, that `forward` does not
    reach (`self.append(layer)` inferring the next layer's input shape with a dummy input): they
    run while the module is being built, before anything can have moved it off the CPU."""
    running = _methods_reached(classdef, "forward")
    return [method for method in _methods_reached(classdef, "__init__") if all(method is not other for other in running)]


def _methods_reached(classdef: cst.ClassDef, start: str) -> list[cst.FunctionDef]:
    """The method `start` and those it calls as `self.<method>(...)`, directly or not."""
    first = method_named(classdef, start)
    reached = [first] if first is not None else []
    for method in reached:  # grows while it is read
        self_name = first_parameter(method)
        for node in nodes_in_order(method.body):
            if self_name is not None and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and dotted_name(node.func.value) == self_name:
                called = method_named(classdef, node.func.attr.value)
                if called is not None and all(called is not known for known in reached):
                    reached.append(called)
    return reached
