"""Check TL504/TL501's deprecated-API table against what the installed torch actually does.

Calls each table entry with small sample arguments under `warnings.catch_warnings` and prints,
per entry, the warning it raises (category and first words), the exception it raises, or
"silent" (and marks where the table's `silent` flag, which makes TL504 a note, disagrees). Then lists public torch functions whose source says they are deprecated but that the
table does not hold: candidates for new entries, to be judged by hand.

Needs torch (`pip install torchlint[runtime]`); static torchlint never runs this.

    python scripts/check_deprecated_table.py
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from torchlint.analysis.deprecated_api import AMP_BY_NAME, DEPRECATED_BY_NAME  # noqa: E402

_M = torch.eye(3) * 2 + torch.ones(3, 3) * 0.1
_V = torch.ones(3)
# Sample arguments per entry; entries not listed are called with no arguments (or just resolved).
SAMPLES = {
    "torch.solve": (_M, _M), "torch.eig": (_M,), "torch.lstsq": (_M, _M), "torch.symeig": (_M,),
    "torch.matrix_rank": (_M,), "torch.qr": (_M,), "torch.cholesky": (_M,), "torch.chain_matmul": (_M, _M),
    "torch.svd": (_M,), "torch.norm": (_V,), "torch.ger": (_V, _V), "torch.lu": (_M,),
    "torch.triangular_solve": (_M, _M), "torch.range": (0, 3),
    "torch.nn.UpsamplingNearest2d": (), "torch.nn.UpsamplingBilinear2d": (),
    "torch.nn.functional.upsample": (torch.ones(1, 1, 2, 2), None, 2),
    "torch.nn.functional.upsample_nearest": (torch.ones(1, 1, 2, 2), None, 2),
    "torch.nn.functional.upsample_bilinear": (torch.ones(1, 1, 2, 2), None, 2),
    "torch.nn.functional.sigmoid": (_V,), "torch.nn.functional.tanh": (_V,),
    "torch.nn.utils.weight_norm": (torch.nn.Linear(2, 2),),
    "torch.nn.utils.clip_grad_norm": ([torch.nn.Parameter(_V)], 1.0),
    "torch.testing.assert_allclose": (_V, _V), "torch.autograd.Variable": (_V,),
    "torch.set_default_tensor_type": (torch.FloatTensor,),
    "torch.get_autocast_gpu_dtype": (), "torch.get_autocast_cpu_dtype": (),
    "torch.is_autocast_cpu_enabled": (),
    "torch.cuda.amp.GradScaler": (), "torch.cuda.amp.grad_scaler.GradScaler": (),
    "torch.cpu.amp.GradScaler": (), "torch.cpu.amp.grad_scaler.GradScaler": (),
    "torch.cuda.amp.autocast": (), "torch.cuda.amp.autocast_mode.autocast": (),
    "torch.cpu.amp.autocast": (), "torch.cpu.amp.autocast_mode.autocast": (),
    **{f"torch.nn.init.{name}": (torch.empty(2, 2),) for name in (
        "uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal")},
    "torch.nn.init.constant": (torch.empty(2, 2), 0.5), "torch.nn.init.sparse": (torch.empty(2, 2), 0.5),
    **{f"functorch.{name}": (torch.sin,) for name in (
        "vmap", "grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "functionalize")},
    "functorch.vjp": (torch.sin, _V), "functorch.jvp": (torch.sin, (_V,), (_V,)),
    "functorch.make_functional": (torch.nn.Linear(2, 2),),
    "functorch.make_functional_with_buffers": (torch.nn.Linear(2, 2),),
    "functorch.combine_state_for_ensemble": ([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)],),
    "torch.nn.utils.stateless.functional_call": (torch.nn.Linear(3, 3), {}, (_V,)),
    "torch.backends.cuda.sdp_kernel": (),
    "torch.set_autocast_gpu_dtype": (torch.float16,), "torch.set_autocast_cpu_dtype": (torch.bfloat16,),
    "torch.set_autocast_cpu_enabled": (False,),
    "torch.lu_solve": (_M, *torch.linalg.lu_factor(_M)),
    "torch.utils._pytree._register_pytree_node": (type("Box", (), {}), lambda box: ([], None), lambda c, x: None),
    "torch.library.impl_abstract": ("torchlint_check::op",),
    **{f"torch.cuda.amp.{path}": (torch.sin,) for path in (
        "custom_fwd", "autocast_mode.custom_fwd", "custom_bwd", "autocast_mode.custom_bwd")},
}


def resolve(name: str):
    module_name, _, attribute = name.rpartition(".")
    while module_name:
        try:
            value = importlib.import_module(module_name)
            break
        except ImportError:
            module_name, _, head = module_name.rpartition(".")
            attribute = f"{head}.{attribute}"
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def outcome(name: str) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = resolve(name)
            if name in SAMPLES:
                value(*SAMPLES[name])
        except Exception as error:  # noqa: BLE001 - the point is to record what happens
            first = str(error).strip().splitlines()[0][:90] if str(error).strip() else ""
            return f"raises {type(error).__name__}: {first}"
    relevant = [w for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning, UserWarning))]
    if not relevant:
        return "silent" if name in SAMPLES else "resolved, not called"
    warning = relevant[0]
    return f"{warning.category.__name__}: {str(warning.message).splitlines()[0][:90]}"


_DEPRECATION_TEXT = re.compile(r"is deprecated|has been deprecated|will be removed|@deprecated|deprecated in favor")


def untabled_deprecations() -> list[str]:
    """Public functions of torch's Python sources whose body or decorator says deprecated."""
    known = set(DEPRECATED_BY_NAME) | set(AMP_BY_NAME)
    found = []
    root = Path(torch.__file__).parent
    for module_name in ("torch.functional", "torch.nn.functional", "torch.nn.utils", "torch.autograd", "torch.testing",
                        "torch.cuda", "torch.backends.cuda", "torch.utils.data", "torch.nn.init", "torch.serialization"):
        module = importlib.import_module(module_name)
        for attribute, value in vars(module).items():
            if attribute.startswith("_") or not callable(value):
                continue
            try:
                source = inspect.getsource(value)
            except (OSError, TypeError):
                continue
            qualified = f"{module_name}.{attribute}"
            public = {qualified, f"torch.{attribute}"} if module_name == "torch.functional" else {qualified}
            source_file = Path(inspect.getsourcefile(value) or "")
            if root not in source_file.parents:
                continue  # re-exported from another package (typing_extensions...)
            if _DEPRECATION_TEXT.search(source[:3000]) and not public & known:
                found.append(f"{qualified} ({source_file.relative_to(root)})")
    return sorted(set(found))


def main() -> None:
    print(f"torch {torch.__version__}")
    for name in [*DEPRECATED_BY_NAME, *AMP_BY_NAME]:
        found = outcome(name)
        api = DEPRECATED_BY_NAME.get(name)
        # A `silent` entry is reported as a note: flag the table where torch disagrees.
        mismatch = api is not None and name in SAMPLES and api.silent != (found == "silent")
        print(f"{name}: {found}" + ("  <- the table's `silent` flag disagrees" if mismatch else ""))
    print("\nPublic functions whose source mentions deprecation, not in the table (judge by hand):")
    for line in untabled_deprecations():
        print(f"  {line}")


if __name__ == "__main__":
    main()
