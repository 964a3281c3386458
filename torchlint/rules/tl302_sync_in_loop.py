from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst

from torchlint.analysis.dataflow import assigned_names, bound_by_comprehension, comprehension_targets, target_names
from torchlint.analysis.loops import ElementWalk, Loop, element_walk, is_limited, is_throttle
from torchlint.analysis.names import (
    called_name, dotted_name, is_name, isinstance_check, method_name, positional_args, suite_statements,
)
from torchlint.analysis.tensor_evidence import TensorEvidence, places_on_accelerator
from torchlint.diagnostics import Severity
from torchlint.positions import StatementPositions
from torchlint.reports import RelatedNode
from torchlint.rule import Rule
from torchlint.walker import child_nodes, nodes_in_order

# `.numpy()` is none: on an accelerator it raises (TL303), on the CPU it copies nothing; after
# `.cpu()` the copy is that call's.
_SYNC_METHODS = frozenset({"item", "tolist", "cpu"})
# Copies of a whole tensor to the host (not the read of one number).
_WHOLE_TENSOR_COPIES = frozenset({"tolist", "cpu"})
# What `isinstance(x, ...)` names to prove `x` a sequence of tensors, not a tensor.
_SEQUENCE_TYPES = frozenset({"list", "tuple"})
_SYNC_BUILTINS = frozenset({"float", "int", "bool"})
# Calls that only record or show a value: a sync feeding them every step is avoidable.
_SINKS = frozenset(
    {"print", "append", "extend", "update", "add", "log", "log_dict", "log_metrics", "info", "debug",
     "warning", "write", "add_scalar", "add_scalars", "add_histogram", "set_postfix", "set_postfix_str",
     "set_description", "format", "record", "put", "insert"}
)
# Wrappers the value passes through on its way to the consumer.
_TRANSPARENT_CALLS = frozenset(
    {"round", "float", "int", "abs", "str", "dict", "detach", "item", "tolist", "numpy", "cpu", "sum", "mean", "list"}
)
_TRANSPARENT = (
    cst.BinaryOperation, cst.UnaryOperation, cst.FormattedStringExpression, cst.FormattedString,
    cst.Element, cst.List, cst.Tuple, cst.DictElement, cst.Dict, cst.Arg, cst.Set,
)
_CONTAINERS = (cst.Dict, cst.List, cst.Set, cst.FormattedString, cst.BaseComp)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# How many locals a synced value is followed through (`v = loss.item(); total = v * n; log(total)`).
_MAX_LOCALS = 3


@dataclass
class _Repetition:
    """A loop or comprehension around the sync, and what it tells about the values in it."""

    node: Loop | cst.BaseComp
    walk: ElementWalk | None
    throttled: bool  # the sync sits under a throttle (`if step % N == 0:`) inside this repetition
    elements: bool = False  # it walks over tensors or parameters


@dataclass
class _Known:
    tensors: set[str] = field(default_factory=set)
    # Values of a dict of unknown content: tensors when `.item()` is called on them.
    dict_values: set[str] = field(default_factory=set)


class SyncInLoop(Rule):
    """
    ## What it does
    Flags `.item()`, `.tolist()`, `.cpu()` (also as `.cpu().numpy()`) and `float(t)` / `int(t)` /
    `bool(t)` on a tensor, where the call runs on every iteration of a training step loop (one whose iteration
    calls `backward()` or an optimizer `step()`, also a GAN loop with several optimizers) or of a
    loop or comprehension over the elements of a tensor (`for row in t`, `range(len(t))`,
    `range(t.size(0))`, `zip(t1, t2)`) or over `model.parameters()` / `named_parameters()`; a
    walk over a dict of tensors (`{k: v.item() for k, v in metrics.items()}`) only inside a step
    loop: on its own, its first read waits for the queued work and the others copy a number
    each. A sync in a function or method
    of the file (`train_step`, `compute_metrics`) that a training loop calls on every step, not
    under a throttle, runs once per step too: it is reported in the helper, naming the loop's row
    (returning the synced value to the loop counts as recording it). A tensor read again later in
    the same iteration (`state.output = loss.item()` then `losses.append(loss.item())`) is reported
    once, at its first read: the second waits for nothing. So is one whose truth the iteration
    tested before (`if not torch.isfinite(loss): raise ...`, `assert not loss.isnan().any()`,
    `if loss > limit:`, also the `if` the read is under: `if pred != blank: hyp.append(int(pred))`),
    also scaled by a number since (`loss = loss / len(batch_group)`): that
    test waited for it, and a later read for a progress bar copies a number (a test that reads
    nothing off the device, `if loss is None:`, does not count). So is another result of the op
    that made a tensor read before (`top_logp, pred = torch.max(logp, dim=-1)`, `pred` tested,
    then `float(top_logp)`): one kernel made both. So is a read after another statement of the
    iteration copied a tensor on the device to the host (`train.append(train_loss.cpu())` then
    `test.append(test_loss.cpu())`), when nothing the read uses was assigned since: the first copy
    waited for all the work queued before it, and is the one reported. So is a read under an
    `if` that tests any tensor on the device (`if last < best: best_points = points.cpu()`, an
    element compared too: `if scores[j] >= best - margin: hyp.append(tokens[j].item())`), when
    nothing the read uses was assigned since: that test waited for all the work queued
    before it; and a read of a
    tensor whose truth a later statement of the iteration tests (`if verbose:
    print(energy.item())` then `if torch.isclose(energy, last): break`): the iteration waits for
    it there anyway. Nor is a read after the iteration waited for the whole device
    (`torch.cuda.synchronize()` before reading the clock in a timing loop): the CPU stops there
    anyway.

    The sync happens where it is called, not where its result is used: a value synced every
    iteration and stored in a local that is only logged, accumulated or printed under
    `if step % 100 == 0:` is reported. A value is a tensor when torchlint sees it made by torch,
    when it is a module's output, a loss (`criterion(out, y)`, or anything `backward()` is called
    on), a batch moved with `.to(device)`, or computed from these.

    Not reported: whole tensors of a collection copied to the host one by one (`{k: v.cpu()
    for k, v in model.state_dict().items()}` for a checkpoint, a dict of stats converted with
    `.numpy()`, a per-task list under `if isinstance(scores, list):` or unpacked from what a
    network returned, `output, _ = self.network(x)` then `[t.cpu().numpy() for t in output]`):
    the copy is the point. A value Python needs every iteration (`if token.item() == eos: break`,
    `env.step(action.item())`, an index), a sync in the branch for one element of a loop
    (`if key == "batch":`) or in a branch that ends the loop (`if step >= max_steps: ...; break`,
    or `return`), a sync under a throttle (`if step % log_every == 0:`)
    or a limit (`if shown < 3: shown += 1; print(...)`),
    once per epoch after the inner batch loop or in the loop's `else`, a loop over a `DataLoader`
    or dataset (it walks over batches, even of tensors moved to the device), tensors known to be on the
    CPU, and any file that never places anything on an accelerator (no `.cuda()`, `.to(device)`,
    `device=`, model moved or prepared): there the tensors live on the CPU and reading them costs
    no sync.

    ## Why is this bad?
    Each of these copies a value from the accelerator to the host and blocks the CPU until every
    queued kernel has finished. Once per step it stops the CPU from running ahead to queue the next
    step's work, so the GPU idles between steps; per element it serialises the whole loop.
    The results are right, only slower: a note, which fails a run only under `fail-on = "note"`.

    ## Example
    ```python
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        running_loss += loss.item()
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        ...
        running_loss += loss.detach()
        if step % log_every == 0:
            print(running_loss.item() / (step + 1))
    ```
    """

    code = "TL302"
    name = "sync-in-loop"
    summary = "Host-device sync (.item(), .cpu(), float(t)...) every iteration of a training or per-element loop"
    severity = Severity.NOTE

    @cached_property
    def _evidence(self) -> TensorEvidence | None:
        """None when the file never places anything on an accelerator: no sync to report there."""
        return TensorEvidence(self.ctx) if places_on_accelerator(self.ctx.source) else None

    def visit_Call(self, node: cst.Call) -> None:
        operand = self._synced_operand(node)
        if operand is None or self._evidence is None:
            return
        chain = list(self.ctx.ancestors)
        repetitions = self._repetitions(node, chain)
        if not repetitions:
            self._check_step_helper(node, operand, chain)
            return
        known = self._known(repetitions)
        found = self._per_iteration(repetitions)
        if found is None or _moves_each_tensor(node, found, chain):
            return
        body = found.node if isinstance(found.node, cst.BaseComp) else found.node.body
        if self._read_before(operand, chain, found.node) or self._tested_later(operand, chain, found.node) \
                or self._waited_before(operand, chain, found.node, known) \
                or self._device_synced_before(chain, found.node) \
                or not self._synced_tensor(node, operand, known) \
                or not self._only_recorded(node, chain, body, 0):
            return
        self.report(
            node,
            f"`{_shown(node)}` synchronises with the device on every iteration of this {_describe(found)}; "
            "accumulate on the device (`.detach()`) and read the value once after the loop or every N steps",
        )

    def _check_step_helper(self, node: cst.Call, operand: cst.BaseExpression, chain: list[cst.CSTNode]) -> None:
        """A sync in a function of the file (`train_step`, `compute_metrics`) that a training loop
        calls on every step: it runs once per step, like one written in the loop."""
        function = next((parent for parent in reversed(chain) if isinstance(parent, _SCOPES)), None)
        if not isinstance(function, cst.FunctionDef) or _throttled(node, chain):
            return
        calls = self.ctx.loops.per_step_calls(function)
        if not calls:
            return
        known = frozenset(self.ctx.loops.body(function).backward_subjects())
        if not self._evidence.on_device(operand, known) or not self._only_recorded(node, chain, function.body, 0, True):
            return
        loop, call = calls[-1]
        self.report(
            node,
            f"`{_shown(node)}` synchronises with the device on every step of the training loop at row "
            f"{self._row(loop)}, which calls `{called_name(call)}(...)` each iteration; return the tensor "
            "(`.detach()`) and read it once after the loop or every N steps",
            related=(RelatedNode(call, "called here, once per step of the training loop"),),
        )

    @cached_property
    def _positions(self) -> StatementPositions:
        return StatementPositions(self.ctx.module, self.ctx.source)

    def _row(self, node: cst.CSTNode) -> int:
        return self._positions.range_of(node, ()).start.line

    # What is synced ------------------------------------------------------------------------

    def _read_before(self, operand: cst.BaseExpression, chain: list[cst.CSTNode], repeated: cst.CSTNode) -> bool:
        """An earlier statement of the iteration synced the same tensor, not assigned since
        (`state.output = loss.item()` then `losses.append(loss.item())`, or tested its truth:
        `if not torch.isfinite(loss): raise ...`), or another result of the op that made it
        (`top_logp, k = torch.max(logp, dim=-1)` then `int(k)`: one kernel made both): the wait
        was there. The blocks around the call are searched out to the body of `repeated`, the
        loop or comprehension."""
        if not isinstance(operand, cst.Name) or bound_by_comprehension(chain, operand.value):
            return False  # a comprehension's variable is another tensor each time round
        since: list[cst.CSTNode] = []
        for statement in _earlier_statements(chain, repeated, tests=True):
            if not isinstance(statement, cst.BaseExpression) and operand.value in assigned_names([statement]) \
                    and not _scaled_by_a_number(statement, operand.value):
                siblings = _unpacked_with(statement, operand.value)
                return any(self._reads(later, sibling) for later in since for sibling in siblings)
            if self._reads(statement, operand.value):
                return True
            since.append(statement)
        return False

    def _reads(self, statement: cst.CSTNode, name: str) -> bool:
        """`statement`, or the test of an `if` around the call (an expression), reads tensor `name`
        on the host."""
        if isinstance(statement, cst.BaseExpression):
            return _tests_tensor(statement, name)
        return self._syncs(statement, name)

    def _waited_before(
        self, operand: cst.BaseExpression, chain: list[cst.CSTNode], repeated: cst.CSTNode, known: _Known
    ) -> bool:
        """An earlier point of the iteration waited for all the work queued on the device, and
        nothing the operand reads is assigned since: the `if` the call is under tests the truth of
        a tensor on the device (`if last_u < best_u: best_x = x.detach().cpu()`), or an earlier
        statement, run every time, copies another tensor on the device to the host
        (`train.append(torch.sqrt(train_loss).cpu())` then `test.append(torch.sqrt(test_loss).cpu())`,
        the first copy being the one reported). This copy waits for nothing more."""
        read = {node.value for node in (operand, *nodes_in_order(operand)) if isinstance(node, cst.Name)}
        tensors = frozenset(known.tensors)
        for statement in _earlier_statements(chain, repeated, tests=True):
            if isinstance(statement, cst.BaseExpression):
                if any(self._evidence.on_device(tested, tensors) for tested in _tested_tensors(statement)):
                    return True
            elif read & set(assigned_names([statement])):
                return False
            elif isinstance(statement, cst.SimpleStatementLine) and any(
                    (synced := self._synced_operand(node)) is not None and self._synced_tensor(node, synced, known)
                    for node in nodes_in_order(statement) if isinstance(node, cst.Call)):
                return True
        return False

    def _tested_later(self, operand: cst.BaseExpression, chain: list[cst.CSTNode], repeated: cst.CSTNode) -> bool:
        """A later statement of the iteration tests the truth of the same tensor, not assigned
        in between (`if verbose: print(u.item())` then `if torch.isclose(u, last_u): break`):
        Python needs that value every iteration, so the iteration waits for it anyway."""
        if not isinstance(operand, cst.Name) or bound_by_comprehension(chain, operand.value):
            return False
        for statement in _later_statements(chain, repeated):
            test = statement.test if isinstance(statement, (cst.If, cst.While)) else _asserted(statement)
            if test is not None and _tests_tensor(test, operand.value):
                return True
            if operand.value in assigned_names([statement]):
                return False
        return False

    def _device_synced_before(self, chain: list[cst.CSTNode], repeated: cst.CSTNode) -> bool:
        """An earlier statement of the iteration waits for the whole device (`torch.cuda.synchronize()`,
        `stream.synchronize()`): the iteration stops the CPU there anyway, as a timing loop does."""
        return any(
            isinstance(node, cst.Call) and self._waits_for_device(node)
            for statement in _earlier_statements(chain, repeated) for node in nodes_in_order(statement)
        )

    def _waits_for_device(self, call: cst.Call) -> bool:
        callee = self.ctx.callee(call)
        return callee in _DEVICE_SYNCHRONIZE or callee is None and method_name(call) == "synchronize"

    def _syncs(self, statement: cst.CSTNode, name: str) -> bool:
        """`statement` reads tensor `name` on the host: `name.item()`, or `if` / `assert` on its truth."""
        nodes = list(nodes_in_order(statement))
        if any(isinstance(node, cst.BaseComp) and name in comprehension_targets(node) for node in nodes):
            return False  # read there under a comprehension's own name
        if isinstance(statement, (cst.If, cst.While)) and _tests_tensor(statement.test, name):
            return True
        for call in (node for node in nodes if isinstance(node, cst.Call)):
            synced = self._synced_operand(call)
            if isinstance(synced, cst.Name) and synced.value == name:
                return True
        return any(isinstance(node, cst.Assert) and _tests_tensor(node.test, name) for node in nodes)

    def _synced_operand(self, call: cst.Call) -> cst.BaseExpression | None:
        func = call.func
        if isinstance(func, cst.Attribute):
            if func.attr.value not in _SYNC_METHODS or call.args:
                return None
            receiver = func.value
            # Report a chain once, at its first sync: `x.cpu().numpy()` is one copy.
            inner = receiver
            while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
                if inner.func.attr.value in _SYNC_METHODS:
                    return None
                inner = inner.func.value
            return receiver
        if isinstance(func, cst.Name) and func.value in _SYNC_BUILTINS and len(call.args) == 1:
            positional = positional_args(call)
            return positional[0].value if positional else None
        return None

    def _synced_tensor(self, call: cst.Call, operand: cst.BaseExpression, known: _Known) -> bool:
        names = frozenset(known.tensors)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "item":
            names |= known.dict_values  # `.item()` on a dict's value: the dict holds tensors
        return self._evidence.on_device(operand, names)

    # Where it repeats ----------------------------------------------------------------------

    def _repetitions(self, node: cst.CSTNode, chain: list[cst.CSTNode]) -> list[_Repetition]:
        """The loops and comprehensions whose every iteration runs `node`, innermost first."""
        found: list[_Repetition] = []
        throttled = False
        selected: set[str] = set()  # names an enclosing `if key == "batch":` compares to a constant
        leaves: type | None = None  # a branch around the sync ends with `break` (this loop) or `return` (all)
        child = node
        for parent in reversed(chain):
            if isinstance(parent, _SCOPES):
                break
            if isinstance(parent, cst.If) and child is parent.body and (is_throttle(parent.test) or is_limited(parent)):
                throttled = True
            elif isinstance(parent, cst.If) and child is parent.body:
                selected |= _compared_to_a_constant(parent.test)
                leaves = leaves or _last_exit(parent.body)
            elif isinstance(parent, (cst.For, cst.While)):
                if child is parent.body or (isinstance(parent, cst.While) and child is parent.test):
                    walk = element_walk(parent.target, parent.iter) if isinstance(parent, cst.For) else None
                    # A branch for one element (`if key == "batch":`) runs once per loop, not per element,
                    # and so does one that leaves the loop (`if done: ...; break`).
                    once = isinstance(parent, cst.For) and not selected.isdisjoint(target_names(parent.target))
                    found.append(_Repetition(parent, walk, throttled or once or leaves is not None))
                    if leaves is cst.Break:
                        leaves = None
            elif isinstance(parent, _COMPREHENSIONS) and child is not parent.for_in:
                clause = parent.for_in
                while clause is not None:
                    found.append(_Repetition(parent, element_walk(clause.target, clause.iter), throttled))
                    clause = clause.inner_for_in
            child = parent
        return found

    def _known(self, repetitions: list[_Repetition]) -> _Known:
        """Names known to hold tensors: what `backward()` is called on, loop elements of tensors."""
        known = _Known()
        loops = self.ctx.loops
        for repetition in reversed(repetitions):
            node = repetition.node
            if isinstance(node, (cst.For, cst.While)) and loops.is_training_loop(node):
                known.tensors |= loops.iteration(node).backward_subjects()
            walk = repetition.walk
            if walk is None:
                continue
            if walk.mapping is not None:
                # Not a walk that syncs per element: the first read waits for the queued work, the
                # others copy a value each. Only a step loop around it repeats the wait.
                target = known.tensors if self._holds_tensors(walk.mapping, known) else known.dict_values
                target.update(name for name, _ in walk.elements)
                continue
            tensors = [source for source in walk.sources if self._evidence.on_device(source, frozenset(known.tensors))]
            repetition.elements = walk.over_parameters or bool(tensors)
            known.tensors.update(
                name for name, source in walk.elements if source is None or any(source is t for t in tensors)
            )
        return known

    def _holds_tensors(self, mapping: cst.BaseExpression, known: _Known) -> bool:
        """A dict whose values are tensors: `{"loss": loss, "acc": acc}`."""
        made = self.ctx.values.resolve(mapping)
        if not isinstance(made, cst.Dict):
            return False
        names = frozenset(known.tensors)
        return any(
            isinstance(element, cst.DictElement) and self._evidence.on_device(element.value, names)
            for element in made.elements
        )

    def _per_iteration(self, repetitions: list[_Repetition]) -> _Repetition | None:
        """The innermost repetition that runs a training step or walks over tensor elements.

        An epoch loop whose steps all run in the batch loop inside it runs no step itself: a sync
        after the batch loop happens once per epoch.
        """
        for repetition in repetitions:
            if repetition.throttled:
                return None
            node = repetition.node
            if repetition.elements:
                return repetition
            if isinstance(node, (cst.For, cst.While)) and self.ctx.loops.is_training_loop(node) \
                    and self.ctx.loops.iteration(node).steps_each_iteration:
                return repetition
        return None

    # How the value is used -----------------------------------------------------------------

    def _only_recorded(
        self, node: cst.CSTNode, chain: list[cst.CSTNode], body: cst.CSTNode, depth: int, returned: bool = False,
    ) -> bool:
        """The synced value is only accumulated, stored or logged (not needed by Python right now).

        `chain` holds the ancestors of `node`, outermost first; `body` is the repetition's body.
        `returned`: returning the value counts as recording it (a step helper hands it to the loop).
        """
        child = node
        contained = False  # passed through a dict, list, comprehension or f-string
        for index in range(len(chain) - 1, -1, -1):
            parent = chain[index]
            if isinstance(parent, cst.Attribute) and parent.value is child:
                # `x.cpu().numpy()`, `loss.detach().item()`: continue from the outer call.
                outer = chain[index - 1] if index else None
                if isinstance(outer, cst.Call) and outer.func is parent and parent.attr.value in _TRANSPARENT_CALLS:
                    child = outer
                    continue
                return False
            if isinstance(parent, _TRANSPARENT) or _is_element_of(parent, child):
                contained = contained or isinstance(parent, _CONTAINERS)
                child = parent
                continue
            if isinstance(parent, cst.IfExp) and child is not parent.test:
                child = parent
                continue
            if isinstance(parent, cst.Call):
                name = called_name(parent)
                if name in _SINKS:
                    return True
                if name in _TRANSPARENT_CALLS:
                    child = parent
                    continue
                return False
            if isinstance(parent, cst.AugAssign):
                return parent.value is child
            if isinstance(parent, (cst.Assign, cst.AnnAssign)):
                return child is parent.value and self._stored(parent, contained, body, depth, returned)
            if isinstance(parent, cst.Return):
                return returned
            return False
        return False

    def _stored(
        self, assignment: cst.Assign | cst.AnnAssign, contained: bool, body: cst.CSTNode, depth: int, returned: bool,
    ) -> bool:
        """A container, an attribute or an item is a record; a local is one when every later read is."""
        targets = [t.target for t in assignment.targets] if isinstance(assignment, cst.Assign) else [assignment.target]
        if contained or any(isinstance(t, (cst.Subscript, cst.Attribute)) for t in targets):
            return True
        names = [t.value for t in targets if isinstance(t, cst.Name)]
        if len(names) != len(targets) or depth >= _MAX_LOCALS:
            return False
        return all(
            self._only_recorded(read, read_chain, body, depth + 1, returned)
            for name in names
            for read, read_chain in _reads_of(body, name, assignment)
        )


def _compared_to_a_constant(test: cst.BaseExpression) -> set[str]:
    """`key == "batch"`, `name == "bias" and ...`: the names the test pins to one value."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _compared_to_a_constant(test.left) | _compared_to_a_constant(test.right)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return set()
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return set()
    sides = (test.left, target.comparator)
    names = {side.value for side in sides if isinstance(side, cst.Name)}
    constant = any(isinstance(side, (cst.SimpleString, cst.Integer)) for side in sides)
    return names if constant else set()


# What waits for all the work queued on the device.
_DEVICE_SYNCHRONIZE = frozenset({"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.mps.synchronize",
                                 "torch.xpu.synchronize"})
# Predicates whose truth Python can only know by reading the tensor from the device.
_TRUTH_TESTS = frozenset({"isfinite", "isnan", "isinf", "any", "all", "isclose", "allclose", "equal"})


def _tests_tensor(test: cst.BaseExpression, name: str) -> bool:
    """`not torch.isfinite(loss)`, `loss.isnan().any()`, `loss > 1e4`: a test of the truth of a
    tensor made from `name`, which waits for it. `loss is None` reads nothing off the device."""
    return any(is_name(operand, name) for operand in _tested_tensors(test))


def _tested_tensors(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands whose truth `test` reads, if they are tensors: `loss` of `not
    torch.isfinite(loss)`, `loss.isnan().any()` or `loss > 1e4`, an element or a sum compared
    (`logp[j] >= best - beam`); none of `loss is None`."""
    while isinstance(test, cst.UnaryOperation):
        test = test.expression
    if isinstance(test, cst.Call):
        callee = test.func.attr.value if isinstance(test.func, cst.Attribute) else None
        if callee not in _TRUTH_TESTS:
            return []
        operands = [test.func.value] + [arg.value for arg in test.args]
        return [found for operand in operands
                for found in ([operand] if isinstance(operand, cst.Name) else _tested_tensors(operand))]
    if isinstance(test, cst.Comparison):
        if any(isinstance(target.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for target in test.comparisons):
            return []
        sides = [test.left, *(target.comparator for target in test.comparisons)]
        return [side for side in sides if isinstance(side, (cst.Name, cst.Subscript, cst.BinaryOperation))]
    return []


def _only_small(statement: cst.CSTNode) -> cst.BaseSmallStatement | None:
    """The one small statement of a line (`x = ...`, `assert ...`); None for a compound statement
    or a line of several joined by `;`."""
    return statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None


def _asserted(statement: cst.CSTNode) -> cst.BaseExpression | None:
    line = _only_small(statement)
    return line.test if isinstance(line, cst.Assert) else None


def _scaled_by_a_number(statement: cst.CSTNode, name: str) -> bool:
    """`loss = loss / len(batch_group)` (or `loss /= 4`): the tensor read before, scaled by a
    number on the host; reading it again waits for that one small kernel only."""
    small = _only_small(statement)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.BinaryOperation):
        target, value = small.targets[0].target, small.value
        scaled, by = value.left, value.right
    elif isinstance(small, cst.AugAssign):
        target, scaled, by = small.target, small.target, small.value
    else:
        return False
    is_number = isinstance(by, (cst.Integer, cst.Float)) or isinstance(by, cst.Call) and dotted_name(by.func) == "len"
    return isinstance(target, cst.Name) and target.value == name and isinstance(scaled, cst.Name) \
        and scaled.value == name and is_number


def _unpacked_with(statement: cst.CSTNode, name: str) -> list[str]:
    """The other names `statement` unpacks from one call together with `name` (`top_logp, k =
    torch.max(logp, dim=-1)`: `k` for `top_logp`)."""
    line = _only_small(statement)
    if not (isinstance(line, cst.Assign) and len(line.targets) == 1 and isinstance(line.value, cst.Call)):
        return []
    target = line.targets[0].target
    names = [element.value.value for element in target.elements if isinstance(element.value, cst.Name)] \
        if isinstance(target, (cst.Tuple, cst.List)) else []
    return [other for other in names if other != name] if name in names else []


def _earlier_statements(chain: list[cst.CSTNode], repeated: cst.CSTNode, tests: bool = False):
    """The statements before the node `chain` leads to, nearest first, in the blocks around it
    out to the body of `repeated` (the loop or comprehension); with `tests`, also the test of each
    `if` whose body holds it, where it runs."""
    for index in range(len(chain) - 1, chain.index(repeated), -1):
        block = chain[index - 1]
        if isinstance(block, cst.IndentedBlock):
            statements = list(block.body)
            yield from reversed(statements[:statements.index(chain[index])])
            around = chain[index - 2]
            if tests and isinstance(around, cst.Else) and index >= 3:
                around = chain[index - 3]  # `else:` of an `if`: its test ran too
            if tests and isinstance(around, cst.If) and around is not repeated:
                yield around.test


def _later_statements(chain: list[cst.CSTNode], repeated: cst.CSTNode):
    """The statements after the node `chain` leads to, in order, in the blocks around it out to
    the body of `repeated`: those the iteration runs after it, unless it leaves early."""
    for index in range(len(chain) - 1, chain.index(repeated), -1):
        block = chain[index - 1]
        if isinstance(block, cst.IndentedBlock):
            statements = list(block.body)
            yield from statements[statements.index(chain[index]) + 1:]


def _last_exit(body: cst.BaseSuite) -> type | None:
    """`cst.Break` or `cst.Return` when the block's last statement leaves the loop that way."""
    statements = suite_statements(body)
    last = statements[-1] if statements else None
    exit_statement = last.body[-1] if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else None
    if isinstance(exit_statement, (cst.Break, cst.Return)):
        return type(exit_statement)
    return None


def _throttled(node: cst.CSTNode, chain: list[cst.CSTNode]) -> bool:
    """Under a throttle or a limit inside its function (`if step % 100 == 0:`)."""
    child = node
    for parent in reversed(chain):
        if isinstance(parent, _SCOPES):
            return False
        if isinstance(parent, cst.If) and child is parent.body and (is_throttle(parent.test) or is_limited(parent)):
            return True
        child = parent
    return False


def _moves_each_tensor(call: cst.Call, repetition: _Repetition, chain: list[cst.CSTNode]) -> bool:
    """`{k: v.cpu() for k, v in state_dict.items()}`, `for k, v in stats.items(): stats[k] =
    v.numpy()`, `[x.cpu() for x in scores]` under `if isinstance(scores, list):` or of an element
    of what a call returned (`scores, _ = self.network(x)`): each tensor of a collection copied to
    the host is the transfer itself (a checkpoint, a conversion), which no accumulation on the
    device replaces."""
    walk = repetition.walk
    collection = walk is not None and (walk.over_parameters or walk.mapping is not None or _checked_sequence(walk, chain)
                                       or _unpacked_from_call(walk, chain))
    return (
        repetition.elements and collection
        and isinstance(call.func, cst.Attribute) and call.func.attr.value in _WHOLE_TENSOR_COPIES
    )


def _checked_sequence(walk: ElementWalk, chain: list[cst.CSTNode]) -> bool:
    """The walk's one source is a name that an enclosing `if isinstance(name, list):` (or tuple)
    proves a sequence: its elements are whole tensors, not a tensor's rows."""
    if len(walk.sources) != 1 or not isinstance(walk.sources[0], cst.Name):
        return False
    for parent, child in zip(chain, chain[1:]):
        checked = isinstance_check(parent.test) if isinstance(parent, cst.If) and child is parent.body else None
        if checked is not None and checked[0] == walk.sources[0].value:
            written = {dotted_name(element.value) for element in checked[1].elements} if isinstance(
                checked[1], cst.Tuple) else {dotted_name(checked[1])}
            if written and written <= _SEQUENCE_TYPES:
                return True
    return False


def _unpacked_from_call(walk: ElementWalk, chain: list[cst.CSTNode]) -> bool:
    """The walk's one source is a name the function unpacks from what a call returned
    (`output, _ = self.network(data)`): a module returns a list of per-task tensors as often as a
    tensor, and copying each element whole to the host says it holds whole tensors, not rows."""
    if len(walk.sources) != 1 or not isinstance(walk.sources[0], cst.Name):
        return False
    name = walk.sources[0].value
    function = next((node for node in reversed(chain) if isinstance(node, cst.FunctionDef)), None)
    return function is not None and any(
        isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
        and any(isinstance(target.target, (cst.Tuple, cst.List)) and name in target_names(target.target)
                for target in node.targets)
        for node in nodes_in_order(function.body))


def _shown(call: cst.Call) -> str:
    return f"{call.func.value}(...)" if isinstance(call.func, cst.Name) else f".{call.func.attr.value}()"


def _describe(repetition: _Repetition) -> str:
    node = repetition.node
    if repetition.elements:
        walk = repetition.walk
        what = "parameters" if walk is not None and walk.over_parameters else "tensor elements"
        return f"{'comprehension' if isinstance(node, cst.BaseComp) else 'loop'} over {what}"
    return "training loop"


def _is_element_of(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    """`child` is what a comprehension collects (its element, or a dict comprehension's key or value)."""
    if isinstance(parent, cst.DictComp):
        return child is parent.key or child is parent.value
    return isinstance(parent, _COMPREHENSIONS) and child is parent.elt


# Reads of a local --------------------------------------------------------------------------------


def _reads_of(body: cst.CSTNode, name: str, assignment: cst.CSTNode) -> list[tuple[cst.Name, list[cst.CSTNode]]]:
    """The reads of `name` that see the value `assignment` gives it, each with its ancestors.

    In the order of the loop body: the reads after the assignment up to the next binding, and,
    since the loop comes round again, the reads from the top of the body up to the first binding.
    """
    events: list[tuple[str, cst.CSTNode, list[cst.CSTNode]]] = []
    _scan(body, name, [], events)
    position = next((index for index, event in enumerate(events) if event[1] is assignment), None)
    if position is None:
        return []
    return _reads_until_binding(events[position + 1:]) + _reads_until_binding(events[:position])


def _reads_until_binding(events) -> list[tuple[cst.Name, list[cst.CSTNode]]]:
    reads = []
    for kind, node, chain in events:
        if kind == "bind":
            break
        reads.append((node, chain))
    return reads


def _scan(node: cst.CSTNode, name: str, chain: list[cst.CSTNode], events: list) -> None:
    """Appends ("read", Name, ancestors) and ("bind", statement, []) events for `name`, in order."""
    if isinstance(node, _SCOPES):
        return
    if isinstance(node, cst.Name):
        if node.value == name and _is_read(node, chain):
            events.append(("read", node, list(chain)))
        return
    chain.append(node)
    for child in child_nodes(node):
        _scan(child, name, chain, events)
    chain.pop()
    if _binds(node, name):
        events.append(("bind", node, []))


def _binds(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Assign):
        return any(name in target_names(target.target) for target in node.targets)
    if isinstance(node, (cst.AnnAssign, cst.For, cst.NamedExpr)):
        return name in target_names(node.target)
    return False


def _is_read(node: cst.Name, chain: list[cst.CSTNode]) -> bool:
    """Not an attribute's name, a keyword, or a name being bound."""
    child: cst.CSTNode = node
    for parent in reversed(chain):
        if isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
            child = parent
            continue
        if isinstance(parent, cst.Attribute):
            return child is not parent.attr
        if isinstance(parent, cst.Arg):
            return child is not parent.keyword
        if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.For, cst.CompFor, cst.AnnAssign, cst.NamedExpr)):
            return child is not parent.target
        return not isinstance(parent, (cst.AsName, cst.Param, cst.ImportAlias))
    return True
