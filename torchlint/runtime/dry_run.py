"""`--dry-run`: the script runs once with every tensor on the `meta` device (shapes, no data).

Factories the user's code calls make meta tensors, modules' parameters and buffers become meta
as they are registered, a tensor that meets a meta one in a torch function becomes one too (data
loaded from disk or NumPy, once it reaches the model), and moves (`.to(device)`, `.cuda()`,
`Module.to`) keep them there: no data is computed, and a model runs on any machine in seconds.
A shape error raises as it would with real tensors, at the user's line, and is recorded there.

What needs values cannot run: `.item()`, `.tolist()`, `bool(t)`, `.numpy()` stop the run with a
note saying where. So does the first optimizer step (one step is what the dry run is for).
Nothing is written to disk: `torch.save` does nothing, folders are not made, and files opened
for writing are opened in a scratch folder instead, removed at the end. A dry run is one
process: DataLoaders load in the main process, and spawning ranks or a process group stops it.
"""

from __future__ import annotations

import atexit
import builtins
import os
import shutil
import sys
import tempfile

import torch
from torch.overrides import TorchFunctionMode

from torchlint.runtime.checks import checks_explaining, first_line
from torchlint.runtime.health import ConstructionSites
from torchlint.runtime.logical import FACTORIES

_NEEDS_VALUES = {
    torch.Tensor.item: "`.item()`", torch.Tensor.tolist: "`.tolist()`", torch.Tensor.__bool__: "`bool()` of a tensor",
    torch.Tensor.numpy: "`.numpy()`", torch.Tensor.__int__: "`int()` of a tensor",
    torch.Tensor.__float__: "`float()` of a tensor", torch.Tensor.__index__: "a tensor used as an index",
    torch.Tensor.__format__: "formatting a tensor's value",
}
_MOVES = {torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu, torch.Tensor.pin_memory}
_WRITE_MODES = set("wax+")
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))
_PACKAGE_DIR = os.path.dirname(_OWN_DIR)
_DATA_LOADING = os.path.join(os.path.dirname(torch.utils.data.__file__), "")
# Tensor methods written in Python, between the user's call and this mode.
_TENSOR_WRAPPERS = {torch._tensor.__file__, torch.overrides.__file__}
# The attribute that holds, on a tensor a module returned, where that module was built.
_MADE_BY = "_torchlint_made_by"


class DryRunStop(BaseException):
    """The dry run has gone as far as it can (a BaseException: the script's `except Exception`
    does not swallow it). The run ends there as a success, its message a note."""

    ends_dry_run = True


class MetaMode(TorchFunctionMode):
    """Every torch call of the run: keeps the script's tensors on meta and records shape errors."""

    def __init__(self, rec, files, sites) -> None:
        super().__init__()
        self.rec = rec
        self.files = files
        self.sites = sites  # where each module was built

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _NEEDS_VALUES:
            return self._values(func, args, kwargs)
        if func in _MOVES:
            return _moved(args, kwargs)
        if func in FACTORIES and self.files.is_user_code(self.files.caller(1).f_code) and not _loading_data():
            return _made_on_meta(func, args, kwargs)
        if _any_meta(args) or _any_meta(kwargs):
            # A tensor meets a meta one: it becomes meta too (torch's own CPU work, a sampler's
            # permutation or a DataLoader's seed, stays as it is).
            args, kwargs = _meta(args), _meta(kwargs)
            if "device" in kwargs:
                kwargs["device"] = "meta"
        try:
            return func(*args, **kwargs)
        except Exception as error:
            text = str(error)
            for check in checks_explaining(text):
                self.rec.event(check.code, self.files.here(), f"{first_line(text)} (operands {_shapes(args, kwargs)})",
                               self._layers_involved(args, kwargs))
            raise

    def _layers_involved(self, args, kwargs) -> list:
        """Where the layers were built whose outputs the failed op got (a pool's output reaching a
        Linear), and the layer that ran the op, innermost first."""
        found = []
        for tensor in _tensors(args, kwargs):
            made_by = getattr(tensor, _MADE_BY, None)
            if made_by is not None and made_by not in (place for place, _ in found):
                found.append((made_by, f"a layer built here made the operand of shape {tuple(tensor.shape)}"))
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_locals.get("self")
            if isinstance(module, torch.nn.Module) and self.sites.of(module) is not None:
                found.append((self.sites.of(module), f"the layer that failed, `{type(module).__name__}`, is built here"))
                break
            frame = frame.f_back
        return found

    def tag_output(self, module, inputs, output) -> None:
        """A forward hook: each tensor a module returns remembers where that module was built
        (the innermost module's, not that of the containers that pass it on)."""
        site = self.sites.of(module)
        for tensor in (output if isinstance(output, (tuple, list)) else (output,)):
            if site is not None and isinstance(tensor, torch.Tensor) and getattr(tensor, _MADE_BY, None) is None:
                setattr(tensor, _MADE_BY, site)

    def _values(self, func, args, kwargs):
        """The user's code asking for values stops the run there; torch's own code asking gets
        those of ones of the same shape (its checks on values, `valid.all()`, then pass)."""
        tensor = args[0]
        if not isinstance(tensor, torch.Tensor) or not tensor.is_meta:
            return func(*args, **kwargs)
        if self._asked_by_user():
            position = self.files.here()
            where = f" ({os.path.basename(position[0])}:{position[1]})" if position else ""
            raise DryRunStop(f"the dry run stopped at {_NEEDS_VALUES[func]}{where}: it needs values, which meta tensors do not have")
        return func(torch.ones(tensor.shape, dtype=tensor.dtype, device="cpu"), *args[1:], **kwargs)

    def _asked_by_user(self) -> bool:
        """The user's code asked, directly or through a Tensor method written in Python
        (`Tensor.__format__`); torch's own functions asking are not the user."""
        frame = sys._getframe(2)
        while frame is not None and (frame.f_code.co_filename.startswith(_OWN_DIR) or frame.f_code.co_filename in _TENSOR_WRAPPERS):
            frame = frame.f_back
        return frame is not None and self.files.is_user_code(frame.f_code)

    def failed(self, error: BaseException) -> None:
        """The script's uncaught exception: recorded where it was raised (`__torch_function__`)."""


def _loading_data() -> bool:
    """A DataLoader fetches a batch: a dataset's tensors stay real (their values become labels,
    indices, host numbers) until they meet the meta model."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_DATA_LOADING):
            return True
        frame = frame.f_back
    return False


def _made_on_meta(func, args, kwargs):
    """A factory called by the user's code: made on meta (`from_numpy` takes no device)."""
    if func is torch.from_numpy:
        return func(*args, **kwargs).to("meta")
    return func(*_meta(args), **{**_meta(kwargs), "device": "meta"})


def _tensors(args, kwargs) -> list:
    """A call's tensors, in order (those in a list argument too: `torch.cat([a, b])`)."""
    tensors = [value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)]
    return tensors + [item for value in args if isinstance(value, (list, tuple)) for item in value if isinstance(item, torch.Tensor)]


def _shapes(args, kwargs) -> str:
    """`(4, 3, 28, 28) and (4, 1, 3, 3)`: the shapes of a failed call's tensors, in order."""
    return " and ".join(str(tuple(t.shape)) for t in _tensors(args, kwargs)) or "not tensors"


def _any_meta(value) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_meta
    if isinstance(value, (list, tuple)):
        return any(_any_meta(item) for item in value)
    if isinstance(value, dict):
        return any(_any_meta(item) for item in value.values())
    return False


def _meta(value):
    """Tensors (also inside lists, tuples and dicts) moved to the meta device."""
    if isinstance(value, torch.Tensor):
        return value if value.is_meta else value.to("meta")
    if isinstance(value, (list, tuple)):
        converted = [_meta(item) for item in value]
        return type(value)(converted) if isinstance(value, list) or type(value) is tuple else value
    if isinstance(value, dict):
        return {key: _meta(item) for key, item in value.items()}
    return value


def _moved(args, kwargs):
    """`.to(...)`, `.cuda()`, `.cpu()`: the tensor stays on meta, with the dtype asked for."""
    tensor = _meta(args[0])
    dtype = kwargs.get("dtype")
    for arg in args[1:]:
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, torch.Tensor):
            dtype = arg.dtype
    return tensor.to(dtype=dtype) if dtype is not None and dtype != tensor.dtype else tensor


def install(rec, files) -> MetaMode:
    """Put parameters and buffers on meta as modules register them, stop after the first
    optimizer step, keep the disk as it is."""
    from torch.nn.modules import module

    module.register_module_parameter_registration_hook(_meta_parameter)
    module.register_module_buffer_registration_hook(lambda owner, name, buffer: _meta(buffer))

    def one_step_done(optimizer, args, kwargs) -> None:
        raise DryRunStop("the dry run stopped after the first optimizer step")

    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(one_step_done)
    torch.save = _save_nothing
    _load_in_main_process()
    _stop_at_other_processes()
    scratch = tempfile.mkdtemp(prefix="torchlint-dry-run-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    builtins.open = _scratch_open(builtins.open, scratch)
    os.makedirs = _unless_ours(os.makedirs)
    os.mkdir = _unless_ours(os.mkdir)
    sites = ConstructionSites(files)
    sites.install()
    mode = MetaMode(rec, files, sites)
    module.register_module_forward_hook(mode.tag_output)
    return mode


def _meta_parameter(owner, name, parameter):
    if parameter is None or parameter.is_meta:
        return None
    return torch.nn.Parameter(parameter.detach().to("meta"), requires_grad=parameter.requires_grad)


def _load_in_main_process() -> None:
    """DataLoader workers would send meta tensors between processes: the dry run loads its
    batches in the main process."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__

    def init(self, *args, **kwargs):
        kwargs.update(persistent_workers=False, prefetch_factor=None)
        if len(args) > 5:
            args = (*args[:5], 0, *args[6:])  # num_workers given by position
        else:
            kwargs["num_workers"] = 0
        original(self, *args, **kwargs)

    DataLoader.__init__ = init


def _stop_at_other_processes() -> None:
    """A dry run is one process: starting ranks or a process group ends it, saying so."""
    import torch.distributed
    import torch.multiprocessing

    def stop(name):
        def stopped(*args, **kwargs):
            raise DryRunStop(f"the dry run stopped at `{name}`: it runs the script in one process, without a process group")

        return stopped

    torch.multiprocessing.spawn = stop("torch.multiprocessing.spawn")
    torch.multiprocessing.start_processes = stop("torch.multiprocessing.start_processes")
    if torch.distributed.is_available():
        torch.distributed.init_process_group = stop("torch.distributed.init_process_group")


def _save_nothing(obj, f, *args, **kwargs) -> None:
    """`torch.save` in a dry run: meta tensors hold nothing to save, and the disk stays as it was."""


def _called_by_torchlint() -> bool:
    """The caller of the patched function is torchlint itself: its record of the run is written
    where it belongs."""
    return sys._getframe(2).f_code.co_filename.startswith(_PACKAGE_DIR)


def _unless_ours(original):
    """A folder the script makes is not made (what it writes there goes to the scratch folder)."""
    def call(*args, **kwargs):
        return original(*args, **kwargs) if _called_by_torchlint() else None

    return call


def _scratch_open(original, scratch: str):
    def open_(file, mode="r", *args, **kwargs):
        if not _called_by_torchlint() and isinstance(file, (str, os.PathLike)) and _WRITE_MODES & set(mode):
            file = os.path.join(scratch, os.path.basename(os.fspath(file)) or "unnamed")
        return original(file, mode, *args, **kwargs)

    return open_
