from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.grad_mode import GradState
from torchlint.analysis.loops import Loop, enclosing_loops
from torchlint.analysis.names import argument, called_name, dotted_name, is_constant_false, is_constant_true
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode
from torchlint.rule import Rule
from torchlint.walker import child_nodes

# How deep the helpers an evaluation loop calls are followed to the model they run.
_HELPER_DEPTH = 2

def _model_key(expr: cst.BaseExpression) -> str | None:
    """The model a call or a mode switch names: `model`, `self.net`, or `self.models[]` for the
    modules of a container (`self.models[key].eval()` switches them all, `self.models["g"](x)`
    runs one of them)."""
    if isinstance(expr, cst.Subscript):
        container = dotted_name(expr.value)
        return f"{container}[]" if container is not None else None
    return dotted_name(expr)


def _is_method_of_self(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"


class _Frame:
    """What one function body has done so far: the models put in eval mode, grad switched off."""

    def __init__(self) -> None:
        # Model expression as written -> ids of the loops the `.eval()` call sits in.
        self.evaluated: dict[str, frozenset[int]] = {}
        self.grad_off = False
        # Parameters frozen here (`p.requires_grad = False`, `requires_grad_(False)`): with no
        # leaf requiring grad, autograd records nothing anyway.
        self.frozen = False


class EvalWithoutNoGrad(Rule):
    """
    ## What it does
    Flags a call of a model inside a loop that runs after `model.eval()` when no
    `torch.no_grad()`, `torch.inference_mode()` or `torch.set_grad_enabled(False)` is in effect
    (as a `with` block, a decorator of the function, or a `set_grad_enabled(False)` statement);
    a helper of the project or a library whose name says it switches grad mode
    (`@smart_inference_mode()`, `with maybe_no_grad():`) counts as one, and so does a function
    every call of which in the project runs under one (a trainer's `_validation_loss()`, called
    only inside `with torch.no_grad():`; a classifier's `label_sentences()` that a pipeline of
    another file runs so).
    Loops that want gradients (they call `backward()`, `torch.autograd.grad`, `requires_grad_()`,
    Jacobian products such as `torch.func.jvp`: saliency maps, adversarial examples, Laplace
    approximations) are left alone, and so are functions that freeze the
    parameters (`p.requires_grad = False`), where autograd records nothing anyway. Test functions
    (`def test_...` in a `test_*.py` or `*_test.py` file) are left alone too: a test's calibration
    or smoke loop over a toy model loses nothing to autograd. So is code that runs once per object
    or process (`__init__` probing each new block on a dummy batch, a cached property): the graph
    it records is freed when it returns.

    The model may run in a function of the same file that the loop calls (two calls deep): a
    method of the class called on `self` (`self._eval_step(batch)` running `self.model(x)`), or a
    helper the model is passed to (`score(model, x)`). The finding is at that call in the loop,
    with a note at the model's call, unless the helper switches grad mode itself. A container of
    models switched in a loop (`for k in self.models: self.models[k].eval()`) counts for each
    model looked up in it (`self.models["generator"](z)`).

    ## Why is this bad?
    `model.eval()` only switches dropout and batch norm to inference behaviour; it does not stop
    autograd. Every forward pass still records its graph and keeps the activations it needs for a
    backward that never comes: evaluation uses several times the memory and runs slower, and large
    batches that would fit run out of memory.

    ## Example
    ```python
    model.eval()
    for x, y in val_loader:
        preds = model(x).argmax(-1)
    ```

    ## Use instead
    ```python
    model.eval()
    with torch.inference_mode():
        for x, y in val_loader:
            preds = model(x).argmax(-1)
    ```
    """

    code = "TL007"
    name = "eval-without-no-grad"
    summary = "Model called in an evaluation loop without no_grad/inference_mode: autograd records a graph"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._frames = [_Frame()]
        self._reported: set[int] = set()
        self._without_grad: dict[int, bool] = {}  # by function: every call in the file runs without autograd
        self._test_file = ctx.is_test_file

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        frame = _Frame()
        # A test's loop over a toy model (calibration, a smoke run): its graphs cost nothing.
        frame.frozen = self._frames[-1].frozen or (self._test_file and node.name.value.startswith("test"))
        self._frames.append(frame)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._frames.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        frame = self._frames[-1]
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("eval", "train"):
                self._mode_switch(node, method, func.value, frame)
                return
            if method == "set_grad_enabled":
                self._grad_switch(node, frame)
                return
            if method == "requires_grad_" and node.args and is_constant_false(node.args[0].value):
                frame.frozen = True
                return
        elif isinstance(func, cst.Name) and func.value == "set_grad_enabled":
            self._grad_switch(node, frame)
            return
        if not frame.evaluated or frame.frozen or any(f.grad_off for f in self._frames):
            return
        written = _model_key(func)
        if written in frame.evaluated:
            loop = self._recording_loop(frame.evaluated[written])
            if loop is not None:
                model = self.ctx.code_for(func)
                self.report(
                    node,
                    f"`{model}(...)` runs in a loop after `{model}.eval()` with autograd still recording; wrap "
                    "the loop in `with torch.inference_mode():` (or `torch.no_grad()`)",
                )
            return
        self._check_helper(node, frame)

    def _check_helper(self, call: cst.Call, frame: _Frame) -> None:
        """A call, in the evaluation loop, of a function of this file that runs the model: the loop
        is the place to switch autograd off (`self._eval_step(batch)` calling `self.model(x)`)."""
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops:
            return
        callee = self.ctx.loops.function_called(call, loops[-1])
        if callee is None:
            return
        models = self._bound_models(call, callee, {key: key for key in frame.evaluated})
        found = self._model_call_in(callee, models, 1)
        if found is None:
            return
        model_call, key = found
        loop = self._recording_loop(frame.evaluated[key])
        if loop is None:
            return
        helper = self.ctx.code_for(call.func)
        model = self.ctx.code_for(model_call.func)
        self.report(
            call,
            f"`{helper}(...)` runs `{model}(...)` in a loop after the model's `.eval()` with autograd still "
            "recording; wrap the loop in `with torch.inference_mode():` (or `torch.no_grad()`)",
            related=(RelatedNode(model_call, f"the model runs here, in `{callee.name.value}`"),),
        )

    def _recording_loop(self, eval_loops: frozenset[int]) -> Loop | None:
        """The loop to report for a model run at the current node, once per loop: None when grad
        mode is switched here or the loop wants gradients."""
        loop = self._loop_after_eval(eval_loops)
        if loop is None or id(loop) in self._reported:
            return None
        if self.ctx.grad_mode.state() is not GradState.DEFAULT or self.ctx.loops.iteration(loop).needs_grad \
                or self._called_without_grad(self.ctx.enclosing_function()) or self.ctx.runs_once():
            return None
        self._reported.add(id(loop))
        return loop

    def _called_without_grad(self, function: cst.FunctionDef | None) -> bool:
        """Every call of `function` in the project (by name, or as a method) runs with autograd
        switched off: under `with torch.no_grad():`, or in a function decorated so (a trainer
        calls its `_validation_loss()` only inside `with torch.no_grad():`, stanza's pipeline
        its classifier's `label_sentences()` in another file)."""
        if function is None:
            return False
        key = id(function)
        if key not in self._without_grad:
            modes: list[bool] = []
            self._call_modes(self.ctx.module, function.name.value, False, modes)
            modes.extend(self.ctx.project.grad_modes(function.name.value))
            self._without_grad[key] = bool(modes) and all(modes)
        return self._without_grad[key]

    def _call_modes(self, node: cst.CSTNode, name: str, off: bool, modes: list[bool]) -> None:
        """Whether autograd is off at each call of `name` below `node` (`off`: it is at `node`)."""
        for child in child_nodes(node):
            inner = off
            if isinstance(child, cst.FunctionDef):
                inner = any(self._switches_off(decorator.decorator) for decorator in child.decorators)
            elif isinstance(child, cst.With) and any(self._switches_off(item.item) for item in child.items):
                inner = True
            elif isinstance(child, cst.Call) and called_name(child) == name:
                modes.append(off)
            self._call_modes(child, name, inner, modes)

    def _switches_off(self, expr: cst.BaseExpression) -> bool:
        return self.ctx.grad_mode.switch_effect(expr) in (GradState.DISABLED, GradState.UNKNOWN)

    def _model_call_in(
        self, function: cst.FunctionDef, models: dict[str, str], depth: int,
    ) -> tuple[cst.Call, str] | None:
        """The first call in `function` (or a helper it calls) of a model in `models` (its name
        there -> the evaluated model's name in the loop), with the loop's name; None where the
        function switches grad mode itself."""
        if not models or any(self.ctx.grad_mode.switch_effect(d.decorator) is not None for d in function.decorators):
            return None
        for call in self._calls_in_callers_mode(function.body):
            key = models.get(_model_key(call.func) or "")
            if key is not None:
                return call, key
            if depth < _HELPER_DEPTH:
                callee = self.ctx.loops.function_called(call, function)
                if callee is not None and callee is not function:
                    found = self._model_call_in(callee, self._bound_models(call, callee, models), depth + 1)
                    if found is not None:
                        return found
        return None

    def _calls_in_callers_mode(self, node: cst.CSTNode) -> Iterator[cst.Call]:
        """The calls below `node` that run in the grad mode of the function's caller: not inside a
        `with` that switches it, nor in nested functions."""
        for child in child_nodes(node):
            if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(child, cst.With) and any(
                self.ctx.grad_mode.switch_effect(item.item) is not None for item in child.items
            ):
                continue
            if isinstance(child, cst.Call):
                yield child
            yield from self._calls_in_callers_mode(child)

    @staticmethod
    def _bound_models(call: cst.Call, callee: cst.FunctionDef, models: dict[str, str]) -> dict[str, str]:
        """The models of `models` as `callee` sees them: the caller's `self.*` models in a method it
        calls on `self`, and the parameters the call passes a model to."""
        on_self = _is_method_of_self(call)
        bound = {key: model for key, model in models.items() if key.startswith("self.")} if on_self else {}
        parameters = list(callee.params.params)
        if on_self and parameters:
            parameters = parameters[1:]
        for position, arg in enumerate(call.args):
            if arg.star:
                break
            model = models.get(_model_key(arg.value) or "")
            if model is None:
                continue
            if arg.keyword is not None:
                bound[arg.keyword.value] = model
            elif position < len(parameters):
                bound[parameters[position].name.value] = model
        return bound

    def visit_Assign(self, node: cst.Assign) -> None:
        if is_constant_false(node.value) and any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad" for t in node.targets
        ):
            self._frames[-1].frozen = True

    def _mode_switch(self, call: cst.Call, method: str, receiver: cst.BaseExpression, frame: _Frame) -> None:
        target = _model_key(receiver)
        parent = self.ctx.parent
        if target is None and isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = dotted_name(parent.targets[0].target)  # `net = Net().eval()`
        if target is None:
            return
        mode = argument(call, 0, "mode")
        entering_eval = (method == "eval" and not call.args) or (
            method == "train" and isinstance(mode, cst.Name) and mode.value == "False"
        )
        if entering_eval:
            frame.evaluated[target] = frozenset(id(loop) for loop in enclosing_loops(self.ctx.ancestors))
        elif method == "train":
            frame.evaluated.pop(target, None)  # train(), train(True), or train(flag): not known to be eval

    def _grad_switch(self, call: cst.Call, frame: _Frame) -> None:
        if not isinstance(self.ctx.parent, cst.Expr):
            return  # a `with` item or decorator: the grad-mode analysis reads those
        mode = argument(call, 0, "mode")
        frame.grad_off = not is_constant_true(mode)  # `set_grad_enabled(flag)`: maybe off, stay quiet

    def _loop_after_eval(self, eval_loops: frozenset[int]) -> Loop | None:
        """The outermost loop around the call that the `.eval()` call is not inside, else the innermost."""
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops:
            return None
        for loop in reversed(loops):
            if id(loop) not in eval_loops:
                return loop
        return loops[0]
