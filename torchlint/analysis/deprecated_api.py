"""The table of deprecated and removed torch APIs, with their replacements: data, easy to extend.

TL504 (deprecated-api) reports uses of `DEPRECATED_APIS`; TL501 (deprecated-cuda-amp) reports
calls of `DEPRECATED_AMP_APIS`, whose replacement takes the device as an argument. To add an
entry, append a `DeprecatedApi(...)` line: the rules, their docs and the fixture check
(`tests/analysis/test_deprecated_api.py` demands one fixture positive per entry) follow.

Fields:
- `name`: the qualified name as imports resolve it (`torch.nn.utils.weight_norm`).
- `since`: the torch version that deprecated it, or None when it was deprecated before 1.0 or
  only in the documentation.
- `replacement`: what to write instead, as shown in the message; `note` adds what changes.
- `fix`: `RENAME` when `rename_to` is a drop-in replacement with the same signature and results
  (a safe autofix); `UNSAFE_RENAME` when the rename keeps the signature but changes behaviour the
  author must check (default tolerances, state_dict keys); `RENAME_SINGLE_ARGUMENT` when the
  rename is drop-in only for a call with exactly one positional argument (the fix is offered for
  those calls, safe); `REWRITE` when TL504 rewrites the call's arguments for `rename_to` (a safe
  fix, written per name in the rule: `torch.qr(A, some=False)` -> `torch.linalg.qr(A,
  mode="complete")`); `NONE` when arguments or results differ (no fix).
- `removed`: True when calling it raises on current torch.
- `replacement_since`: the torch version that introduced the replacement; with a configured
  `target-torch-version` below it, the old API is the only choice and is not reported.
- `silent`: True when current torch neither warns nor raises on a call (a deprecation in the
  documentation only, `torch.norm`): working code that could be modernised, so TL504 reports it
  as a note, not a warning. `scripts/check_deprecated_table.py` checks the flag against torch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

Version = tuple[int, int]


class FixKind(enum.Enum):
    NONE = "none"
    RENAME = "rename"
    RENAME_SINGLE_ARGUMENT = "rename-single-argument"
    UNSAFE_RENAME = "unsafe-rename"
    REWRITE = "rewrite"


@dataclass(frozen=True)
class DeprecatedApi:
    name: str
    since: Version | None
    replacement: str
    fix: FixKind = FixKind.NONE
    rename_to: str | None = None
    removed: bool = False
    replacement_since: Version | None = None
    note: str = ""
    silent: bool = False

    @property
    def last_segment(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def describe(self) -> str:
        """`deprecated since torch 2.1` / `removed` / `deprecated`."""
        if self.removed:
            return f"removed (deprecated since torch {_dotted(self.since)})" if self.since else "removed"
        return f"deprecated since torch {_dotted(self.since)}" if self.since else "deprecated"

    def advice(self) -> str:
        """`use `torch.linalg.qr` (`some=False` becomes ...)`."""
        return f"use `{self.replacement}`" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class DeprecatedAmpApi:
    """A `torch.cuda.amp` / `torch.cpu.amp` API replaced by a `torch.amp` one that takes the device."""

    name: str
    since: Version
    replacement: str  # the qualified `torch.amp` name
    device: str
    # How the device is passed: "positional" (first argument) or "keyword" (`device_type=`).
    device_argument: str
    # The old API's positional parameters, turned into keywords by the fix when the new API
    # orders them differently (autocast); empty when they keep their order after the device.
    positional_names: tuple[str, ...] = ()
    replacement_since: Version | None = None
    # A decorator that may be written without parentheses (`@torch.cuda.amp.custom_fwd`).
    bare_decorator: bool = False


def _dotted(version: Version | None) -> str:
    return ".".join(str(part) for part in version) if version else "?"


R, S, U, W = FixKind.RENAME, FixKind.RENAME_SINGLE_ARGUMENT, FixKind.UNSAFE_RENAME, FixKind.REWRITE

DEPRECATED_APIS: tuple[DeprecatedApi, ...] = (
    # torch.linalg replaced the old linear-algebra functions (TorchFix TOR001/TOR101 table).
    DeprecatedApi("torch.solve", (1, 9), "torch.linalg.solve(A, B)", note="arguments reversed", removed=True),
    DeprecatedApi("torch.eig", (1, 9), "torch.linalg.eig", removed=True),
    DeprecatedApi("torch.lstsq", (1, 9), "torch.linalg.lstsq(A, B)", note="arguments reversed", removed=True),
    DeprecatedApi("torch.symeig", (1, 9), "torch.linalg.eigh` or `torch.linalg.eigvalsh", removed=True),
    DeprecatedApi("torch.matrix_rank", (1, 9), "torch.linalg.matrix_rank", removed=True),
    DeprecatedApi("torch.qr", (1, 9), "torch.linalg.qr", W, "torch.linalg.qr",
                  note="`some=False` becomes `mode=\"complete\"`"),
    DeprecatedApi("torch.cholesky", (1, 9), "torch.linalg.cholesky", W, "torch.linalg.cholesky",
                  note="`upper=True` becomes `.mH`"),
    DeprecatedApi("torch.chain_matmul", (1, 9), "torch.linalg.multi_dot([a, b, c])", W, "torch.linalg.multi_dot"),
    DeprecatedApi("torch.svd", (1, 9), "torch.linalg.svd",
                  note="it returns Vh, not V; `some` becomes `full_matrices`", silent=True),
    DeprecatedApi("torch.norm", (1, 9), "torch.linalg.vector_norm`, `torch.linalg.matrix_norm` or `torch.linalg.norm",
                  silent=True),
    DeprecatedApi("torch.ger", (1, 9), "torch.outer", R, "torch.outer", silent=True),
    DeprecatedApi("torch.lu", (1, 13), "torch.linalg.lu_factor"),
    DeprecatedApi("torch.lu_solve", (1, 13), "torch.linalg.lu_solve(LU, pivots, B)", note="arguments reordered"),
    DeprecatedApi("torch.triangular_solve", (1, 13), "torch.linalg.solve_triangular", note="arguments reordered"),
    DeprecatedApi("torch.range", None, "torch.arange(start, end + step, step)", note="`torch.arange` excludes its end"),
    # torch.nn
    DeprecatedApi("torch.nn.UpsamplingNearest2d", None, "torch.nn.Upsample(mode=\"nearest\")", silent=True),
    DeprecatedApi("torch.nn.UpsamplingBilinear2d", None, "torch.nn.Upsample(mode=\"bilinear\", align_corners=True)",
                  silent=True),
    DeprecatedApi("torch.nn.functional.upsample", None, "torch.nn.functional.interpolate", R,
                  "torch.nn.functional.interpolate"),
    DeprecatedApi("torch.nn.functional.upsample_nearest", None,
                  "torch.nn.functional.interpolate(..., mode=\"nearest\")"),
    DeprecatedApi("torch.nn.functional.upsample_bilinear", None,
                  "torch.nn.functional.interpolate(..., mode=\"bilinear\", align_corners=True)"),
    DeprecatedApi("torch.nn.utils.weight_norm", (2, 1),
                  "torch.nn.utils.parametrizations.weight_norm", U,
                  "torch.nn.utils.parametrizations.weight_norm", replacement_since=(2, 1),
                  note="state_dict keys change"),
    DeprecatedApi("torch.nn.utils.clip_grad_norm", None, "torch.nn.utils.clip_grad_norm_", R,
                  "torch.nn.utils.clip_grad_norm_"),
    *(
        DeprecatedApi(f"torch.nn.init.{name}", None, f"torch.nn.init.{name}_", R, f"torch.nn.init.{name}_")
        for name in ("uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                     "kaiming_normal", "orthogonal", "sparse")
    ),
    DeprecatedApi("torch.nn.utils.stateless.functional_call", (2, 0), "torch.func.functional_call", R,
                  "torch.func.functional_call", replacement_since=(2, 0)),
    DeprecatedApi("torch.backends.cuda.sdp_kernel", (2, 3),
                  "torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, ...])", replacement_since=(2, 3)),
    # functorch became torch.func.
    *(
        DeprecatedApi(f"functorch.{name}", (2, 0), f"torch.func.{name}", R, f"torch.func.{name}",
                      replacement_since=(2, 0))
        for name in ("vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "functionalize")
    ),
    DeprecatedApi("functorch.make_functional", (2, 0), "torch.func.functional_call", replacement_since=(2, 0)),
    DeprecatedApi("functorch.make_functional_with_buffers", (2, 0), "torch.func.functional_call",
                  replacement_since=(2, 0)),
    DeprecatedApi("functorch.combine_state_for_ensemble", (2, 0), "torch.func.stack_module_state",
                  replacement_since=(2, 0)),
    # Autocast state getters and setters that name the device.
    DeprecatedApi("torch.get_autocast_gpu_dtype", (2, 4), "torch.get_autocast_dtype(\"cuda\")",
                  replacement_since=(2, 4)),
    DeprecatedApi("torch.set_autocast_gpu_dtype", (2, 4), "torch.set_autocast_dtype(\"cuda\", dtype)",
                  replacement_since=(2, 4)),
    DeprecatedApi("torch.get_autocast_cpu_dtype", (2, 4), "torch.get_autocast_dtype(\"cpu\")",
                  replacement_since=(2, 4)),
    DeprecatedApi("torch.set_autocast_cpu_dtype", (2, 4), "torch.set_autocast_dtype(\"cpu\", dtype)",
                  replacement_since=(2, 4)),
    DeprecatedApi("torch.is_autocast_cpu_enabled", (2, 4), "torch.is_autocast_enabled(\"cpu\")",
                  replacement_since=(2, 4)),
    DeprecatedApi("torch.set_autocast_cpu_enabled", (2, 4), "torch.set_autocast_enabled(\"cpu\", enabled)",
                  replacement_since=(2, 4)),
    # Miscellaneous
    DeprecatedApi("torch.testing.assert_allclose", (1, 12), "torch.testing.assert_close",
                  U, "torch.testing.assert_close", replacement_since=(1, 9), note="its default checks are stricter"),
    DeprecatedApi("torch.set_default_tensor_type", (2, 1), "torch.set_default_dtype` / `torch.set_default_device",
                  replacement_since=(2, 1)),
    DeprecatedApi("torch.utils._pytree._register_pytree_node", (2, 2), "torch.utils._pytree.register_pytree_node",
                  U, "torch.utils._pytree.register_pytree_node", replacement_since=(2, 2)),
    DeprecatedApi("torch.library.impl_abstract", (2, 4), "torch.library.register_fake", R,
                  "torch.library.register_fake", replacement_since=(2, 4)),
    # `Variable(t)` returns `t.detach()`: the same data, without the graph that made it.
    DeprecatedApi("torch.autograd.Variable", None, "t.detach()` or `t.detach().requires_grad_()",
                  note="what `Variable(t)` and `Variable(t, requires_grad=True)` return: the same data, without "
                       "the graph that made it",
                  silent=True),
)

# Keyword arguments that were removed and are now silently ignored, with what to write instead.
# (`F.sigmoid` / `F.tanh` are not here: their 0.4.1 deprecation was withdrawn, pytorch#65909, and
# torch 2.x neither warns nor documents them as deprecated; scripts/check_deprecated_table.py.)
DEPRECATED_KEYWORDS: dict[tuple[str, str], str] = {
    ("torch.autograd.Variable", "volatile"): (
        "`volatile=True` was removed in torch 0.4 and does nothing: gradients are recorded; "
        "use `with torch.no_grad():` around the computation"
    ),
}
# The loss keywords replaced by `reduction=` (torch 0.4.1): every torch loss warns when given them.
DEPRECATED_LOSS_KEYWORDS = ("size_average", "reduce")

_AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")

DEPRECATED_AMP_APIS: tuple[DeprecatedAmpApi, ...] = (
    *(
        DeprecatedAmpApi(name, (2, 4), "torch.amp.autocast", device, "positional", _AUTOCAST_POSITIONAL, (1, 10))
        for device in ("cuda", "cpu")
        for name in (f"torch.{device}.amp.autocast", f"torch.{device}.amp.autocast_mode.autocast")
    ),
    *(
        DeprecatedAmpApi(name, (2, 4), "torch.amp.GradScaler", device, "positional", (), (2, 3))
        for device in ("cuda", "cpu")
        for name in (f"torch.{device}.amp.GradScaler", f"torch.{device}.amp.grad_scaler.GradScaler")
    ),
    *(
        DeprecatedAmpApi(name, (2, 4), f"torch.amp.{function}", "cuda", "keyword", (), (2, 4), bare_decorator=True)
        for function in ("custom_fwd", "custom_bwd")
        for name in (f"torch.cuda.amp.{function}", f"torch.cuda.amp.autocast_mode.{function}")
    ),
)

DEPRECATED_BY_NAME: dict[str, DeprecatedApi] = {api.name: api for api in DEPRECATED_APIS}
AMP_BY_NAME: dict[str, DeprecatedAmpApi] = {api.name: api for api in DEPRECATED_AMP_APIS}
# Cheap pre-filters: the last name segment a reference must end with to be worth resolving.
DEPRECATED_LAST_SEGMENTS = frozenset(api.last_segment for api in DEPRECATED_APIS)
AMP_LAST_SEGMENTS = frozenset(name.rsplit(".", 1)[-1] for name in AMP_BY_NAME)


def replacement_unavailable(replacement_since: Version | None, target: tuple[int, ...] | None) -> bool:
    """The configured minimum torch predates the replacement: the old API must stay."""
    return replacement_since is not None and target is not None and tuple(target[:2]) < replacement_since


def old_api_reportable(ctx, api: DeprecatedApi | DeprecatedAmpApi, node) -> bool:
    """A use of an old API (`node`, at the current point of the walk) is worth reporting: it is
    deprecated in a torch the project supports (not `torch.cuda.amp` under `torch<1.13`), its
    replacement exists in the configured minimum torch, and the code is not version-gated or a
    try/except fallback."""
    ceiling = ctx.settings.torch_ceiling
    if api.since is not None and ceiling is not None and api.since >= ceiling:
        return False
    if replacement_unavailable(api.replacement_since, ctx.settings.target_torch_version):
        return False
    return not ctx.guards.in_compat_code(node)
