from __future__ import annotations

import libcst as cst

from torchlint.analysis.layer_sizes import Input, LayerChains, Mismatch
from torchlint.analysis.model_inputs import ModelInputs
from torchlint.analysis.modules import last_word
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.analysis.shape_checks import brief_code, fed_examples, known_sizes, show
from torchlint.context import RelatedNode
from torchlint.diagnostics import Severity
from torchlint.positions import StatementPositions
from torchlint.rule import Rule, construction_note


class LayerSizeMismatch(Rule):
    """
    ## What it does
    Flags a `torch.nn` layer whose input size cannot match the output of the layer before it,
    when both sizes are integer literals in the code:

    - `Linear(_, 256)` then `Linear(64, _)` (or `LSTM(64, ...)`, `LayerNorm(64)`, `BatchNorm1d(64)`);
    - `Conv2d(_, 32, ...)` then `BatchNorm2d(64)`, `GroupNorm(_, 64)` or `Conv2d(64, ...)`;
    - `Embedding(_, 300)` then `LSTM(256, ...)` / `GRU` / `RNN`, and an RNN's output (doubled when
      `bidirectional=True`; `batch_first` does not change it) then `Linear(n, _)`.

    - `Flatten()` (or `torch.flatten(x, 1)`, `x.flatten(1)`, `x.view(x.size(0), -1)` in
      `forward`) then `Linear(n, _)`, when the model's input shape is known and the convolution
      and pooling arithmetic (kernel size, stride, padding, dilation, `ceil_mode`, adaptive
      output sizes, also `F.max_pool2d` in `forward`) gives another size than `n`. The input is
      known from a literal batch the file feeds the model (`model(torch.randn(1, 3, 32, 32))`,
      `x = torch.zeros(8, 1, 28, 28); net(x)`), `torchsummary.summary(model, (3, 32, 32))` /
      `torchinfo.summary(model, (1, 3, 32, 32))`, an `example_input_array` / `example_input`
      attribute, or the shape annotation of `forward`'s input. With that input known (in a file
      that flattens into a `Linear`), a first convolution whose channels or a first `Linear`
      whose features do not fit it is reported too (an RGB batch into `Conv2d(1, ...)`).

    Layers are chained in `nn.Sequential(...)` and in `forward`, where the layers built once in
    `__init__` are followed through `x = self.a(x); x = self.b(x)`, `self.b(self.a(x))`,
    `out, _ = self.lstm(x)` and `out[:, -1]`. Activations, dropout and norms in between keep the
    size; pooling and padding keep the channels. The finding is reported at the construction of
    the second layer and names the layer that gives the other size, with its row (for a flattened
    size: the product and the input it was computed for).

    Nothing is reported when a size comes from a variable or an expression, when a layer the
    analysis does not know (a custom module, `F.interpolate`, a `view` to other sizes) sits in
    between, when a model is fed inputs of different shapes, when the two layers read different
    axes (a `Conv2d` then a `Linear` reads the width, not the channels), or in a `forward` after
    a branch or loop.

    In `forward()`, a layer is also checked against the shape of the tensor it is called with,
    where the file's example input fixes it (see TL104 for where sizes come from): an
    `nn.Embedding(n, 128)` output into `nn.MultiheadAttention(embed_dim=256)` (as its query, or
    as its key or value, which must have `kdim` / `vdim` features, the embedding size unless
    given: a learned query of width 256 attending over 128-wide embeddings; its
    `key_padding_mask` must be (batch, key length)), `(B, T, E)`
    embeddings into `nn.Conv1d(E, ...)` without a permute (channels are dim 1), an
    `nn.AdaptiveAvgPool2d(1)` output into an `nn.Linear` without a flatten, a bidirectional
    GRU's two final states joined (`torch.cat([h_n[0], h_n[1]], -1)`) into an `nn.Linear` of the
    hidden width, an initial hidden state `h0` (or an LSTM's `(h0, c0)`) that is not
    `(num_layers * directions, batch, hidden_size)`, and a convolution or pooling window longer
    than the positions that reach it (three `nn.MaxPool1d(4)` over 21 frames leave 1 for the
    last: torch computes an output size of 0 and raises); also for each layer of an `nn.ModuleList`
    (`for conv in self.convs`), for a layer handed to a helper method
    (`self.conv_and_pool(x, conv)`), for what a submodule of a Module class of the file
    returns, a tuple included (`outputs, hidden = self.encoder(src)`, then
    `self.out(hidden[-1])`), and after an `nn.Sequential` of blocks of one Module class of the
    file that keep their input's shape (`nn.Sequential(ResidualBlock(c), ResidualBlock(c))`, or
    `nn.Sequential(*[Block(d) for _ in range(n)])`). A Module class of the file built in
    several places with different sizes (`Projection(16, 32)` feeding `Projection(64, 10)`) is
    checked once per construction. That finding is reported at the call, and names the layer's
    construction (and the class's, where only one construction fails); what the failing call
    would return is not checked again.

    ## Why is this bad?
    The model builds without complaint, and the first batch (after the data pipeline has loaded,
    often minutes into a run or on a remote GPU) raises `RuntimeError: mat1 and mat2 shapes
    cannot be multiplied (32x256 and 64x10)` or `expected input[32, 32, 8, 8] to have 64 channels`.

    ## Example
    ```python
    model = nn.Sequential(
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
    ```

    ## Use instead
    ```python
    model = nn.Sequential(
        nn.Linear(784, 256),
        nn.ReLU(),
        nn.Linear(256, 10),
    )
    ```
    """

    code = "TL103"
    name = "layer-size-mismatch"
    summary = "Consecutive layers whose sizes cannot chain: the first batch raises a shape error"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._chains = LayerChains(ctx)
        self._positions: StatementPositions | None = None
        self._reported: set[int] = set()
        # Known inputs are looked for only where a flattened size can meet a `Linear`.
        source = ctx.source
        self._inputs = ModelInputs(ctx) if "Linear" in source and _may_flatten(source) else None
        # Per function being walked: whether the file feeds its class example inputs, so that the
        # tensor-facts model knows the shapes its layers are called with.
        self._fed = [False]
        self._contradictions: list[tuple[cst.Call, tuple]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._fed.append(fed_examples(self.ctx, node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._fed.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._inputs is not None:
            self._inputs.assignment(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self._inputs is not None:
            self._inputs.call(node)
        if self._fed[-1] and isinstance(node.func, (cst.Attribute, cst.Name)):
            self._note_contradiction(node)
        if last_word(node.func) == "Sequential" and nn_class_name(self.ctx.callee(node)) == "Sequential":
            for mismatch in self._chains.sequential(node):
                self._report(mismatch)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.ctx.module_classes.is_module(node):
            for mismatch in self._chains.forward(node):
                self._report(mismatch)
            if self._inputs is not None:
                self._inputs.classdef(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._report_known_inputs()
        for call, found in self._contradictions:
            self._report_contradiction(call, *found)

    def _note_contradiction(self, call: cst.Call) -> None:
        """A layer call whose input the tensor facts know it cannot take: in their reading of the
        call, else in one construction's reading of its Module class (kept with the sizes that
        reading gives the layer's input, for the message)."""
        tensors = self.ctx.tensors
        found, made_at = tensors.layer_contradiction(call), None
        if found is None:
            for made_at in tensors.construction_readings():
                found = tensors.layer_contradiction(call)
                if found is not None:
                    break
        if found is not None:
            operand, _, _, contradiction = found
            original = known_sizes(tensors.facts(operand)) if contradiction.layer is not None else None
            self._contradictions.append((call, (*found, original, made_at)))

    def _report_contradiction(self, call: cst.Call, operand, sizes, config, contradiction, original,
                              made_at: cst.Call | None) -> None:
        """A layer called in a method with an input whose shape the example inputs fix (given to
        one construction of its class, `made_at`, where only that construction's reading knows it)."""
        built_by = config.built_by
        if built_by is None or id(built_by) in self._reported:
            return  # already reported where the layers chain
        self._reported.add(id(built_by))
        given = f"`{self._short(operand)}` has shape {show(sizes)} here"
        if original is not None and tuple(original) != tuple(sizes):
            # A layer inside an `nn.Sequential`: its input is what the layers before it made.
            given = f"the layers before it turn `{self._short(operand)}` of shape {show(original)} into {show(sizes)}"
        self.report(
            call,
            f"`{self._short(built_by)}` expects {contradiction.expected} {contradiction.what} in dim "
            f"{contradiction.dim}, but {given}; make the two sizes agree",
            related=(RelatedNode(built_by, f"built here, with {contradiction.expected} {contradiction.what}"),
                     *([construction_note(self.ctx, made_at)] if made_at is not None else [])),
        )

    def _report_known_inputs(self) -> None:
        if self._inputs is None:
            return
        for model, seed in self._inputs.known():
            if isinstance(model, cst.ClassDef):
                found = self._chains.forward(model, seed)
            else:
                found = self._chains.sequential(model, seed)
            for mismatch in found:
                self._report(mismatch)

    def _report(self, mismatch: Mismatch) -> None:
        if id(mismatch.layer) in self._reported:
            return
        self._reported.add(id(mismatch.layer))
        given = mismatch.given
        expects = f"`{self._short(mismatch.layer)}` expects {mismatch.expected} {mismatch.unit}"
        if given.origin is not None and given.source is given.origin.node:
            where = f"the input `{self._short(given.source)}` (row {self._row(given.source)}) has {given.size} {mismatch.unit}"
        elif given.origin is not None:
            where = (
                f"`{self._short(given.source)}` (row {self._row(given.source)}) gives "
                f"{given.formula + ' = ' if given.formula else ''}{given.size} "
                f"for the input {show(_sizes(given.origin))} at row {self._row(given.origin.node)}"
            )
        else:
            where = (
                f"the layer before it, `{self._short(given.source)}` (row {self._row(given.source)}), "
                f"gives {given.size}{given.note}"
            )
        self.report(mismatch.layer, f"{expects}, but {where}; make the two sizes agree", related=_notes(mismatch))

    def _short(self, call: cst.Call) -> str:
        return brief_code(self.ctx, call, limit=60)

    def _row(self, node: cst.CSTNode) -> int:
        if self._positions is None:
            self._positions = StatementPositions(self.ctx.module, self.ctx.source)
        return self._positions.range_of(node, tuple(self.ctx.ancestors)).start.line


def _may_flatten(source: str) -> bool:
    return "latten" in source or "size(0), -1" in source or "shape[0], -1" in source


def _sizes(seed: Input) -> tuple[str | None, ...]:
    return tuple(str(size) if size is not None else "B" for size in seed.shape)


def _notes(mismatch: Mismatch) -> list[RelatedNode]:
    """The layer (or flatten) that gives the other size, and the input it was computed for."""
    given = mismatch.given
    origin = given.origin
    if origin is not None and given.source is origin.node:
        return [RelatedNode(origin.node, f"the input has {given.size} {mismatch.unit} here")]
    notes = [RelatedNode(given.source, f"this gives {given.formula + ' = ' if given.formula else ''}{given.size}")]
    if origin is not None:
        notes.append(RelatedNode(origin.node, f"for the input {show(_sizes(origin))} given here"))
    return notes
