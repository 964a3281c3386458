from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from torchlint.analysis.dataflow import target_names
from torchlint.analysis.module_values import builds_module, holds_module
from torchlint.analysis.modules import last_word, module_word, named_like_modules
from torchlint.analysis.names import (
    assigned_once, dotted_name, method_named, other_branch, parameter_named, positional_args,
)
from torchlint.analysis.tensor_facts.domain import ModuleValue
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# Libraries whose Module base replaces `__call__`: there `.forward` means something of its own.
_OWN_CALL_LIBRARIES = ("gpytorch.",)
# Module methods whose iteration yields submodules (`for m in self.children():`).
_SUBMODULE_ITERATORS = frozenset({"children", "modules"})
_NAMED_SUBMODULE_ITERATORS = frozenset({"named_children", "named_modules"})
# The parameters of a forward hook after the module: `(module, input, output)`,
# `(module, module_in, module_out)`, `(m, inputs, outputs)`.
_HOOK_INPUT = re.compile(r"_?(?:module_)?(?:in|inp|input|inputs|args)")
_HOOK_OUTPUT = re.compile(r"_?(?:module_)?(?:out|output|outputs|result)")
_LOSS_NAME = re.compile(r"loss|criterion", re.IGNORECASE)
# A module's own hook dicts, which only code that installs, detaches or replays hooks by hand reads.
_HOOK_DICTS = re.compile(r"\._forward(?:_pre)?_hooks\b")


class ForwardCalledDirectly(Rule):
    """
    ## What it does
    Flags `m.forward(x)` on a module where `m(x)` was meant: a `torch.nn` layer, an instance of a
    Module class of this file, a model built by a function of this file or by a model library
    (`torchvision.models.resnet18()`, `timm.create_model(...)`, `torch.hub.load(...)`), an attribute
    the class assigns a module (`self.backbone.forward(x)`), an element of a container of modules
    (`for layer in self.layers:`, `self.blocks[i]`, `self.children()`), and a name people give to
    modules (`model`, `encoder`, `netD`). Calls on `super()`, on a class (`Base.forward(self, x)`)
    and `self.forward(...)` are fine, and so is `torch.distributed.nn.RemoteModule`, whose `forward`
    is its documented remote call: in a file that uses `RemoteModule`, only a value known to be
    built as a module is reported. So it is for a name whose word (`net`) also names a class of the
    project that is no Module but has a `forward` of its own (`class NeuralNet:` of plain tensors,
    skorch's scikit-learn estimator `NeuralNet`): there `def evaluate(net, x)` may be given one. A
    model of another runtime named like a module (`self.net = cv2.dnn.readNetFromONNX(path)`, also a
    local `net` made an attribute by `self.__dict__.update(locals())`) is no Module either. Nor is a
    call in a class whose Module base replaces `__call__` (gpytorch's `Module`, or a base of the
    project that defines `__call__`), or on a parameter annotated with a gpytorch model type
    (`model: GPyTorchModel`): there calling a model means something else (a GP's posterior, a
    kernel's lazy tensor) and `.forward` is chosen. Inside a function the file registers as a
    forward hook (`register_forward_pre_hook(fn)`), or one written as a forward hook of the module
    it calls (`def __call__(self, module, module_in, module_out)` calling `module.forward(...)`,
    registered elsewhere), `.forward` is right: calling the module there would run the hook again,
    and so it is in a file that works a module's hook dicts by hand (`module._forward_hooks`,
    `_forward_pre_hooks`: installing, detaching or replaying hooks), which skips them on purpose. A
    module the function has just built and uses nowhere else (`loss = NMILoss(ref)` then `return
    loss.forward(x)`, or `BeamSearch(...).forward(x)` at once), or only to read and set its
    attributes (`m.weight.data = q`), has no hooks to skip: no other code could register one. Nor
    is a `.forward` call in one branch of an `if` whose other branch calls the module itself
    (`self._emb(**kw) if self.registered else self._emb.forward(**kw)`, as torchrec does for FX,
    which cannot trace a call of a module it does not hold): the author chose it there. Nor
    has a module in test code (a test module, or a module of a test folder), which builds what it
    calls, in the test or its `setUp`, often to test `forward` itself: it is not checked.

    ## Why is this bad?
    `nn.Module.__call__` runs the forward pre-hooks and hooks, backward hooks, and the machinery
    that libraries attach through them (pruning, quantization observers, FSDP, DeepSpeed,
    accelerate device placement, activation checkpointing wrappers). `m.forward(x)` skips all of
    it: results can silently differ from `m(x)`.

    ## Example
    ```python
    for layer in self.layers:
        x = layer.forward(x)
    ```

    ## Use instead
    ```python
    for layer in self.layers:
        x = layer(x)
    ```

    ## Severity
    A warning, except on a loss module, by its name (`self.ce_loss.forward(...)`,
    `self.criterion.forward(...)`) or its class (`self.ce = nn.CrossEntropyLoss()`,
    `self.vicreg_loss = VICRegLoss()`), as losses built from other losses call them: a hint
    (reported under `show-hints = true` or `--show-hints`). Nothing hooks into a loss as pruning,
    quantization observers and sharding do into layers, so the call seldom differs.

    ## Fix safety
    The fix rewrites `m.forward(x)` to `m(x)` and is unsafe: the module's hooks start running,
    which is the point, but changes what the call does when hooks are registered.

    Bug left in place: no, the hooks run. Computation changed: only where forward or full hooks are
    registered (they now run, as they were meant to).
    """

    code = "TL005"
    name = "forward-called-directly"
    summary = "`m.forward(x)` skips the module's hooks; call `m(x)`"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Per class: the `self.<name>` attributes assigned a module constructor.
        self._module_attributes: dict[int, set[str]] = {}
        self._own_call: dict[int, bool] = {}  # per class: does a Module base replace `__call__`?
        # The words of the project's classes named like modules that are none (`net` of `NeuralNet`).
        self._lookalike_words: set[str | None] | None = None

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.value, cst.Call):
            return
        target = node.targets[0].target
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
            return
        classdef = self.ctx.enclosing_class()
        if classdef is not None and builds_module(self.ctx, node.value):
            self._module_attributes.setdefault(id(classdef), set()).add(target.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "forward" or self.ctx.serves_tests:
            return  # a test builds the module it calls, with no hooks, often to test `forward` itself
        if self._handles_hooks:
            return  # the file works the hooks by hand: it skips them on purpose
        receiver = func.value
        if self._is_self_super_or_class(receiver, node) or not self._is_module(receiver):
            return
        if self.ctx.guards.in_version_gate(node) or self._in_forward_hook(receiver) or self._replaces_call() \
                or self._annotated_gp(receiver) or self._unseen_local(receiver) \
                or self._called_in_other_branch(node, receiver):
            return
        written = self.ctx.code_for(receiver)
        fix = FixSpec(f"Call `{written}(...)`", ((func, written),), Applicability.UNSAFE)
        if self._is_loss(receiver):
            self.report(node, f"`{written}.forward(...)` skips the module's hooks, which a loss seldom has; call "
                              f"`{written}(...)`", fix=fix, severity=Severity.HINT)
            return
        self.report(node, f"`{written}.forward(...)` skips the module's hooks; call `{written}(...)`", fix=fix)

    @cached_property
    def _handles_hooks(self) -> bool:
        return _HOOK_DICTS.search(self.ctx.source) is not None

    def _is_loss(self, receiver: cst.BaseExpression) -> bool:
        """A loss module, by its name (`self.ce_loss`, `criterion`) or its class (`nn.CrossEntropyLoss()`,
        `VICRegLoss()`): a function of its inputs that nothing hooks into, as pruning, observers and
        sharding do into layers."""
        if _LOSS_NAME.search(last_word(receiver) or ""):
            return True
        made = self.ctx.self_attributes.value_of(receiver) if isinstance(receiver, cst.Attribute) else None
        return isinstance(made, cst.Call) and (dotted_name(made.func) or "").endswith("Loss")

    def _called_in_other_branch(self, call: cst.Call, receiver: cst.BaseExpression) -> bool:
        """The other branch of the nearest `if` (or `... if ... else ...`) around the call calls the
        module itself (`self._emb(**kw) if self.registered else self._emb.forward(**kw)`): the
        author chose `.forward` for that case on purpose (a module that is not registered, which
        FX cannot trace as a call of a submodule)."""
        written = self.ctx.code_for(receiver)
        for parent, child in self.ctx.enclosing_with_child(call):
            if not isinstance(parent, (cst.IfExp, cst.If)):
                continue
            other = other_branch(parent, child)
            return other is not None and any(
                isinstance(node, cst.Call) and self.ctx.code_for(node.func) == written
                for node in (other, *nodes_in_order(other))
            )
        return False

    def _unseen_local(self, receiver: cst.BaseExpression) -> bool:
        """`module = NMILoss(...)` then `module.forward(x)`, the name used nowhere else in the
        function but to read or set the module's attributes (`m.weight.data = q`): no hook can
        be registered on a module no other code has seen (only global hooks would be skipped), so
        the call computes what `module(x)` does. A method called on it (`m.register_forward_hook`,
        `m.apply`) or the module handed on (`registry.append(m)`) shows it. So is a module built
        and called at once: `BeamSearch(...).forward(x)`."""
        if isinstance(receiver, cst.Call):
            return self._registers_no_hooks(receiver)
        function = self.ctx.enclosing_function()
        if not isinstance(receiver, cst.Name) or function is None:
            return False
        made = assigned_once(function, receiver.value)
        if not isinstance(made, cst.Call) or not self._registers_no_hooks(made):
            return False
        name = receiver.value
        nodes = list(nodes_in_order(function.body))
        methods = {id(node.func) for node in nodes if isinstance(node, cst.Call)}
        uses = sum(isinstance(node, cst.Name) and node.value == name for node in nodes)
        attribute_uses = sum(
            isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == name
            and id(node) not in methods for node in nodes
        )
        return uses - attribute_uses == 2  # the assignment and this call

    def _registers_no_hooks(self, made: cst.Call) -> bool:
        """Built by a `torch.nn` layer or by a Module class of this file whose code (and its file
        bases' code) registers no hook; a model from a factory may carry hooks its maker added."""
        if (self.ctx.callee(made) or "").startswith("torch.nn.") and builds_module(self.ctx, made):
            return True
        classes = {classdef.name.value: classdef for classdef in _classes_of(self.ctx.module)}
        pending, seen = [dotted_name(made.func)], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            classdef = classes.get(name)
            if classdef is None or "hook" in self.ctx.code_for(classdef.body):
                return False
            pending.extend(dotted_name(base.value) for base in classdef.bases if dotted_name(base.value) in classes)
        return builds_module(self.ctx, made)

    def _annotated_gp(self, receiver: cst.BaseExpression) -> bool:
        """A parameter annotated with a gpytorch model type (`model: GPyTorchModel`,
        `gp: gpytorch.models.ExactGP`): calling it gives the posterior, `.forward` the prior."""
        function = self.ctx.enclosing_function()
        if not isinstance(receiver, cst.Name) or function is None:
            return False
        param = parameter_named(function, receiver.value)
        if param is None or param.annotation is None:
            return False
        annotation = param.annotation.annotation
        written = self.ctx.qualified_name(annotation) or dotted_name(annotation) or ""
        return "gpytorch" in written.lower()

    def _replaces_call(self) -> bool:
        """In a class whose Module base replaces `__call__` (gpytorch's `Module`: calling a GP gives
        its posterior, a kernel a lazy tensor, and no hooks run), where `.forward` is chosen."""
        classdef = self.ctx.enclosing_class()
        if classdef is None:
            return False
        if id(classdef) not in self._own_call:
            self._own_call[id(classdef)] = self._base_replaces_call(classdef, frozenset())
        return self._own_call[id(classdef)]

    def _defines_call(self, base: str) -> bool:
        """A project base defines `__call__` (an instance attribute of that name is not called)."""
        fact = self.ctx.project.lookup(f"{base}.__call__")
        return fact is not None and fact.kind != "attribute"

    def _base_replaces_call(self, classdef: cst.ClassDef, seen: frozenset[str]) -> bool:
        for base in classdef.bases:
            written = dotted_name(base.value)
            qualified = self.ctx.qualified_name(base.value) or written or ""
            if qualified.startswith(_OWN_CALL_LIBRARIES) or self._defines_call(qualified):
                return True
            local = next((c for c in _classes_of(self.ctx.module) if c.name.value == written), None)
            if local is not None and written not in seen and (
                    method_named(local, "__call__") is not None or self._base_replaces_call(local, seen | {written})):
                return True
        return False

    def _in_forward_hook(self, receiver: cst.BaseExpression) -> bool:
        """Inside a function the file registers as a forward (pre-)hook, or one written as a
        forward hook of the receiver (`def __call__(self, module, module_in, module_out)` calling
        `module.forward`, registered by another file): calling the module there would run the hook
        again, so `.forward` is what it must call."""
        for function in self.ctx.ancestors:
            if isinstance(function, cst.FunctionDef) and (re.search(
                rf"register_(?:module_)?forward_(?:pre_)?hook\(\s*{re.escape(function.name.value)}\b", self.ctx.source
            ) or _hooks_receiver(function, receiver)):
                return True
        return False

    def _is_self_super_or_class(self, receiver: cst.BaseExpression, call: cst.Call) -> bool:
        if isinstance(receiver, cst.Call):
            return dotted_name(receiver.func) == "super"
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            return True
        last = last_word(receiver)
        if last is not None and last[:1].isupper():
            return True  # `Base.forward(self, x)`, `nn.LayerNorm.forward(self, x)`
        first = positional_args(call)[:1]
        return bool(first) and isinstance(first[0].value, cst.Name) and first[0].value.value == "self"

    def _is_module(self, receiver: cst.BaseExpression) -> bool:
        if self._built_as_module(receiver):
            return True
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            classdef = self.ctx.enclosing_class()
            if classdef is not None and receiver.attr.value in self._module_attributes.get(id(classdef), ()):
                return True
        if not self._name_is_proof(receiver):
            return False
        return holds_module(self.ctx, receiver) or isinstance(receiver, cst.Name) and self._element_of_modules(receiver.value)

    def _built_as_module(self, receiver: cst.BaseExpression) -> bool:
        """Proof from how the value was built; a parameter taken for a module by its name alone
        (`def run(net, x)`) is proof only where its name is."""
        if not holds_module(self.ctx, receiver, by_name=False):
            return False
        facts = self.ctx.tensors.facts(receiver)
        named_parameter = isinstance(facts, ModuleValue) and facts.from_caller and facts.kind is None
        return not named_parameter or self._name_is_proof(receiver)

    def _name_is_proof(self, receiver: cst.BaseExpression) -> bool:
        """A name people give to modules proves one, unless something else with a `forward` may
        be around: `RemoteModule`, whose `forward` is its API, or a class of the project named
        with the same word that is no Module (`net` where `class NeuralNet:` of plain tensors, or
        skorch's `NeuralNet` estimator, is defined)."""
        if "RemoteModule" in self.ctx.source:
            return False
        word = module_word(last_word(receiver) or "")
        if word is None:
            return True
        if self._lookalike_words is None:
            self._lookalike_words = {module_word(name) for name in self.ctx.project.lookalike_models()}
        return word not in self._lookalike_words

    def _element_of_modules(self, name: str) -> bool:
        """`layer` in `for layer in self.layers:`, `for i, m in enumerate(self.children()):`."""
        for node in reversed(self.ctx.ancestors):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if not isinstance(node, cst.For) or name not in target_names(node.target):
                continue
            iterable, names = node.iter, target_names(node.target)
            if isinstance(iterable, cst.Call) and dotted_name(iterable.func) == "enumerate" and iterable.args:
                iterable, names = iterable.args[0].value, names[1:]
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute):
                method = iterable.func.attr.value
                return method in _SUBMODULE_ITERATORS or (method in _NAMED_SUBMODULE_ITERATORS and names[-1:] == [name])
            container = names == [name] and isinstance(iterable, (cst.Name, cst.Attribute))
            return container and (named_like_modules(iterable) or holds_module(self.ctx, iterable, by_name=False))
        return False


def _classes_of(module: cst.Module) -> list[cst.ClassDef]:
    return [statement for statement in module.body if isinstance(statement, cst.ClassDef)]


def _hooks_receiver(function: cst.FunctionDef, receiver: cst.BaseExpression) -> bool:
    """`function` has a forward hook's signature, `(module, input, output)` after any `self`, and
    `receiver` is its module parameter."""
    names = [param.name.value for param in function.params.params]
    if names[:1] == ["self"]:
        names = names[1:]
    return len(names) == 3 and isinstance(receiver, cst.Name) and receiver.value == names[0] \
        and _HOOK_INPUT.fullmatch(names[1]) is not None and _HOOK_OUTPUT.fullmatch(names[2]) is not None
