"""How torch functions and tensor methods transform tensor facts: the op table, as data.

Each entry names a `Rule` (how rank, layout and dtype flow) and whether the op requires its
tensor operands to share a device (`combines`). The same table serves the function form
(`torch.permute(x, dims)`: the first positional argument is the receiver) and the method form
(`x.permute(dims)`). The interpreter reads the entries; it has one small function per rule.

Rules:
- ELEMENTWISE: same shape and layout as the receiver (broadcast with tensor operands).
- RECOMPUTE: same shape as the receiver, but a new contiguous tensor (softmax, masked_fill,
  tril, cumsum: measured on torch, they do not keep a permuted input's strides).
- COMPARE: like ELEMENTWISE, dtype bool.
- REDUCE: drops `dim` (keeps it with `keepdim=True`); no `dim` gives a 0-dim tensor.
- REDUCE_TUPLE: REDUCE with `dim`, but returning (values, indices): `max(dim=1)`, `topk`, `sort`.
- MATMUL: rank = max of the operand ranks; a fresh contiguous tensor.
- REORDER: permute/transpose/t/swapaxes/movedim/expand/expand_as: the layout records the reordering.
- VIEW / RESHAPE: the size arguments give the new rank and sizes; reshape copies when it must.
- CONTIGUOUS: a fresh base with the same sizes.
- UNSQUEEZE / SQUEEZE / FLATTEN / UNFLATTEN: rank changes that the layout follows.
- SPLIT: a tuple of tensors of the receiver's rank (`chunk`, `split`, `unbind`).
- REPEAT: `repeat_interleave`: with `dim`, a new contiguous tensor of the receiver's rank;
  without, a flat one.
- UNFOLD: `x.unfold(dim, size, step)`: dim holds the windows, a new last dim their values.
- CAT / STACK: a list argument; same rank / one more.
- EINSUM: rank from the output of the equation.
- MESHGRID: a tuple of tensors on the device of the inputs.
- WHERE: `torch.where(cond, a, b)` / `a.where(cond, b)`: the broadcast of the three.
- CONVERT: a dtype conversion (`.float()`): same device and layout.
- MOVE: `.to(...)`, `.cuda()`, `.cpu()`: the interpreter resolves the target.
- NUMBER: a Python number (`.item()`, `.dim()`, `.size(1)`).
- SHAPE: `.size()` without arguments: a tuple of numbers.
- DETACH: no longer requires grad; REQUIRES_GRAD: `requires_grad_()` (off with `False`).
- KEEP: returns the receiver (in-place ops such as `copy_`, `fill_`).
- OTHER: a tensor on the device of the operands; nothing known of its shape.
- SAME_DEVICE: a tensor on the receiver's device, shape unknown, operands not checked.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Rule(enum.Enum):
    ELEMENTWISE = "elementwise"
    RECOMPUTE = "recompute"
    COMPARE = "compare"
    REDUCE = "reduce"
    REDUCE_TUPLE = "reduce_tuple"
    MATMUL = "matmul"
    REORDER = "reorder"
    VIEW = "view"
    RESHAPE = "reshape"
    CONTIGUOUS = "contiguous"
    UNSQUEEZE = "unsqueeze"
    SQUEEZE = "squeeze"
    FLATTEN = "flatten"
    UNFLATTEN = "unflatten"
    SPLIT = "split"
    REPEAT = "repeat"
    UNFOLD = "unfold"
    CAT = "cat"
    STACK = "stack"
    EINSUM = "einsum"
    MESHGRID = "meshgrid"
    WHERE = "where"
    CONVERT = "convert"
    MOVE = "move"
    NUMBER = "number"
    SHAPE = "shape"
    DETACH = "detach"
    REQUIRES_GRAD = "requires_grad"
    KEEP = "keep"
    OTHER = "other"
    SAME_DEVICE = "same_device"


@dataclass(frozen=True)
class Op:
    rule: Rule
    # The tensor operands must be on one device (a RuntimeError otherwise).
    combines: bool = True
    # For CONVERT: the dtype the result gets.
    dtype: str | None = None


def _table(rule: Rule, names: str, combines: bool = True) -> dict[str, Op]:
    return {name: Op(rule, combines) for name in names.split()}


# The dtype each conversion method gives, which is also what the alias `torch.<name>` names.
_DTYPE_CONVERSIONS = {
    "float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16", "long": "int64",
    "int": "int32", "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool",
    "cfloat": "complex64", "cdouble": "complex128",
}


def dtype_named(qualified: str | None) -> str | None:
    """`int64` for `torch.int64` and for its alias `torch.long`; None for a name not in `torch.`."""
    if not qualified or not qualified.startswith("torch."):
        return None
    name = qualified.removeprefix("torch.")
    return _DTYPE_CONVERSIONS.get(name, name)


# Ops available as `torch.<name>(x, ...)` and as `x.<name>(...)`.
SHARED_OPS: dict[str, Op] = {
    **_table(
        Rule.ELEMENTWISE,
        "abs neg exp exp2 expm1 log log1p log2 log10 sqrt rsqrt sigmoid tanh relu sin cos tan asin acos "
        "atan sinh cosh erf erfc erfinv clamp clip clamp_min clamp_max round floor ceil trunc frac sign "
        "sgn square pow reciprocal nan_to_num logical_not bitwise_not add sub subtract "
        "mul multiply div divide true_divide floor_divide remainder fmod maximum minimum fmax fmin atan2 "
        "hypot lerp logaddexp addcmul addcdiv flip sigmoid_ relu_ clamp_ add_ sub_ mul_ div_ masked_fill_ zero_ exp_ log_ "
        "pow_ sqrt_ neg_ abs_ tanh_ uniform_ normal_ bernoulli_ clone dropout heaviside xlogy "
        "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor renorm polar angle "
        "real imag conj isnan isinf isfinite isneginf isposinf signbit logit softplus",
    ),
    **_table(Rule.RECOMPUTE, "softmax log_softmax masked_fill tril triu cumsum cumprod logcumsumexp roll"),
    **_table(Rule.COMPARE, "eq ne lt gt le ge greater less greater_equal less_equal not_equal isclose"),
    **_table(
        Rule.REDUCE,
        "sum mean prod amax amin norm std var all any nansum nanmean logsumexp count_nonzero argmax "
        "argmin median_values",
    ),
    **_table(Rule.REDUCE_TUPLE, "max min median nanmedian mode topk sort kthvalue cummax cummin aminmax"),
    **_table(Rule.MATMUL, "matmul mm bmm"),
    **_table(Rule.REORDER, "permute transpose t swapaxes swapdims movedim moveaxis", combines=False),
    **_table(Rule.RESHAPE, "reshape", combines=False),
    **_table(Rule.UNSQUEEZE, "unsqueeze", combines=False),
    **_table(Rule.SQUEEZE, "squeeze", combines=False),
    **_table(Rule.FLATTEN, "flatten", combines=False),
    **_table(Rule.UNFLATTEN, "unflatten", combines=False),
    **_table(Rule.SPLIT, "chunk split unbind tensor_split hsplit vsplit dsplit", combines=False),
    **_table(Rule.REPEAT, "repeat_interleave", combines=False),
    **_table(Rule.WHERE, "where"),
    **_table(Rule.DETACH, "detach", combines=False),
    **_table(
        Rule.OTHER,
        "index_select gather take take_along_dim scatter scatter_add masked_select masked_scatter "
        "index_add index_copy index_fill searchsorted bucketize outer dot inner cross "
        "cdist kron tensordot diff addmm baddbmm addbmm addmv mv argsort diag diagonal diag_embed "
        "trace histc bincount nonzero narrow select tile unique cumulative_trapezoid trapezoid stft",
    ),
}

# Ops only in the `torch` namespace (or `torch.nn.functional`, `torch.linalg`...).
FUNCTION_OPS: dict[str, Op] = {
    **SHARED_OPS,
    **_table(Rule.CAT, "cat concat concatenate hstack vstack dstack column_stack row_stack"),
    **_table(Rule.STACK, "stack"),
    **_table(Rule.EINSUM, "einsum"),
    **_table(Rule.MESHGRID, "meshgrid"),
    **_table(Rule.ELEMENTWISE, "gelu silu mish elu leaky_relu relu6 hardtanh hardswish hardsigmoid "
             "selu celu softsign tanhshrink threshold dropout1d dropout2d dropout3d alpha_dropout"),
    **_table(Rule.RECOMPUTE, "normalize layer_norm group_norm batch_norm instance_norm rms_norm "
             "local_response_norm glu"),
    **_table(Rule.OTHER, "linear bilinear conv1d conv2d conv3d conv_transpose1d conv_transpose2d "
             "conv_transpose3d embedding interpolate pad avg_pool1d avg_pool2d avg_pool3d max_pool1d "
             "max_pool2d max_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d "
             "adaptive_max_pool2d pixel_shuffle pixel_unshuffle grid_sample affine_grid one_hot "
             "scaled_dot_product_attention unfold fold cosine_similarity pairwise_distance "
             "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss binary_cross_entropy "
             "binary_cross_entropy_with_logits kl_div margin_ranking_loss triplet_margin_loss "
             "cosine_embedding_loss hinge_embedding_loss soft_margin_loss poisson_nll_loss "
             "gaussian_nll_loss multilabel_margin_loss multi_margin_loss inverse solve "
             "cholesky det slogdet_values matrix_exp pinv matrix_norm vector_norm fft ifft rfft irfft "
             "fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn fftshift ifftshift"),
    # CTC takes its targets and lengths on the CPU as well as on the device of the log-probabilities.
    **_table(Rule.OTHER, "ctc_loss", combines=False),
}

# Ops only written as tensor methods.
METHOD_OPS: dict[str, Op] = {
    **SHARED_OPS,
    **_table(Rule.VIEW, "view", combines=False),
    # The method only: `torch.nn.functional.unfold` extracts image patches.
    **_table(Rule.UNFOLD, "unfold", combines=False),
    **_table(Rule.REORDER, "expand", combines=False),
    **_table(Rule.CONTIGUOUS, "contiguous", combines=False),
    **_table(Rule.MOVE, "to cuda cpu xpu mps", combines=False),
    **_table(Rule.NUMBER, "item dim ndimension numel nelement element_size get_device storage_offset"),
    **_table(Rule.SHAPE, "size", combines=False),
    **_table(Rule.DETACH, "detach_", combines=False),
    **_table(Rule.SAME_DEVICE, "new_zeros new_ones new_empty new_full new_tensor", combines=False),
    # `*_as` ops read only the other tensor's shape or dtype.
    **_table(Rule.SAME_DEVICE, "view_as reshape_as repeat", combines=False),
    **_table(Rule.REORDER, "expand_as", combines=False),
    # In-place ops that return their receiver; `copy_` copies across devices, `fill_` takes a value.
    **_table(Rule.KEEP, "copy_ fill_ pin_memory share_memory_ index_put_ masked_scatter_ scatter_ "
             "scatter_add_ index_add_ index_fill_ index_copy_ put_ retain_grad", combines=False),
    **_table(Rule.REQUIRES_GRAD, "requires_grad_", combines=False),
    **{name: Op(Rule.CONVERT, combines=False, dtype=dtype) for name, dtype in _DTYPE_CONVERSIONS.items()},
}
METHOD_OPS["type"] = Op(Rule.CONVERT, combines=False)
# `type_as(other)` converts to other's tensor type, which names its device (`torch.cuda.FloatTensor`).
METHOD_OPS["type_as"] = Op(Rule.MOVE, combines=False)

# einops functions: a tensor rearranged on its first argument's device, shape not followed.
EINOPS_FUNCTIONS = frozenset({"einops.rearrange", "einops.repeat", "einops.reduce"})

# Tensor attributes that are tensors, and the reordering the two transposing ones do.
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag", "grad"})
NUMBER_ATTRIBUTES = frozenset({"ndim", "itemsize", "nbytes"})

# Methods that turn a tensor into something that is not a tensor (no facts flow).
NOT_TENSOR_METHODS = frozenset(
    {"tolist", "numpy", "stride", "storage", "untyped_storage", "data_ptr", "is_contiguous",
     "is_floating_point", "is_complex", "backward", "register_hook", "equal", "allclose", "__len__",
     "keys", "values", "items", "get", "apply_", "map_", "dim_order"}
)

# `torch.nn` layers with no weights of their own: their output needs grad only where an input does.
PARAMETER_FREE_LAYERS = frozenset(
    f"torch.nn.{name}" for name in (
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout GELU ReLU ReLU6 SiLU Tanh Sigmoid Softmax "
        "LogSoftmax Softmin Identity LeakyReLU ELU SELU CELU Mish Hardswish Hardsigmoid Hardtanh Softplus "
        "Softsign Tanhshrink Threshold Flatten Unflatten"
    ).split()
)
# `torch.nn` layers whose output has the rank of their input (plus one for `Embedding`).
RANK_PRESERVING_LAYERS = frozenset(
    f"torch.nn.{name}" for name in (
        "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout LayerNorm RMSNorm GroupNorm BatchNorm1d "
        "BatchNorm2d BatchNorm3d InstanceNorm1d InstanceNorm2d InstanceNorm3d GELU ReLU ReLU6 SiLU "
        "Tanh Sigmoid Softmax LogSoftmax Identity Linear LeakyReLU ELU Mish Hardswish Hardsigmoid "
        "Softplus PReLU Conv1d Conv2d Conv3d"
    ).split()
)
