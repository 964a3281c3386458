"""Facts about the torch API shared by rules: which qualified names mean the same function."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.loops import name_hint
from torchlint.analysis.module_attributes import self_attribute
from torchlint.analysis.names import argument, keyword_arg, method_name, method_receiver, positional_args
from torchlint.analysis.project_facts import Note
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode

SOFTMAX_FUNCTIONS = frozenset(
    {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax"}
)
SIGMOID_FUNCTIONS = frozenset(
    {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit", "torch.Tensor.sigmoid"}
)
LOG_FUNCTIONS = frozenset({"torch.log", "torch.Tensor.log"})
# Layers whose output is an activation, and which one.
ACTIVATION_LAYERS = {"torch.nn.Softmax": "softmax", "torch.nn.LogSoftmax": "log_softmax", "torch.nn.Sigmoid": "sigmoid"}
# `torch.load` as imports name it.
LOAD_FUNCTIONS = frozenset({"torch.load", "torch.serialization.load"})
# Layers whose output are raw scores: a model ending in one returns logits, the values "logits".
SCORE_LAYERS = frozenset({"torch.nn.Linear", "torch.nn.LazyLinear", "torch.nn.Bilinear"})


def precision_severity(ctx, inverse: str) -> tuple[Severity, str]:
    """How much a manual `log(1 + x)` or `exp(x) - 1` matters, and the words that say why: a note
    where the file calls the precise inverse (`expm1`, `log1p`), whose author works with values near
    0 and loses them in the round trip; elsewhere a hint, as most code never sees an `x` small enough
    to tell the two apart."""
    if re.search(rf"\b{inverse}\(", ctx.source):
        return Severity.NOTE, f", which this file's `{inverse}` keeps"
    return Severity.HINT, ""


def call_matches(ctx, call: cst.Call, functions: frozenset[str], method: str | None) -> bool:
    """`call` is one of `functions` (through the imports) or the tensor method `method`."""
    qualified = ctx.callee(call)
    if qualified is not None:
        return qualified in functions
    return method is not None and method_name(call) == method


def torch_module_name(ctx) -> str | None:
    """A local name bound to the `torch` module, for code that a fix inserts."""
    names = ctx.imports.local_names_for("torch")
    return "torch" if "torch" in names else (names[0] if names else None)


def functional_module_name(ctx) -> str | None:
    """A local expression for `torch.nn.functional` usable in inserted code."""
    names = ctx.imports.local_names_for("torch.nn.functional")
    if names:
        return "F" if "F" in names else names[0]
    torch_name = torch_module_name(ctx)
    return f"{torch_name}.nn.functional" if torch_name else None


EXP_FUNCTIONS = frozenset({"torch.exp", "torch.Tensor.exp"})
SUM_FUNCTIONS = frozenset({"torch.sum", "torch.Tensor.sum"})

# Losses by the canonical qualified name of their function or module class.
CROSS_ENTROPY_LOSSES = frozenset({"torch.nn.functional.cross_entropy", "torch.nn.CrossEntropyLoss"})
NLL_LOSSES = frozenset({"torch.nn.functional.nll_loss", "torch.nn.NLLLoss", "torch.nn.NLLLoss2d"})
BINARY_CROSS_ENTROPY_LOSSES = frozenset({"torch.nn.functional.binary_cross_entropy", "torch.nn.BCELoss"})


def unary_operand(
    ctx, call: cst.Call, functions: frozenset[str], method: str | None, *, method_takes_args: bool = False
) -> cst.BaseExpression | None:
    """`x` for `torch.f(x, ...)` (one of `functions`) or for the tensor method `x.f()`.

    The method form needs a receiver that is not bound by an import (`np.log(x)` is numpy's), and
    no arguments unless `method_takes_args` (`x.sum(1)`).
    """
    qualified = ctx.callee(call)
    if qualified is not None:
        if qualified in functions:
            positional = positional_args(call)
            if positional:
                return positional[0].value
            by_keyword = keyword_arg(call, "input")
            return by_keyword.value if by_keyword is not None else None
        return None
    if method is None or method_name(call) != method or (call.args and not method_takes_args):
        return None
    return method_receiver(call)


def _canonical_module_class(qualified: str) -> str:
    """`torch.nn.CrossEntropyLoss` for `torch.nn.modules.loss.CrossEntropyLoss`."""
    if qualified.startswith("torch.nn.modules."):
        return "torch.nn." + qualified.rsplit(".", 1)[-1]
    return qualified


def called_function(ctx, call: cst.Call) -> str | None:
    """What a call computes, by qualified name, also for callable objects made elsewhere.

    `torch.nn.functional.cross_entropy` for `F.cross_entropy(...)`; the module class for
    `nn.CrossEntropyLoss()(...)`, and for `criterion(...)` or `self.criterion(...)` when that name
    was assigned `nn.CrossEntropyLoss(...)` (a local, or an attribute the class assigns once);
    the function for `loss_fn(...)` after `loss_fn = F.cross_entropy`.
    """
    qualified = ctx.callee(call)
    if qualified is not None:
        return _canonical_module_class(qualified)
    func = call.func
    made = callable_source(ctx, func)
    if made is None and isinstance(func, cst.Name):
        return None  # a local name assigned nothing known
    if isinstance(made, cst.Call):
        constructor = ctx.callee(made)
        return _canonical_module_class(constructor) if constructor is not None else None
    if isinstance(made, (cst.Name, cst.Attribute)):
        referenced = ctx.qualified_name(made)
        if referenced is not None:
            return _canonical_module_class(referenced)
    # `self.loss` set from `__init__(self, loss=nn.CrossEntropyLoss())`: the tensor facts know the
    # layer. Asked of `self.<name>` only: asking of every `x.view(...)` interprets every function.
    if self_attribute(func) is None:
        return None
    kind = getattr(ctx.tensors.facts(func), "kind", None)
    return _canonical_module_class(kind) if kind is not None else None


def callable_source(ctx, func: cst.BaseExpression) -> cst.BaseExpression | None:
    """What the callable `func` was made from: the value a local name was assigned, the value a
    `self.` attribute is assigned (None when either is unknown), or the expression itself
    (`nn.CrossEntropyLoss()(...)`)."""
    if isinstance(func, cst.Name):
        made = ctx.values.resolve(func)
        return None if made is func else made
    if isinstance(func, cst.Attribute):
        return ctx.self_attributes.value_of(func)
    return func


def loss_of_produced_input(
    ctx, call: cst.Call, producers: frozenset[str], method: str, losses: frozenset[str]
) -> tuple[str, cst.Call | None, cst.BaseExpression] | None:
    """For a call of one of `losses` whose first (`input`) argument is the result of one of
    `producers` (or of the tensor method `method`), written inline or held in a local, or a
    tensor the tensor facts know to hold that activation's values (returned by a helper, a
    method or a model's `forward`, indexed, unpacked): (what the call computes, see
    `called_function`; the producing call, None when it is not in sight; the argument as
    written). None otherwise."""
    if not call.args:
        return None
    written = argument(call, 0, "input")
    if written is None:
        return None
    # The loss first: asking the tensor facts of every call's argument would interpret every function.
    computed = called_function(ctx, call)
    if computed not in losses:
        return None
    producer = ctx.values.resolve(written)
    if not isinstance(producer, cst.Call) or not call_matches(ctx, producer, producers, method):
        if not holds_activation(ctx, written, method):
            return None
        producer = None
    return computed, producer, written


def holds_activation(ctx, expr: cst.BaseExpression, activation: str) -> bool:
    """The tensor facts know `expr` to hold the values of `activation` ("softmax", "sigmoid")."""
    return getattr(ctx.tensors.facts(expr), "activation", None) == activation


def taken_here(ctx, expr: cst.BaseExpression, activation: str, message: str | None = None) -> tuple:
    """A finding's evidence: where the `activation` whose values `expr` holds was taken (said
    with `message`, else "`softmax` taken here")."""
    site = getattr(ctx.tensors.facts(expr), "activated_by", None)
    if isinstance(site, Note):  # in a Module class of another file
        return ctx.project.related((site,), ctx.path)
    return (RelatedNode(site, message or f"`{activation}` taken here"),) if site is not None else ()


# Where a parameter is that a call in the project passes a tensor on the GPU.
PASSED_BY_A_CALLER = "on the GPU when a caller passes it there"


def passed_here(ctx, facts) -> tuple:
    """A finding's evidence: the call in the project that passes these tensor facts' parameter
    on the GPU (none for other tensors)."""
    passed_by = getattr(facts, "placed_by", None)
    return ctx.project.related((passed_by,), ctx.path) if passed_by is not None else ()


_LOSS_WORDS = ("loss", "criterion", "cross_entropy", "kl_div")


def looks_like_loss(value: cst.CSTNode) -> bool:
    """`criterion(out, y)`, `F.cross_entropy(...)`, `loss_fn(...)`, `outputs.loss`: a loss by its name."""
    if isinstance(value, cst.Attribute):
        return value.attr.value == "loss"
    if not isinstance(value, cst.Call):
        return False
    hint = name_hint(value.func)
    return any(word in hint for word in _LOSS_WORDS)
