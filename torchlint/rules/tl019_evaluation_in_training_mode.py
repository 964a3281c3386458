from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.names import dotted_name, method_name, nested_statement_lists
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# A function that evaluates, by its name: `evaluate`, `validate`, `val_epoch`, `test_model`.
_EVALUATING = re.compile(r"(^|_)(eval|evaluate|evaluation|validate|validation|valid|val|test|testing)(_|$)", re.I)
# What the function body does that says it trains, or handles the mode itself.
_HANDLES_MODE = re.compile(r"\.eval\(\)|\.train\(|\.backward\(|\.step\(|inference_mode|\.training\b")
# Layers whose behaviour differs in training mode; a file whose models have none is quiet.
# Words naming the layers that act differently in training (`SyncBatchNorm` holds `BatchNorm`),
# looked up as plain substrings: many times faster than one regex alternation over the source.
_MODE_LAYER_WORDS = ("Dropout", "dropout", "BatchNorm", "batch_norm")
# Models built by a library (their layers are out of sight): torchvision, timm, Hugging Face.
_LIBRARY_MODELS = re.compile(r"torchvision\.models|models\.\w+\(|timm\.create_model|from_pretrained|torch\.hub\.load")
_MODEL_WORDS = re.compile(r"(model|net|network|classifier|encoder|decoder|backbone)$", re.I)
# How many helpers between the `.eval()` and the evaluation are followed (`train` switching to
# eval mode, then calling `evaluate_loop`, which calls `evaluate`).
_CALLER_DEPTH = 2


class EvaluationInTrainingMode(Rule):
    """
    ## What it does
    Flags an evaluation function that runs a model in training mode: a function named like
    `evaluate`, `validate`, `val_epoch` or `test_model` whose loop calls a model (`model(x)`,
    `self.net(x)`), with no `backward()` or `step()` (it does not train), no `.eval()` or
    `.train(...)` of its own, and every call of it in the file reached with no `.eval()` before it
    in the calling function (or with a `.train()` after the last one: the usual `for epoch:
    train(...); validate(...)`), nor before every call of that function when it is a helper in
    between (`model.eval()`, then `evaluate_loop(model)`, which calls `evaluate`). A script's own
    evaluation block at the top level is flagged too: a loop that calls the model after the training
    loop, with no `.eval()` since (the tutorial's `# Test the model` block). The file must train a
    model (a training loop), and its models must have a layer that behaves differently in training:
    a `Dropout` or `BatchNorm` in a Module class of the file, or a model from a library
    (torchvision, timm, `from_pretrained`). Functions never called in the file, `test_*` functions
    of test files, and files that do not import torch are left alone.

    The counterpart of TL015 (eval mode never undone) and TL007 (eval without `no_grad`).

    ## Why is this bad?
    A model stays in training mode until `.eval()` is called. Evaluated in training mode, dropout
    still zeroes random activations (the metrics are noisy and too low) and batch norm uses the
    statistics of each test batch and updates its running averages from test data: the
    validation score is wrong, and the test set leaks into the model.

    ## Example
    ```python
    def validate(model, loader):
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct

    for epoch in range(epochs):
        train_one_epoch(model, train_loader)   # calls model.train()
        accuracy = validate(model, val_loader)
    ```

    ## Use instead
    ```python
    def validate(model, loader):
        model.eval()
        ...
    ```
    """

    code = "TL019"
    name = "evaluation-in-training-mode"
    summary = "A model evaluated while still in training mode: dropout and batch norm act as in training"
    severity = Severity.WARNING

    def leave_Module(self, node: cst.Module) -> None:
        if not self.ctx.imports.imports_module("torch"):
            return  # other frameworks' loops (MXNet's `net(X)` takes its mode from autograd.record)
        source = self.ctx.source
        if not any(word in source for word in _MODE_LAYER_WORDS) and not _LIBRARY_MODELS.search(source):
            return
        if not self.ctx.loops.training_loops():
            return
        test_file = self.ctx.is_test_file
        self._evaluated_at_top_level(node)
        functions = _every_function(node)
        for function in functions:
            name = function.name.value
            if not _EVALUATING.search(name) or (test_file and name.startswith("test")):
                continue
            if _HANDLES_MODE.search(self.ctx.module.code_for_node(function.body)):
                continue
            model_call = self._model_call_in_loop(function)
            if model_call is None:
                continue
            calls = _modes_at_calls(functions + [node], name)
            if calls and not any(calls):
                model = self.ctx.code_for(model_call.func)
                self.report(
                    model_call,
                    f"`{name}` runs `{model}` in training mode: no `.eval()` here nor before its calls, so dropout "
                    f"stays on and batch norm learns from this data; call `{model}.eval()` at its start (and "
                    "`.train()` again before training)",
                )

    def _evaluated_at_top_level(self, module: cst.Module) -> None:
        """A script's `# Test the model` block after its training loop: a loop over data that
        calls the model, with no `.eval()` since the training."""
        trained = evaluating = False
        for statement in module.body:
            if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                continue
            loops = [statement] * isinstance(statement, (cst.For, cst.While)) + _own_nodes(statement, (cst.For, cst.While))
            if any(self.ctx.loops.is_training_loop(loop) for loop in loops):
                trained, evaluating = True, _last_mode(statement) == "eval"
            elif trained and not evaluating and loops and not _HANDLES_MODE.search(self.ctx.code_for(statement)):
                model_call = self._model_call_in_loop(statement)
                if model_call is not None:
                    model = self.ctx.code_for(model_call.func)
                    self.report(
                        model_call,
                        f"`{model}` is evaluated here in training mode: no `.eval()` since the training loop, so "
                        f"dropout stays on and batch norm learns from this data; call `{model}.eval()` first",
                    )
            else:
                mode = _last_mode(statement)
                evaluating = evaluating if mode is None else mode == "eval"

    def _model_call_in_loop(self, root: cst.CSTNode) -> cst.Call | None:
        body = root.body if isinstance(root, cst.FunctionDef) else root
        for loop in [root] * isinstance(root, (cst.For, cst.While)) + _own_nodes(body, (cst.For, cst.While)):
            for call in _own_nodes(loop.body, (cst.Call,)):
                written = dotted_name(call.func)
                if written is None or method_name(call) is not None and not written.startswith("self."):
                    continue
                if _MODEL_WORDS.search(written.rsplit(".", 1)[-1]) or self.ctx.kinds.is_module(call.func):
                    return call
        return None


def _mode_switch(call: cst.Call) -> str | None:
    """`"eval"` for `model.eval()`, `"train"` for `model.train(...)`, else None."""
    called = method_name(call)
    if called == "eval" and not call.args:
        return "eval"
    return "train" if called == "train" else None


def _last_mode(statement: cst.CSTNode) -> str | None:
    """`"eval"` or `"train"`: the last mode switch the statement makes (None: none)."""
    modes = [mode for call in _own_nodes(statement, (cst.Call,)) if (mode := _mode_switch(call)) is not None]
    return modes[-1] if modes else None


def _own_nodes(root: cst.CSTNode, kinds: tuple) -> list:
    """The nodes of these kinds under `root`, in source order, nested functions left out."""
    return [node for node in nodes_in_order(root) if isinstance(node, kinds)]


def _every_function(module: cst.Module) -> list[cst.FunctionDef]:
    """Every function of the module, methods and nested functions too."""
    found, pending = [], [module]
    while pending:
        scope = pending.pop(0)
        inner = [node for node in nodes_in_order(scope) if isinstance(node, (cst.FunctionDef, cst.ClassDef))]
        found += [node for node in inner if isinstance(node, cst.FunctionDef)]
        pending += inner
    return found


def _modes_at_calls(scopes: list, name: str, depth: int = 0) -> list[bool]:
    """For each call of `name` in the scopes: whether the model is in evaluation mode there, an
    `.eval()` before it in its function, or, for a helper that switches nothing itself
    (`evaluate_loop` calling `evaluate`), before every call of that helper."""
    found: list[bool] = []
    for scope in scopes:
        modes = _calls_in_mode(scope, name)
        if modes and not all(modes) and isinstance(scope, cst.FunctionDef) and depth < _CALLER_DEPTH \
                and scope.name.value != name:
            outer = _modes_at_calls(scopes, scope.name.value, depth + 1)
            if outer and all(outer):
                modes = [True] * len(modes)
        found += modes
    return found


def _calls_in_mode(scope: cst.CSTNode, name: str) -> list[bool]:
    """For each call of `name` (or `self.name`) in the scope's own statements, in order: whether
    an `.eval()` came before it with no `.train()` since."""
    found: list[bool] = []
    evaluating = False
    body = scope.body.body if isinstance(scope, cst.FunctionDef) and isinstance(scope.body, cst.IndentedBlock) else (
        scope.body if isinstance(scope, cst.Module) else [])
    pending = list(body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        nested = nested_statement_lists(statement)
        if nested:
            # The header runs first (`with torch.no_grad():`, `for x in loader:`), then the blocks.
            parts = [getattr(statement, attribute) for attribute in ("test", "iter") if hasattr(statement, attribute)]
            parts += list(getattr(statement, "items", ()))
            pending[:0] = [inner for block in nested for inner in block]
        else:
            parts = [statement]
        for part in parts:
            for call in [part] * isinstance(part, cst.Call) + _own_nodes(part, (cst.Call,)):
                mode = _mode_switch(call)
                if mode is not None:
                    evaluating = mode == "eval"
                elif dotted_name(call.func) in (name, f"self.{name}"):
                    found.append(evaluating)
    return found
