from __future__ import annotations

import libcst as cst

from torchlint.analysis.layer_sizes import LayerChains, Mismatch
from torchlint.analysis.nn_layers import nn_class_name
from torchlint.analysis.shape_checks import brief_code
from torchlint.diagnostics import Severity
from torchlint.positions import StatementPositions
from torchlint.rule import Rule


class LayerSizeMismatch(Rule):
    """
    ## What it does
    Flags a `torch.nn` layer whose input size cannot match the output of the layer before it,
    when both sizes are integer literals in the code:

    - `Linear(_, 256)` then `Linear(64, _)` (or `LSTM(64, ...)`, `LayerNorm(64)`, `BatchNorm1d(64)`);
    - `Conv2d(_, 32, ...)` then `BatchNorm2d(64)`, `GroupNorm(_, 64)` or `Conv2d(64, ...)`;
    - `Embedding(_, 300)` then `LSTM(256, ...)` / `GRU` / `RNN`, and an RNN's output (doubled when
      `bidirectional=True`; `batch_first` does not change it) then `Linear(n, _)`.

    Layers are chained in `nn.Sequential(...)` and in `forward`, where the layers built once in
    `__init__` are followed through `x = self.a(x); x = self.b(x)`, `self.b(self.a(x))`,
    `out, _ = self.lstm(x)` and `out[:, -1]`. Activations, dropout and norms in between keep the
    size; pooling and padding keep the channels. The finding is reported at the construction of
    the second layer and names the layer that gives the other size, with its row.

    Nothing is reported when a size comes from a variable or an expression, when a layer the
    analysis does not know (`Flatten`, a custom module, a `view`) sits in between, when the two
    layers read different axes (a `Conv2d` then a `Linear` reads the width, not the channels),
    or in a `forward` after a branch or loop.

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

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        written = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if written == "Sequential" and nn_class_name(self.ctx.callee(node)) == "Sequential":
            for mismatch in self._chains.sequential(node):
                self._report(mismatch)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.ctx.module_classes.is_module(node):
            for mismatch in self._chains.forward(node):
                self._report(mismatch)

    def _report(self, mismatch: Mismatch) -> None:
        if id(mismatch.layer) in self._reported:
            return
        self._reported.add(id(mismatch.layer))
        given = mismatch.given
        self.report(
            mismatch.layer,
            f"`{self._short(mismatch.layer)}` expects {mismatch.expected} {mismatch.unit}, but the layer before it, "
            f"`{self._short(given.source)}` (row {self._row(given.source)}), gives {given.size}{given.note}; "
            f"make the two sizes agree",
        )

    def _short(self, call: cst.Call) -> str:
        return brief_code(self.ctx, call, limit=60)

    def _row(self, node: cst.CSTNode) -> int:
        if self._positions is None:
            self._positions = StatementPositions(self.ctx.module, self.ctx.source)
        return self._positions.range_of(node, tuple(self.ctx.ancestors)).start.line
