"""Logical devices: confirm device bugs on a machine without the accelerator.

Tensors really live on the CPU; a Python attribute `_tl_dev` on a tensor says where it would be:
- a string ("cuda" or "mps"): on the logical accelerator;
- a position tuple: on the CPU, created by a factory at that place in the user's code;
- absent: on the CPU, origin unknown.
`.to("cuda")`, `.cuda()` and `device="cuda"` run on the CPU and tag the result (a copy, as on a
real accelerator: the receiver keeps its place, so a discarded `x.to(device)` stays a bug);
`.cpu()` drops the tag; every other op gives its outputs the accelerator tag if an input has it,
and reports a mix when a non-0-dim CPU tensor meets an accelerator one (instrument.Runtime).
`Tensor.device`/`is_cuda` answer the logical device, `Module.to/.cuda` tag parameters and buffers,
and the CUDA (or MPS) API a training script touches answers as if the device were there.
"""

from __future__ import annotations

import torch

TAG = "_tl_dev"
_T = torch.Tensor

# Factories that create a tensor from nothing (no tensor input): their CPU results remember the
# user's line that created them, so a mix is reported where `device=` belongs.
FACTORIES = {
    getattr(torch, name)
    for name in (
        "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange",
        "linspace", "logspace", "eye", "tensor", "as_tensor", "from_numpy", "scalar_tensor",
        "empty_strided", "normal", "tril_indices", "triu_indices",
    )
    if hasattr(torch, name)
}


def logical_kind(device: str) -> str | None:
    if device.startswith("logical:"):
        return device.split(":", 1)[1]
    return None


def device_kind(device) -> str | None:
    """"cuda"/"mps"/"cpu"/... for what a user passes as a device (str, torch.device, int)."""
    if isinstance(device, str):
        return device.split(":", 1)[0]
    if isinstance(device, torch.device):
        return device.type
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda"
    return None


def _tag(tensor):
    tag = getattr(tensor, TAG, None)
    return tag if tag.__class__ is str else None


def property_handlers(kind: str, device_reads: dict) -> dict:
    """Handlers for `Tensor.device` & co. `device_reads` maps id(a CPU device object handed out)
    to (that object, the origin of the tensor it was read from), so that a factory given
    `device=x.device` passes the blame for being on the CPU on to `x`."""
    logical_device = torch.device(kind, 0) if kind == "cuda" else torch.device(kind)

    def device(func, args, kwargs):
        if _tag(args[0]):
            return logical_device
        answer = func(*args, **kwargs)
        origin = getattr(args[0], TAG, None)
        if origin is not None:
            device_reads.clear()  # only the latest read matters: `device=x.device` comes right after
            device_reads[id(answer)] = (answer, origin)
        return answer

    def is_kind(func, args, kwargs):
        return _tag(args[0]) is not None

    def is_cpu(func, args, kwargs):
        return _tag(args[0]) is None

    def get_device(func, args, kwargs):
        return 0 if _tag(args[0]) else -1

    handlers = {_T.device.__get__: device, _T.get_device: get_device}
    handlers[getattr(_T, f"is_{kind}").__get__] = is_kind
    if hasattr(_T, "is_cpu"):
        handlers[_T.is_cpu.__get__] = is_cpu
    return handlers


def _target(func, args, kwargs):
    """(logical target kind or None, args, kwargs with the device replaced by "cpu")."""
    name = func.__name__
    if name == "cuda":
        return "cuda", args[:1], {k: v for k, v in kwargs.items() if k in ("non_blocking", "memory_format")}
    if name == "mps":
        return "mps", args[:1], {}
    if name == "cpu":
        return "cpu", args, kwargs
    if name != "to":
        return None, args, kwargs
    if "device" in kwargs:
        kind = device_kind(kwargs["device"])
        kwargs = dict(kwargs)
        kwargs["device"] = "cpu" if kind not in (None, "cpu") else kwargs["device"]
        return kind, args, kwargs
    if len(args) > 1:
        first = args[1]
        if isinstance(first, torch.Tensor):
            return (_tag(first) or "cpu"), args, kwargs
        kind = device_kind(first)
        if kind is not None:
            if kind != "cpu":
                args = (args[0], "cpu", *args[2:])
            return kind, args, kwargs
    return None, args, kwargs


def convert(runtime, func, tensor, args, kwargs):
    """`.to()`/`.cuda()`/`.cpu()`/dtype conversions under logical devices."""
    kind = runtime.kind
    target, args, kwargs = _target(func, args, kwargs)
    source = _tag(tensor)
    if target is not None and target not in ("cpu", kind):
        return runtime._call(func, args, kwargs)  # another device: fail as it really would
    if func.__name__ in ("cuda", "mps"):
        out = tensor
        if "memory_format" in kwargs:
            out = tensor.contiguous(memory_format=kwargs["memory_format"])
    else:
        out = runtime._call(func, args, kwargs)
    if target == kind:
        if source != kind and out is tensor:
            out = tensor.clone()  # a real move copies; the receiver stays where it was
        out._tl_dev = kind
        if kind == "mps" and out.dtype is torch.float64:
            runtime.rec.event("TL306", runtime.files.here(), "a float64 tensor on the (logical) mps device")
    elif target == "cpu":
        if source is not None:
            runtime._count_sync(".cpu()", depth=4)
            if out is tensor:
                out = tensor.clone()
            out.__dict__.pop(TAG, None)
    elif source is not None and out is not tensor:
        out._tl_dev = source
        if kind == "mps" and out.dtype is torch.float64:
            runtime.rec.event("TL306", runtime.files.here(), "a float64 tensor on the (logical) mps device")
    return out


def _tag_module(module, kind: str | None) -> None:
    for tensor in list(module.parameters()) + list(module.buffers()):
        if kind is None:
            tensor.__dict__.pop(TAG, None)
        else:
            tensor._tl_dev = kind


def install(kind: str) -> None:
    """Patch torch so the script sees a `kind` accelerator and modules carry device tags."""
    nn = torch.nn
    original_to, original_cuda, original_cpu = nn.Module.to, nn.Module.cuda, nn.Module.cpu

    def module_to(self, *args, **kwargs):
        device = torch._C._nn._parse_to(*args, **kwargs)[0]
        result = original_to(self, *args, **kwargs)
        if device is not None:
            _tag_module(self, kind if device.type == kind else None)
        return result

    def module_cuda(self, device=None):
        result = original_to(self, "cuda")
        _tag_module(self, "cuda")
        return result

    def module_cpu(self):
        result = original_cpu(self)
        _tag_module(self, None)
        return result

    module_to.__wrapped__, module_cuda.__wrapped__, module_cpu.__wrapped__ = original_to, original_cuda, original_cpu
    nn.Module.to = module_to
    if kind == "cuda":
        nn.Module.cuda = module_cuda
    nn.Module.cpu = module_cpu

    # nn.Parameter(t) makes a new tensor object in C++: keep the tag of the data.
    original_new = nn.Parameter.__new__

    def parameter_new(cls, data=None, requires_grad=True):
        parameter = original_new(cls, data, requires_grad)
        tag = _tag(data) if data is not None else None
        if tag is not None:
            parameter._tl_dev = tag
        return parameter

    nn.Parameter.__new__ = staticmethod(parameter_new)

    original_load = torch.load

    def load(f, map_location=None, *args, **kwargs):
        target = None
        if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
            target = device_kind(map_location)
            if target == kind:
                map_location = "cpu"
        result = original_load(f, map_location, *args, **kwargs)
        if target == kind:
            _tag_tree(result, kind)
        return result

    torch.load = load

    # Pinned memory needs the real accelerator, and DataLoader pins in a thread of its own, where
    # the function mode (thread-local) does not reach: pinning is a no-op on the class itself.
    torch.Tensor.pin_memory = _pin_memory
    torch.Tensor.is_pinned = _is_pinned

    accelerator = torch.device(kind)
    if hasattr(torch, "accelerator"):
        import contextlib

        stubs = {
            "is_available": _returning(True),
            "current_accelerator": _returning(accelerator),
            "device_count": _returning(1),
            "current_device_index": _returning(0),
            "current_device_idx": _returning(0),
            "set_device_index": _returning(None),
            "set_device_idx": _returning(None),
            "synchronize": _returning(None),
            "empty_cache": _returning(None),
            "current_stream": lambda device=None: _Stream(),
            "is_current_stream_capturing": _returning(False),
            "set_stream": _returning(None),
            "device_index": lambda device=None: contextlib.nullcontext(),
        }
        for name, value in stubs.items():
            if hasattr(torch.accelerator, name):
                setattr(torch.accelerator, name, value)
    if kind == "cuda":
        _stub_cuda()
    else:
        _stub_mps()


def _pin_memory(self, device=None):
    return self


def _is_pinned(self, device=None):
    return False


def _tag_tree(value, kind: str) -> None:
    if isinstance(value, torch.Tensor):
        value._tl_dev = kind
    elif isinstance(value, dict):
        for item in value.values():
            _tag_tree(item, kind)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tag_tree(item, kind)


class _Properties:
    name = "torchlint logical cuda"
    major, minor = 8, 0
    total_memory = 16 * 2**30
    multi_processor_count = 1
    is_integrated = False


class _Event:
    def __init__(self, *args, **kwargs) -> None:
        pass

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, other) -> float:
        return 0.0


class _Stream(_Event):
    def is_capturing(self) -> bool:
        return False

    def wait_stream(self, stream) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None):
        return event or _Event()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _stub_cuda() -> None:
    import contextlib

    cuda = torch.cuda
    # A new function object per stub: torch._dynamo refuses one object under two names.
    nothing = _returning(None)
    zero = _returning(0)
    stubs = {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": nothing,
        "get_device_name": lambda device=None: _Properties.name,
        "get_device_properties": lambda device=None: _Properties(),
        "get_device_capability": lambda device=None: (8, 0),
        "is_bf16_supported": lambda *args, **kwargs: True,
        "synchronize": nothing,
        "empty_cache": nothing,
        "ipc_collect": nothing,
        "init": nothing,
        "is_initialized": lambda: True,
        "manual_seed": nothing,
        "manual_seed_all": nothing,
        "seed": nothing,
        "seed_all": nothing,
        "set_sync_debug_mode": nothing,
        "get_sync_debug_mode": zero,
        "memory_allocated": zero,
        "max_memory_allocated": zero,
        "memory_reserved": zero,
        "max_memory_reserved": zero,
        "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing,
        "memory_stats": lambda *args, **kwargs: {},
        "memory_summary": lambda *args, **kwargs: "",
        "mem_get_info": lambda *args, **kwargs: (_Properties.total_memory, _Properties.total_memory),
        "Stream": _Stream,
        "Event": _Event,
        "current_stream": lambda device=None: _Stream(),
        "is_current_stream_capturing": _returning(False),
        "default_stream": lambda device=None: _Stream(),
        "stream": lambda stream=None: contextlib.nullcontext(),
        "device": lambda device=None: contextlib.nullcontext(),
    }
    for name, value in stubs.items():
        if value is nothing or value is zero:
            value = _returning(value())
        setattr(cuda, name, value)
    cuda.memory.empty_cache = _returning(None)
    # RNNs ask cuDNN whether it takes their CUDA weights (flatten_parameters): the CPU build warns
    # that it has no cuDNN, where a GPU machine answers silently. No tensor here is for cuDNN.
    torch.backends.cudnn.is_acceptable = _returning(False)


def _stub_mps() -> None:
    torch.backends.mps.is_available = lambda: True
    torch.backends.mps.is_built = lambda: True
    mps = torch.mps
    for name in ("synchronize", "empty_cache", "manual_seed", "seed", "set_per_process_memory_fraction"):
        setattr(mps, name, _returning(None))
    for name in ("current_allocated_memory", "driver_allocated_memory", "recommended_max_memory"):
        setattr(mps, name, _returning(0))
    mps.device_count = _returning(1)


def hide_accelerators() -> None:
    """--device cpu: the script finds no MPS device either (CUDA is hidden by its variable)."""
    torch.backends.mps.is_available = _returning(False)
    if hasattr(torch, "accelerator"):
        torch.accelerator.is_available = _returning(False)
        torch.accelerator.current_accelerator = _returning(None)


def _returning(value):
    def stub(*args, **kwargs):
        return value

    return stub
