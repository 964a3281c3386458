from __future__ import annotations

import libcst as cst

from torchlint.analysis.dataflow import assigned_names
from torchlint.analysis.loops import Kind, enclosing_loops
from torchlint.analysis.names import dotted_name, method_name, suite_statements
from torchlint.analysis.torch_api import looks_like_loss
from torchlint.diagnostics import Applicability, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# Calls whose result no longer carries the autograd graph.
_DETACHING_METHODS = frozenset({"item", "detach", "tolist", "numpy"})
_DETACHING_FUNCTIONS = frozenset({"float", "int", "round", "abs"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


class LossAccumulatedWithGraph(Rule):
    """
    ## What it does
    Flags `total += loss` (or `total = total + loss`), `losses.append(loss)` and
    `history[step] = loss` inside a loop that calls `.backward()` or an optimizer `step()`, when
    `loss` is the tensor the loop back-propagates (or the result of a loss function) and `total`,
    `losses` or `history` lives across iterations. Accumulating or storing `loss.item()`,
    `loss.detach()` or `float(loss)` is fine, and so are summing loss terms within one iteration,
    a list made in the same iteration, and a store under a literal key (`logs["loss"] = loss`),
    which replaces the previous step's entry. Gradient accumulation is fine too: a sum of losses
    that the loop back-propagates each iteration (without `retain_graph`), reset to a number
    inside the loop (`running_loss = 0` after the optimizer step), holds no saved activations
    and never more than a few steps' graph nodes. So are losses stored to be back-propagated
    later in the same function (`accelerator.backward(losses[i])`, `sum(losses).backward()`):
    their graphs are kept on purpose; and a loss detached right after its backward
    (`loss.backward()` then `loss = loss.detach()`, as gradient caching does).

    ## Why is this bad?
    `loss` carries its autograd graph, and so does `total` after the addition (or the list that
    holds it): every iteration's graph stays reachable until it is reset, so memory grows with
    each step (the first entry of PyTorch's FAQ on memory). The logged value does not need the
    graph.

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead
    ```python
        total_loss += loss.detach()  # or loss.item(), which synchronises every step
    ```
    and `losses.append(loss.detach())` for a list of step losses.

    ## Fix safety
    The fix adds `.detach()` and is unsafe: it changes behaviour if the accumulated value (or a
    stored loss) is back-propagated on purpose later. It keeps the tensor (on its device, no
    synchronisation); `.item()` is the better choice where the value is only printed.

    Bug left in place: no, the graph is released each step. Computation changed: only for code that
    back-propagates the stored or accumulated value later.
    """

    code = "TL003"
    name = "loss-accumulated-with-graph"
    summary = "Loss accumulated across iterations with its autograd graph: add .detach() or .item()"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name):
            self._check(node, node.target.value, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        """`losses.append(loss)`: a list that outlives the iteration keeps every step's graph."""
        if method_name(node) != "append" or len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
            return
        container = _container_name(node.func.value)
        stored = node.args[0].value
        if container is None or not isinstance(stored, cst.Name):
            return
        leaf = self._attached_loss([stored], container)
        if leaf is not None and not self._backpropagated_later(container):
            written = self.ctx.code_for(node.func.value)
            self.report(
                node,
                f"`{written}.append({leaf.value})` keeps the autograd graph of every step alive in "
                f"`{written}`; append `{leaf.value}.detach()` (or `.item()` when it is only logged)",
                fix=_detach_fix(leaf),
            )

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Subscript):
            self._check_store(node, target, value)
        elif (
            isinstance(target, cst.Name)
            and isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.Add)
            and isinstance(value.left, cst.Name)
            and value.left.value == target.value
        ):
            self._check(node, value.left.value, value.right)

    def _check_store(self, node: cst.Assign, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """`history[step] = loss`: a new entry per iteration (a literal key is overwritten instead)."""
        container = _container_name(target.value)
        index = target.slice[0].slice if len(target.slice) == 1 else None
        if container is None or not isinstance(index, cst.Index) or not isinstance(value, cst.Name):
            return
        if isinstance(index.value, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
            return
        leaf = self._attached_loss([value], container)
        if leaf is not None and not self._backpropagated_later(container):
            written = self.ctx.code_for(target.value)
            self.report(
                node,
                f"storing `{leaf.value}` in `{written}` every iteration keeps the autograd graph of every "
                f"step alive; store `{leaf.value}.detach()` (or `.item()` when it is only logged)",
                fix=_detach_fix(leaf),
            )

    def _check(self, node: cst.CSTNode, total: str, added: cst.BaseExpression) -> None:
        leaf = self._attached_loss(_name_leaves(added), total)
        if leaf is not None:
            self.report(
                node,
                f"`{total}` accumulates `{leaf.value}` with its autograd graph across iterations, "
                f"keeping every step's graph alive; add `{leaf.value}.detach()` (or `.item()`)",
                fix=_detach_fix(leaf),
            )

    def _attached_loss(self, leaves: list[cst.Name], total: str) -> cst.Name | None:
        """The first of `leaves` that is a loss still attached to its graph, when the current
        statement sits in a training loop and `total` lives across its iterations."""
        if not leaves:
            return None
        loops = enclosing_loops(self.ctx.ancestors)
        if not loops or not self.ctx.loops.is_training_loop(loops[0]) or self.ctx.grad_mode.is_disabled():
            return None
        if total in assigned_names(suite_statements(loops[0].body)) and self.ctx.values.value_of(total) is not None:
            return None  # reset earlier in this iteration: terms of one step, not a sum across steps
        subjects = self.ctx.loops.iteration(loops[0]).backward_subjects()
        if total in subjects:
            return None  # deliberate graph accumulation: the sum itself is back-propagated
        freed = self._freed_by_backward(loops[0])
        for leaf in leaves:
            value = self.ctx.values.value_of(leaf.value)
            if value is not None and _detached(value):
                continue
            if leaf.value in freed and _reset_in(loops[0], total):
                continue  # gradient accumulation: each graph is freed, the sum reset every step
            if _detached_after_backward(loops[0], leaf.value):
                continue  # `loss.backward()` then `loss = loss.detach()`: what is kept has no graph
            if leaf.value in subjects or (value is not None and looks_like_loss(value)):
                return leaf
        return None

    def _backpropagated_later(self, container: str) -> bool:
        """The function back-propagates what the container holds (`sum(losses).backward()`, or
        `loss = losses[i]` then `accelerator.backward(loss)`): the graphs are kept on purpose."""
        function = self.ctx.enclosing_function()
        if function is None:
            return False
        sources = {}
        for node in nodes_in_order(function.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                sources.setdefault(node.targets[0].target.value, []).append(node.value)
        for event in self.ctx.loops.body(function).of_kind(Kind.BACKWARD):
            if event.via or event.target is None:
                continue
            read = [event.target, *sources.get(event.target_text or "", ())]
            if any(_reads(expr, container) for expr in read):
                return True
        return False

    def _freed_by_backward(self, loop) -> set[str]:
        """The names this loop back-propagates each iteration without `retain_graph`: their
        graphs' saved tensors are freed at once, whatever else holds the tensor."""
        return {
            name for event in self.ctx.loops.iteration(loop).of_kind(Kind.BACKWARD)
            if not event.via and not event.conditional and (name := event.target_text)
            and not any(arg.keyword is not None and arg.keyword.value == "retain_graph" for arg in event.node.args)
        }


def _reset_in(loop, total: str) -> bool:
    """`total = 0` somewhere in the loop's body (after an optimizer step, say): what it holds
    never outlives a few iterations."""
    return any(
        isinstance(node, cst.Assign) and isinstance(node.value, (cst.Integer, cst.Float))
        and any(isinstance(t.target, cst.Name) and t.target.value == total for t in node.targets)
        for node in nodes_in_order(loop.body)
    )


def _detached_after_backward(loop, name: str) -> bool:
    """The loop back-propagates `name` only in blocks whose next use of it detaches it
    (`loss.backward()` then `loss = loss.detach()`, as gradient caching does): wherever it meets
    a backward, what the loop keeps afterwards holds no graph."""
    found = False
    for block in nodes_in_order(loop.body):
        if not isinstance(block, cst.IndentedBlock):
            continue
        statements = list(block.body)
        backward = next((i for i, statement in enumerate(statements) if _backpropagates(statement, name)), None)
        if backward is None:
            continue
        next_use = next((statement for statement in statements[backward + 1:] if _reads(statement, name)), None)
        if next_use is None or not _detaches(next_use, name):
            return False
        found = True
    return found


def _backpropagates(statement: cst.CSTNode, name: str) -> bool:
    """`name.backward(...)` as a statement of its own."""
    call = statement.body[0].value if isinstance(statement, cst.SimpleStatementLine) \
        and isinstance(statement.body[0], cst.Expr) else None
    return isinstance(call, cst.Call) and method_name(call) == "backward" and dotted_name(call.func.value) == name


def _detaches(statement: cst.CSTNode, name: str) -> bool:
    """`name = name.detach()` (or `.item()`, `float(name)`)."""
    assignment = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
    return isinstance(assignment, cst.Assign) and len(assignment.targets) == 1 \
        and dotted_name(assignment.targets[0].target) == name and _detached(assignment.value)


def _detach_fix(leaf: cst.Name) -> FixSpec:
    return FixSpec(f"Use `{leaf.value}.detach()`", ((leaf, f"{leaf.value}.detach()"),), Applicability.UNSAFE)


def _container_name(expr: cst.BaseExpression) -> str | None:
    """`losses` for `losses`, `history["train"]` or `self.losses`: the name whose lifetime matters."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return dotted_name(expr)


def _name_leaves(expr: cst.BaseExpression) -> list[cst.Name]:
    """The plain names an arithmetic expression adds up: `loss` in `loss * x.size(0)`."""
    if isinstance(expr, cst.Name):
        return [expr]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        return _name_leaves(expr.left) + _name_leaves(expr.right)
    return []


def _reads(expr: cst.BaseExpression, container: str) -> bool:
    return any(
        isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) == container
        for node in (expr, *nodes_in_order(expr))
    )


def _detached(value: cst.CSTNode) -> bool:
    if isinstance(value, cst.Call):
        if method_name(value) in _DETACHING_METHODS:
            return True
        return isinstance(value.func, cst.Name) and value.func.value in _DETACHING_FUNCTIONS
    if isinstance(value, cst.Attribute):
        return value.attr.value == "data"
    return isinstance(value, (cst.Integer, cst.Float, cst.Param))
