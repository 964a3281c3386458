from __future__ import annotations

import libcst as cst

from torchlint.analysis.layouts import int_value, shape_args
from torchlint.analysis.modules import last_word
from torchlint.analysis.names import argument, positional_args
from torchlint.analysis.shape_annotations import annotated_shape
from torchlint.analysis.values import string_value
from torchlint.analysis.shape_checks import (
    BROADCASTING_OPERATORS, batch_conflict, brief_code, broadcast_conflict, class_target_conflict, concat_conflict, differ,
    einsum_conflict, element_count_mismatch, fed_examples, known_sizes, literal, matmul_conflict, rank_conflict, show,
    silent_broadcast,
)
from torchlint.analysis.torch_api import (
    BINARY_CROSS_ENTROPY_LOSSES, CROSS_ENTROPY_LOSSES, NLL_LOSSES, called_function,
)
from torchlint.context import RelatedNode
from torchlint.diagnostics import Severity
from torchlint.rule import Rule, each_construction

_MATMULS = frozenset({"matmul", "mm", "bmm"})
# Methods whose `index` (the second argument) must have as many dims as the tensor.
_INDEXED_BY_TENSOR = frozenset({"gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
                                "scatter_reduce_"})
_MASKED = frozenset({"masked_fill", "masked_fill_"})
# Losses whose input and target shapes go together: class scores and targets, or elementwise.
_ELEMENTWISE_LOSSES = frozenset(
    f"torch.nn.{name}" for name in (
        "functional.mse_loss", "MSELoss", "functional.l1_loss", "L1Loss", "functional.smooth_l1_loss",
        "SmoothL1Loss", "functional.huber_loss", "HuberLoss",
    )
)
# Losses that raise unless the target has the input's size exactly (a ValueError, not a broadcast).
_SAME_SIZE_LOSSES = BINARY_CROSS_ENTROPY_LOSSES | frozenset(
    {"torch.nn.functional.binary_cross_entropy_with_logits", "torch.nn.BCEWithLogitsLoss"}
)
_SHAPED_LOSSES = CROSS_ENTROPY_LOSSES | NLL_LOSSES | _ELEMENTWISE_LOSSES | _SAME_SIZE_LOSSES
_CONCATS = {"torch.cat": "cat", "torch.concat": "cat", "torch.concatenate": "cat", "torch.stack": "stack"}
# `torch.distributions` classes and their parameters, which the constructor broadcasts together
# (`broadcast_all`): a RuntimeError when they cannot.
_BROADCAST_DISTRIBUTIONS = {
    **dict.fromkeys(("Normal", "LogNormal", "Laplace", "Cauchy", "Gumbel"), ("loc", "scale")),
    "Uniform": ("low", "high"), "Beta": ("concentration1", "concentration0"), "Gamma": ("concentration", "rate"),
    "StudentT": ("df", "loc", "scale"), "Weibull": ("scale", "concentration"), "Pareto": ("scale", "alpha"),
    "VonMises": ("loc", "concentration"), "FisherSnedecor": ("df1", "df2"),
}


class ShapeMismatch(Rule):
    """
    ## What it does
    Flags an op whose operand sizes the code shows and that cannot work:

    - `a @ b`, `torch.matmul`/`mm`/`bmm` (and the method forms) whose inner sizes differ, or
      whose batch dims cannot go together: `matmul` broadcasts them, `bmm` needs them equal
      (one `(1, S, D)` memory against `(6, T, D)` queries);
    - `gather` / `scatter` (and `scatter_add`, `scatter_reduce`, in place too) whose index has
      another number of dims than the tensor (`q.gather(1, actions)` with `(B, A)` values and
      `(B,)` actions);
    - `torch.cat` / `torch.stack` of tensors that differ in a dim other than the concatenated one
      (any dim for `stack`), or in their number of dims (a `(B,)` sum without `keepdim=True`
      joined to `(B, K)` scores);
    - `view` / `reshape` (method or `torch.reshape`) asking for another element count than the
      tensor has (`x.view(3, 5)` on a 4x4 tensor; with `-1`, or one size the tensor does not
      show, `view(B, 1, H, W)` with B unknown, a count that the other sizes do not divide);
    - `+ - * /` between tensors with two unequal sizes, neither 1, in the same position counted
      from the right;
    - `+ - * / == !=` between a model's or a layer's `(N, 1)` output (a critic's values, one
      logit per row, also after `> 0` or `.long()`, and beside other outputs:
      `logits, values = model(obs)`), a reduction's kept column
      (`logits.argmax(dim=1, keepdim=True)`) or a column made so (`torch.zeros(capacity, 1)`, and
      the rows a replay buffer's `sample()` takes of it), and an `(N,)` tensor: no error, torch
      broadcasts them to `(N, N)` (`returns - values`, `preds == labels`); a column made on
      purpose (`x[:, None] - x`) is not reported;
    - `torch.einsum` whose equation binds one subscript letter to two sizes (`"ij,jk->ik"` on a
      3x4 and a 5x6 tensor binds `j` to 4 and 5; a size of 1 broadcasts, `...` is followed);
    - `TensorDataset(inputs, targets)` whose tensors differ in dim 0, the number of examples
      (`series.unfold(0, W, 1)` makes N - W + 1 windows, `series[W:]` N - W targets);
    - a `torch.distributions` constructor (`Normal`, `LogNormal`, `Laplace`, `Cauchy`, `Gumbel`,
      `Uniform`, `Beta`, `Gamma`, `StudentT`, `Weibull`, `Pareto`, `VonMises`, `FisherSnedecor`)
      whose parameters cannot broadcast together (`Normal(mu, log_std.exp())` with a `(B, 3)`
      mean and an `(11,)` scale);
    - `scores.masked_fill(mask, ...)` whose mask cannot broadcast to the tensor (a `(B, T)`
      padding mask on `(B, H, T, T)` attention scores);
    - `cross_entropy` / `nll_loss` (and `nn.CrossEntropyLoss`, `nn.NLLLoss`) whose target does not
      fit the scores: class indices have the scores' shape without the class dim 1, so `(B, T, V)`
      logits against `(B, T)` targets raise, and a batch that differs raises too. `nll_loss`'s
      targets are always class indices, and `cross_entropy`'s when they are integers
      (`torch.randint`, `.long()`, a loader's batch of them), so a label column `(N, 1)` sliced
      with `table[:, -1:]` raises; a float target of the scores' shape is a distribution;
    - `binary_cross_entropy` / `binary_cross_entropy_with_logits` (and `nn.BCELoss`,
      `nn.BCEWithLogitsLoss`) whose target's size is not the input's (`(N, 1)` logits against
      `(N,)` targets): a ValueError;
    - `mse_loss` / `l1_loss` / `smooth_l1_loss` / `huber_loss` (and their modules) of a `(N, 1)`
      prediction and a `(N,)` target: no error, torch broadcasts them to `(N, N)` (a warning only);
      and of a prediction and a target that cannot broadcast at all (a decoder's 25x25 output
      against 28x28 images): a RuntimeError;
    - a `return` whose shape contradicts the function's shape annotation.

    Sizes come from the tensor-facts model: factory calls (`torch.randn(4, 3)`), views,
    `B, T, C = x.shape`, ops that keep or reorder sizes (`masked_fill` keeps the tensor's), products,
    `chunk`, `unfold`, `flatten(start, end)`, `torch.arange(n)`, `repeat_interleave` by a known count (`x if n_rep == 1 else x.repeat_interleave(n_rep,
    dim=1)` takes the branch a known `n_rep` takes), reductions over written dims (dropped,
    or 1 with `keepdim=True`), `F.pad`, `F.interpolate` (`size=` or `scale_factor=`), the
    functional pooling (`F.max_pool2d(x, 2)`, `F.adaptive_avg_pool2d(x, 1)`), `F.one_hot` with
    `num_classes`, `narrow`, `index_select`, `gather`, `new_zeros` and its kin, `repeat`, `tile`, `topk`, `argsort`,
    `F.linear`, `F.embedding`, `view_as`, `split` (sections, or pieces of n),
    `unflatten`, `torch.outer`, `torch.stft` (n_fft // 2 + 1 bins, 1 + L // hop frames when centred),
    `torch.einsum` (each letter's size), a
    list of numbers written out (`torch.tensor([[0, 1], [1, 2]])`), `squeeze()` of literal
    sizes (a symbol such as `B` may be 1), indexing (a slice
    with known bounds keeps what Python's slicing keeps: `pos[:, :T]` of 16 positions with
    T = 24 keeps 16; a window `data[s : s + k]` keeps k; an integer tensor puts its sizes in
    place of the dim: `centers[labels]` of a (K, F) table and (N,) labels is (N, F)), `torch.stack` / `torch.cat` of a list
    or of a comprehension over something of known length, and what the file passes its own code:
    - in a file that makes example data (a script, a test, a notebook): inside `forward()` (and
      the methods it calls), the example input the file feeds the model
      (`model(torch.randn(4, SEQ_LEN, D_MODEL))` in `__main__`, a test, an
      `example_input_array` / `example_input` attribute (Lightning), a loop over a
      `DataLoader` of a `TensorDataset` or of a dataset class of the file (what its
      `__getitem__` returns, sized by its `__init__`), a training function the model and loader
      are handed to: `train(model, loader)`, or a parent module's `self.block(x)`; what the
      methods of a plain class of the file return: `buffer.sample(32)`), through the layers
      `__init__` builds (`nn.Linear`, `nn.Embedding`, `nn.EmbeddingBag` over a (B, L) batch, `nn.LSTM`/`GRU`/`RNN` with `batch_first`
      and `bidirectional` and their one-step cells (`nn.GRUCell`, `nn.LSTMCell`, `nn.RNNCell`), `nn.MultiheadAttention`, Transformer encoder/decoder layers,
      convolutions, transposed convolutions and pooling (their kernel, stride, padding,
      dilation and `output_padding`; a padding of half the dilated kernel,
      `(kernel_size - 1) // 2 * dilation`, keeps the length whatever the dilation), norms,
      `Flatten`, an `nn.Sequential` of them) with the sizes the construction gives them (`Net(d_model=32)`, a tensor: `NCF(cfg, genres)`, a module constant, `len(FEATURES)`,
      arithmetic on them, floats included: `int(SAMPLE_RATE * CLIP_SECONDS)`,
      a default, a field of a dataclass of the file that the parameter is annotated with:
      `cfg: Config`, then `cfg.d_model` is the field's default or what every construction
      passes; the integer default of a command-line option: `args.n_mels` is 64 after
      `parser.add_argument("--n-mels", type=int, default=64)` and `args = parser.parse_args()`,
      or a function of the file that returns it),
      also where a helper function of the file builds the layers from its parameters
      (`conv_block(base, base * 2, nn.ReLU())`: each call's sizes and layers), and through a
      stack of one Module class of the file (`nn.Sequential(*[Block(cfg) for _ in range(n)])`
      or the blocks written out gives what the block's `forward` gives, where that is the shape
      the block was given); a Module class of the file built in several places with different
      sizes (`self.down = ResBlock(16, 32)`, `self.up = ResBlock(64, 16)`) is read once per
      construction and call, each with its own sizes and inputs, and a finding names the
      construction whose sizes show it;
    - the arguments a top-level function is called with in the file (`standardize(batch)`),
      a model among them under any name (`advantages(critic, states, returns)`, where every
      call passes a `ValueHead` the file builds: `critic(states)` has what its `forward` gives);
    - shape annotations of parameters and returns: `Annotated[torch.Tensor, Shape("B", 3, 32, 32)]` (a call named `Shape`) and
    jaxtyping's `Float[Tensor, "b c h w"]` (read from the text; jaxtyping need not be installed). Two sizes disagree only when both are
    integer literals; the same name is the same size, two different names may be equal, and an
    unknown size never disagrees. An op the model does not know clears the shape, and so does a
    slice that would keep nothing of a dim (`sdf[:, 1:]` of an `sdf` annotated `(n, 1)`): the code
    expects that dim longer, and the annotation most often forgot one. An annotation with a size
    of 0 (`Float[Tensor, "0"]` on a loss, a scalar written wrong) is not read.

    ## Why is this bad?
    Each of these raises a RuntimeError (`mat1 and mat2 shapes cannot be multiplied`, `Sizes of
    tensors must match except in dimension 1`, `shape '[3, 5]' is invalid for input of size 16`,
    `The size of tensor a (3) must match the size of tensor b (4)`) when the line first runs.

    ## Example
    ```python
    x = torch.randn(8, 64)
    w = torch.randn(32, 10)
    y = x @ w
    ```

    ## Use instead
    ```python
    x = torch.randn(8, 64)
    w = torch.randn(64, 10)
    y = x @ w
    ```
    """

    code = "TL104"
    name = "shape-mismatch"
    summary = "An op whose operand sizes, known from the code, cannot work: a shape RuntimeError"
    severity = Severity.ERROR

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Per enclosing function: whether a literal size (`torch.randn(4, 3)`, `.view(2, -1)`, a
        # shape annotation with a digit) came before. Sizes can only disagree as literals, so
        # without one the tensor-facts model is not asked (it interprets the whole function).
        self._literal_sizes = [False]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = node.params
        annotated = any(
            sizes is not None and any(size is not None and size.isdigit() for size in sizes)
            for sizes in (annotated_shape(self.ctx, p.annotation.annotation) for p in (*params.params, *params.kwonly_params)
                          if p.annotation is not None)
        )
        self._literal_sizes.append(self._literal_sizes[-1] or annotated or fed_examples(self.ctx, node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._literal_sizes.pop()

    @each_construction
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not self._literal_sizes[-1]:
            return
        if isinstance(node.operator, cst.MatrixMultiply):
            self._matmul(node, node.left, node.right, "matmul")
        elif isinstance(node.operator, BROADCASTING_OPERATORS):
            self._broadcast(node)

    @each_construction
    def visit_Return(self, node: cst.Return) -> None:
        function = self.ctx.enclosing_function()
        if node.value is None or function is None or function.returns is None:
            return
        promised = annotated_shape(self.ctx, function.returns.annotation)
        have = self._sizes(node.value) if promised is not None else None
        if have is None:
            return
        if len(have) != len(promised):
            problem = f"rank {len(have)} where the annotation says {len(promised)}"
        else:
            position = next((i for i, pair in enumerate(zip(have, promised)) if differ(*pair)), None)
            if position is None:
                return
            problem = f"size {have[position]} in dim {position} where the annotation says {promised[position]}"
        self.report(
            node,
            f"`{self._code(node.value)}` has shape {show(have)}, but `{function.name.value}` is annotated to "
            f"return {show(promised)}: {problem}",
            related=(RelatedNode(function.returns.annotation, f"the annotation promises {show(promised)} here"),),
        )

    @each_construction
    def visit_Call(self, node: cst.Call) -> None:
        if _has_literal_size(node):
            self._literal_sizes[-1] = True
        if last_word(node.func) == "einsum":
            # Not behind the literal-size gate: its operands are often built inside the call.
            if self.ctx.callee(node) == "torch.einsum":
                self._einsum(node)
            return
        if last_word(node.func) == "TensorDataset":
            # Outside the gate too: its tensors are often made inside the call.
            if self.ctx.callee(node) == "torch.utils.data.TensorDataset":
                self._tensor_dataset(node)
            return
        if last_word(node.func) in _BROADCAST_DISTRIBUTIONS:
            # Not behind the literal-size gate either: `Normal(torch.zeros(4), torch.ones(5))`.
            if (self.ctx.callee(node) or "").startswith("torch.distributions."):
                self._distribution(node, last_word(node.func))
            return
        if not self._literal_sizes[-1]:
            return
        qualified = self.ctx.callee(node)
        if len(positional_args(node)) >= 2 and self._loss(node, qualified):
            return
        if qualified in _CONCATS:
            self._concat(node, _CONCATS[qualified])
            return
        func = node.func
        if qualified == "torch.reshape":
            tensor, shape = argument(node, 0, "input"), argument(node, 1, "shape")
            if tensor is not None and shape is not None:
                self._view(node, tensor, shape_args(cst.Call(func, (cst.Arg(shape),))))
        elif qualified is not None and qualified.startswith("torch.") and qualified[6:] in _MATMULS:
            first, second = argument(node, 0, "input"), argument(node, 1, "other" if qualified != "torch.mm" else "mat2")
            if first is not None and second is not None:
                self._matmul(node, first, second, qualified[6:])
        elif qualified == "torch.gather":
            tensor, index = argument(node, 0, "input"), argument(node, 2, "index")
            if tensor is not None and index is not None:
                self._index_rank(node, "gather", tensor, index)
        elif isinstance(func, cst.Attribute) and qualified is None:
            name = func.attr.value
            if name in ("view", "reshape"):
                self._view(node, func.value, shape_args(node))
            elif name in _MATMULS and len(node.args) == 1 and not node.args[0].keyword:
                self._matmul(node, func.value, node.args[0].value, name)
            elif name in _MASKED and node.args:
                self._masked(node, func.value, node.args[0].value)
            elif name in _INDEXED_BY_TENSOR and (index := argument(node, 1, "index")) is not None:
                self._index_rank(node, name, func.value, index)

    def _index_rank(self, node: cst.Call, name: str, tensor: cst.BaseExpression, index: cst.BaseExpression) -> None:
        """`gather` / `scatter` with an index of another rank than the tensor's."""
        a, b = self._sizes(tensor), self._sizes(index)
        if a is None or b is None or len(a) == len(b):
            return
        if len(b) != len(a) - 1:
            hint = ""
        elif name == "gather":
            hint = " (`.unsqueeze(-1)` the index, and `.squeeze(-1)` the result)"
        else:
            hint = " (`.unsqueeze(-1).expand_as(...)` the index to the source's shape)"
        self.report(
            node,
            f"`{name}` needs an index with as many dims as the tensor, but `{self._code(tensor)}` has shape {show(a)} "
            f"and the index `{self._code(index)}` has shape {show(b)}{hint}",
            related=self._assignments((tensor, a), (index, b)),
        )

    def _sizes(self, expr: cst.BaseExpression):
        return known_sizes(self.ctx.tensors.facts(expr))

    def _code(self, expr: cst.BaseExpression) -> str:
        return brief_code(self.ctx, expr)

    def _assignments(self, *operands: tuple[cst.BaseExpression, tuple]) -> list[RelatedNode]:
        """Where each operand held in a local name got the shape the message gives it: its
        assignment, or its parameter's annotation."""
        notes = []
        for expr, sizes in operands:
            value = self.ctx.values.value_of(expr.value) if isinstance(expr, cst.Name) else None
            verb = "is assigned"
            if isinstance(value, cst.Param):
                value, verb = (value.annotation.annotation if value.annotation is not None else None), "is annotated"
            elif value is not None and self._sizes(value) not in (sizes, None):
                continue  # reshaped since (`target.unsqueeze_(1)`): the assignment did not give this shape
            if value is not None and all(note.node is not value for note in notes):
                notes.append(RelatedNode(value, f"`{expr.value}` {verb} here, shape {show(sizes)}"))
        return notes

    def _matmul(self, node: cst.CSTNode, first: cst.BaseExpression, second: cst.BaseExpression, op: str) -> None:
        """`op` is "matmul" (also `@`), "mm" or "bmm"."""
        a, b = self._sizes(first), self._sizes(second)
        if a is None or b is None:
            return
        conflict = matmul_conflict(a, b)
        if conflict is not None:
            problem = f"a matrix product needs the inner sizes to agree, but they are {conflict[0]} and {conflict[1]}"
        elif (batches := batch_conflict(a, b, broadcast=op == "matmul")) is not None:
            problem = (f"`bmm` needs equal batch sizes (it does not broadcast), but they are {batches[0]} and {batches[1]}"
                       if op == "bmm" else f"the batch dims cannot broadcast: {batches[0]} against {batches[1]}")
        else:
            return
        self.report(
            node,
            f"`{self._code(first)}` has shape {show(a)} and `{self._code(second)}` has shape {show(b)}: {problem}",
            related=self._assignments((first, a), (second, b)),
        )

    def _masked(self, node: cst.Call, tensor: cst.BaseExpression, mask: cst.BaseExpression) -> None:
        a, b = self._sizes(tensor), self._sizes(mask)
        conflict = broadcast_conflict(a, b) if a is not None and b is not None else None
        if conflict is None:
            return
        offset, first, second = conflict
        self.report(
            node,
            f"`{self._code(tensor)}` has shape {show(a)} and the mask `{self._code(mask)}` has shape {show(b)}: "
            f"the mask must broadcast to the tensor, but size {second} meets {first} in dim -{offset} "
            "(index the mask to add the missing dims, e.g. `mask[:, None, None, :]`)",
            related=self._assignments((tensor, a), (mask, b)),
        )

    def _loss(self, node: cst.Call, qualified: str | None) -> bool:
        """A loss whose prediction and target shapes the code shows and cannot go together."""
        loss = qualified if qualified in _SHAPED_LOSSES else called_function(self.ctx, node)
        if loss not in _SHAPED_LOSSES:
            return False
        prediction, target = (arg.value for arg in positional_args(node)[:2])
        a, b = self._sizes(prediction), self._sizes(target)
        if a is None or b is None:
            return True
        # NLL's targets are class indices; cross entropy's are when integers, else probabilities.
        dtype = getattr(self.ctx.tensors.facts(target), "dtype", None) or ""
        indices = loss in NLL_LOSSES or dtype.startswith(("int", "uint"))
        message = _loss_mismatch(loss, self._code(prediction), a, self._code(target), b, indices)
        if message is not None:
            self.report(node, message, related=self._assignments((prediction, a), (target, b)))
        return True

    @each_construction
    def visit_Comparison(self, node: cst.Comparison) -> None:
        if self._literal_sizes[-1] and len(node.comparisons) == 1 \
                and isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            self._column_against_row(node, node.left, node.comparisons[0].comparator)

    def _column_against_row(self, node: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
        """A model's (N, 1) output against an (N,) tensor: `returns - values`, `preds == labels`."""
        for column, row in ((left, right), (right, left)):
            facts, sizes, other = self.ctx.tensors.facts(column), self._sizes(column), self._sizes(row)
            if getattr(facts, "column_of", None) is None or sizes is None or other is None or len(other) != 1 \
                    or len(sizes) != 2 or sizes[0] != other[0] or literal(sizes[0]) == 1:
                continue
            n = sizes[0] or "N"
            self.report(
                node,
                f"`{self._code(column)}` has shape {show(sizes)} and `{self._code(row)}` has shape {show(other)}: "
                f"they broadcast to ({n}, {n}) without an error, every row against every other; "
                f"`.squeeze(-1)` the column (or `.unsqueeze(-1)` the other)",
                related=(RelatedNode(facts.column_of, f"the ({n}, 1) column comes from here"),),
            )
            return True
        return False

    def _broadcast(self, node: cst.BinaryOperation) -> None:
        if self._column_against_row(node, node.left, node.right):
            return
        a, b = self._sizes(node.left), self._sizes(node.right)
        conflict = broadcast_conflict(a, b) if a is not None and b is not None else None
        if conflict is not None:
            offset, first, second = conflict
            self.report(
                node,
                f"`{self._code(node.left)}` has shape {show(a)} and `{self._code(node.right)}` has shape {show(b)}: "
                f"they cannot broadcast, size {first} against {second} in dim -{offset}",
                related=self._assignments((node.left, a), (node.right, b)),
            )

    def _view(self, node: cst.Call, tensor: cst.BaseExpression, args) -> None:
        if not args or (len(args) == 1 and int_value(args[0]) is None):
            return
        have = self._sizes(tensor)
        if have is None:
            return
        wanted = [self.ctx.tensors.size_code(arg, self.ctx.tensors.facts(arg)) for arg in args]
        mismatch = element_count_mismatch(have, wanted)
        if mismatch is not None:
            shared = "" if all(size.isdigit() for size in have) else " besides the sizes both share"
            # A -1, or a size the tensor does not show (`B` of `view(B, 1, H, W)`), may be any size.
            open_size = "-1" in wanted or any(literal(size) is None and size not in have for size in wanted)
            multiple = "a multiple of " if open_size else ""
            self.report(
                node,
                f"`{self._code(tensor)}` has shape {show(have)}, but the new shape ({', '.join(wanted)}) needs "
                f"{multiple}{mismatch[1]} elements where it has {mismatch[0]}{shared}",
                related=self._assignments((tensor, have)),
            )

    def _tensor_dataset(self, node: cst.Call) -> None:
        """`TensorDataset(inputs, targets)` whose tensors hold different numbers of rows."""
        tensors = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        shaped = [(tensor, sizes) for tensor in tensors if (sizes := self._sizes(tensor))]
        for tensor, sizes in shaped[1:]:
            first, first_sizes = shaped[0]
            if differ(first_sizes[0], sizes[0]):
                self.report(
                    node,
                    f"`TensorDataset` needs one row per example in every tensor, but `{self._code(first)}` has shape "
                    f"{show(first_sizes)} and `{self._code(tensor)}` has shape {show(sizes)}: {first_sizes[0]} rows "
                    f"against {sizes[0]} (`Size mismatch between tensors`)",
                    related=self._assignments((first, first_sizes), (tensor, sizes)),
                )
                return

    def _distribution(self, node: cst.Call, name: str) -> None:
        """`Normal(mu, std)` whose parameters cannot broadcast together (a `(B, 3)` mean against
        an `(11,)` standard deviation)."""
        parameters = _BROADCAST_DISTRIBUTIONS.get(name, ())
        given = [(parameter, value) for position, parameter in enumerate(parameters)
                 if (value := argument(node, position, parameter)) is not None]
        shaped = [(value, sizes) for _, value in given if (sizes := self._sizes(value)) is not None]
        for index, (first, a) in enumerate(shaped):
            for second, b in shaped[index + 1:]:
                conflict = broadcast_conflict(a, b)
                if conflict is None:
                    continue
                offset, first_size, second_size = conflict
                self.report(
                    node,
                    f"`{name}` broadcasts its parameters together, but `{self._code(first)}` has shape {show(a)} and "
                    f"`{self._code(second)}` has shape {show(b)}: size {first_size} against {second_size} in dim -{offset}",
                    related=self._assignments((first, a), (second, b)),
                )
                return

    def _einsum(self, node: cst.Call) -> None:
        equation = string_value(node.args[0].value) if node.args and not node.args[0].keyword else None
        operands = [arg.value for arg in node.args[1:]]
        if len(operands) == 1 and isinstance(operands[0], (cst.List, cst.Tuple)):
            operands = [element.value for element in operands[0].elements]
        if equation is None or any(arg.star or arg.keyword for arg in node.args[1:]):
            return
        shapes = [self._sizes(operand) for operand in operands]
        conflict = einsum_conflict(equation, shapes)
        if conflict is None:
            return
        letter, (first, first_dim), (second, second_dim) = conflict
        first_size, second_size = shapes[first][first_dim], shapes[second][second_dim]
        rule = ("a subscript repeated in one operand needs equal sizes" if first == second
                else "a subscript needs one size (or 1) in every operand")
        self.report(
            node,
            f"`torch.einsum(\"{equation}\", ...)` binds `{letter}` to {first_size} (dim {first_dim} of "
            f"`{self._code(operands[first])}`, shape {show(shapes[first])}) and to {second_size} (dim {second_dim} of "
            f"`{self._code(operands[second])}`, shape {show(shapes[second])}); {rule}",
            related=self._assignments((operands[first], shapes[first]), (operands[second], shapes[second])),
        )

    def _concat(self, node: cst.Call, kind: str) -> None:
        sequence = argument(node, 0, "tensors")
        if not isinstance(sequence, (cst.List, cst.Tuple)) or len(sequence.elements) < 2:
            return
        if any(isinstance(element, cst.StarredElement) for element in sequence.elements):
            return
        dim_expr = argument(node, 1, "dim")
        dim = 0 if dim_expr is None else int_value(dim_expr)
        if dim is None:
            return
        tensors = [element.value for element in sequence.elements]
        shapes = [self._sizes(tensor) for tensor in tensors]
        if any(shape is None for shape in shapes):
            return
        mismatched = rank_conflict(shapes)
        if mismatched is not None:
            first = next(index for index, shape in enumerate(shapes) if shape != ("0",))
            self.report(
                node,
                f"`torch.{kind}` of `{self._code(tensors[first])}` with shape {show(shapes[first])} and "
                f"`{self._code(tensors[mismatched])}` with shape {show(shapes[mismatched])}: {len(shapes[first])} "
                f"against {len(shapes[mismatched])} dims; the tensors must have the same number of dims "
                f"(`unsqueeze` the smaller, or reduce with `keepdim=True`)",
                related=self._assignments((tensors[first], shapes[first]), (tensors[mismatched], shapes[mismatched])),
            )
            return
        conflict = concat_conflict(shapes, dim if kind == "cat" else None)
        if conflict is None:
            return
        index, position, first, other = conflict
        allowed = f"only dim {dim} may differ" if kind == "cat" else "stacked tensors must have equal shapes"
        self.report(
            node,
            f"`torch.{kind}` of `{self._code(tensors[0])}` with shape {show(shapes[0])} and "
            f"`{self._code(tensors[index])}` with shape {show(shapes[index])}: dim {position} is {first} against "
            f"{other}; {allowed}",
            related=self._assignments((tensors[0], shapes[0]), (tensors[index], shapes[index])),
        )



def _has_literal_size(call: cst.Call) -> bool:
    """A call given a positive integer literal by position (`torch.zeros(4, 3)`, `x.view(2, -1)`)."""
    for arg in call.args:
        if arg.keyword is not None:
            continue
        values = [e.value for e in arg.value.elements] if isinstance(arg.value, (cst.Tuple, cst.List)) else [arg.value]
        if any(isinstance(value, cst.Integer) for value in values):
            return True
    return False


def _loss_mismatch(loss: str, prediction: str, a: tuple, target: str, b: tuple, indices: bool) -> str | None:
    """Why a loss cannot take a prediction of sizes `a` and a target of sizes `b` (class `indices`,
    for cross entropy and NLL) as it means to."""
    name = loss.rsplit(".", 1)[-1]
    if loss in CROSS_ENTROPY_LOSSES or loss in NLL_LOSSES:
        conflict = class_target_conflict(a, b, indices)
        if conflict is None:
            return None
        dim, expected, _ = conflict
        if indices and len(b) == len(a):
            hint = " (class indices have no class dim: `.squeeze(1)` the target, or `.view(-1)`)"
        elif len(a) >= 3:
            hint = " (the class dim must be dim 1: `.transpose(1, 2)` the scores, or flatten both with `.view(-1, C)` / " \
                   "`.view(-1)`)"
        else:
            hint = ""
        return (
            f"`{name}` takes scores (N, C, ...) and targets (N, ...): `{prediction}` has shape {show(a)}, so the "
            f"target needs {expected}{'' if dim == -1 else f' in dim {dim}'}, but `{target}` has shape {show(b)}{hint}"
        )
    if loss in _SAME_SIZE_LOSSES:
        if len(a) == len(b) and not any(differ(first, second) for first, second in zip(a, b)):
            return None
        return (
            f"`{name}` needs the target's size to equal the input's, but `{prediction}` has shape {show(a)} and "
            f"`{target}` has shape {show(b)}: a ValueError (`.squeeze(-1)` the input or `.view_as(...)` the target)"
        )
    conflict = broadcast_conflict(a, b)
    if conflict is not None:
        offset, first, second = conflict
        return (
            f"`{name}` compares `{prediction}` with shape {show(a)} and `{target}` with shape {show(b)} element by "
            f"element, but they cannot broadcast: size {first} against {second} in dim -{offset}"
        )
    result = silent_broadcast(a, b)
    if result is None:
        return None
    return (
        f"`{name}` of `{prediction}` with shape {show(a)} and `{target}` with shape {show(b)} broadcasts them to "
        f"{show(result)} without an error: the loss compares every prediction with every target; make the shapes "
        "equal (`.squeeze(-1)` / `.view_as(...)`)"
    )
