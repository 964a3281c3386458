"""The child's instrumentation: probes, optimizer hooks, warnings, and the checks of torch calls.

Logical devices need every op to see its tensors' device tags: one TorchFunctionMode, whose hot
path is a short scan of the tensor arguments' tags (see logical.py for what a tag is and how
devices are emulated). On real devices and the CPU only a few Tensor methods matter (syncs,
conversions): they are wrapped on the class (MethodHooks), and every other op runs untouched,
where even an empty function mode makes a loop of tiny ops 1.8x slower.
"""

from __future__ import annotations

import dis
import operator
import os
import weakref

import torch
from torch.overrides import TorchFunctionMode

from torchlint.runtime import logical
from torchlint.runtime.checks import CHECKS, check_for, checks_explaining, first_line
from torchlint.runtime.frames import UserFiles
from torchlint.runtime.recorder import Recorder

Tensor = torch.Tensor
TAG = logical.TAG


class Probe:
    """The `__torchlint__` builtin the probed code calls (see probes.py).

    Code that `torch.compile` traces reaches it too: each probe first asks
    `torch.compiler.is_compiling()`, which Dynamo reads as a constant, and does nothing there
    (the run then sees the site as not reached), so the traced graph is the user's alone."""

    def __init__(self, rec: Recorder, sites: list) -> None:
        self.rec = rec
        self.sites = {site.id: site for site in sites}
        self.checks = {site.id: check_for(site.code) for site in sites}

    def __call__(self) -> None:
        """Never called: Dynamo traces a builtin that is callable (a plain object fails its
        `is_builtin_constant` assertion, which breaks a compiled function)."""

    def mark(self, site: int) -> None:
        if torch.compiler.is_compiling():
            return
        self.rec.reached.add(site)

    def iterate(self, site: int) -> None:
        """An iteration of the loop that holds the TL302 site `site` begins."""
        if torch.compiler.is_compiling():
            return
        rec = self.rec
        count = rec.iterations.get(site)
        if count is None:
            flagged = self.sites[site]
            filename = os.path.realpath(flagged.filename)
            for row in range(flagged.row, flagged.end_row + 1):
                rec.loop_rows[(filename, row)] = site
        rec.iterations[site] = (count or 0) + 1

    def value(self, site: int):
        if torch.compiler.is_compiling():
            return _identity
        self.rec.reached.add(site)
        check = self.checks.get(site)
        if check is None or not check.wants_value:
            return _identity

        def probed(value):
            self._probe(check.on_value, site, value)
            return value

        return probed

    def operation(self, site: int, name: str):
        """`left <op> right` at a site whose check sees the operands: computed by the `operator`
        module's function of that name (the same dunder methods, reflected ones included)."""
        compute = getattr(operator, name)
        if torch.compiler.is_compiling():
            return compute
        check = self.checks[site]
        seen = self.value(site)

        def probed(left, right):
            result = compute(left, right)
            self._probe(check.on_operands, site, name, left, right, result)
            return seen(result)

        return probed

    def _probe(self, method, *details) -> None:
        # What a probe does is not the user's: its own syncs (reading a count off a tensor)
        # are left out of the TL302 accounting.
        rec = self.rec
        rec.probing = True
        try:
            method(rec, *details)
        except Exception:  # noqa: BLE001 - a probe never breaks the user's program
            pass
        finally:
            rec.probing = False

    def call(self, site: int, func):
        if torch.compiler.is_compiling():
            return func
        self.rec.reached.add(site)
        check = self.checks.get(site)
        if check is None or not check.wants_call:
            return func

        def hook(method, *details) -> None:
            self._probe(method, site, func, *details)

        def probed(*args, **kwargs):
            hook(check.before_call, args, kwargs)
            try:
                result = func(*args, **kwargs)
            except Exception as error:
                hook(check.on_error, args, kwargs, error)
                raise
            hook(check.after_call, args, kwargs, result)
            return result

        return probed


def _identity(value):
    return value


class GradTracker:
    """TL001/TL002 from global optimizer step hooks and per-parameter accumulation hooks.

    After a step, the first accumulation into a parameter's gradient that finds the same `p.grad`
    object with `_version` one higher means nothing cleared it; when the same optimizer steps
    again with that gradient, the carried-over gradient reached an update (TL001). A step whose parameters
    all still hold the gradients left by a zeroing saw no gradients (TL002). Gradient
    accumulation, `set_to_none=True` (a new object) and `set_to_none=False` (`zero_()` bumps the
    version once more) all pass.
    """

    def __init__(self, rec: Recorder, files: UserFiles) -> None:
        self.rec = rec
        self.files = files
        self.hooked: dict[int, weakref.ref] = {}  # id(p) -> p (tensors compare by value)
        self.after_step: dict[int, tuple] = {}  # id(p) -> (weakref to grad, version, position)
        self.carried: dict[int, tuple] = {}  # id(p) -> position of the step it was carried over
        self.zeroed: dict[int, tuple] = {}  # id(p) -> position of the zeroing call

    def install(self) -> None:
        from torch.optim.optimizer import (
            Optimizer,
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        register_optimizer_step_pre_hook(self._pre_step)
        register_optimizer_step_post_hook(self._post_step)
        tracker = self
        original_optimizer_zero = Optimizer.zero_grad
        original_module_zero = torch.nn.Module.zero_grad

        def optimizer_zero_grad(opt, *args, **kwargs):
            result = original_optimizer_zero(opt, *args, **kwargs)
            tracker._zeroed(_params(opt))
            return result

        def module_zero_grad(module, *args, **kwargs):
            result = original_module_zero(module, *args, **kwargs)
            tracker._zeroed(list(module.parameters()))
            return result

        optimizer_zero_grad.__wrapped__ = original_optimizer_zero
        module_zero_grad.__wrapped__ = original_module_zero
        Optimizer.zero_grad = optimizer_zero_grad
        torch.nn.Module.zero_grad = module_zero_grad

    def _hook(self, params) -> None:
        for p in params:
            known = self.hooked.get(id(p))
            if (known is None or known() is not p) and p.requires_grad and p.is_leaf:
                self.hooked[id(p)] = weakref.ref(p)
                p.register_post_accumulate_grad_hook(self._accumulated)

    def _zeroed(self, params) -> None:
        self._hook(params)
        position = self.files.here()
        for p in params:
            self.zeroed[id(p)] = position
            self.carried.pop(id(p), None)

    def _pre_step(self, opt, args, kwargs) -> None:
        params = [p for p in _params(opt) if p.requires_grad]
        self._hook(params)
        if params and all(id(p) in self.zeroed for p in params):
            self.rec.event(
                "TL002", self.zeroed[id(params[0])],
                "optimizer.step() ran with every gradient unchanged since zero_grad()",
            )
        carried = [self.carried.pop(id(p)) for p in params if id(p) in self.carried]
        if carried:
            self.rec.event(
                "TL001", carried[0],
                "a gradient was carried over an optimizer step: it was accumulated into, not cleared",
            )
        for p in params:
            self.zeroed.pop(id(p), None)

    def _post_step(self, opt, args, kwargs) -> None:
        position = self.files.here()
        for p in _params(opt):
            grad = p.grad
            if grad is not None:
                self.after_step[id(p)] = (weakref.ref(grad), grad._version, position)
        self.rec.step(id(opt))

    def _accumulated(self, p) -> None:
        self.zeroed.pop(id(p), None)
        entry = self.after_step.pop(id(p), None)
        if entry is None:
            return
        old = entry[0]()
        grad = p.grad
        if old is not None and grad is old and grad._version == entry[1] + 1:
            self.carried[id(p)] = entry[2]  # a bug once the next step uses it


def _params(opt) -> list:
    return [p for group in opt.param_groups for p in group["params"]]


# Functions with a meaning for the runtime checks; everything else takes the generic path.
_T = torch.Tensor
SYNCS = {
    _T.item: ".item()", _T.tolist: ".tolist()", _T.numpy: ".numpy()", _T.__bool__: "bool(tensor)",
    _T.__float__: "float(tensor)", _T.__int__: "int(tensor)", _T.__index__: "tensor as an index",
    _T.__format__: "formatting a tensor",
}
CONVERSIONS = {
    _T.to, _T.cuda, _T.cpu, _T.float, _T.half, _T.double, _T.bfloat16, _T.long, _T.int,
    _T.bool, _T.type,
}
if hasattr(_T, "mps"):
    CONVERSIONS.add(_T.mps)
# Multi-tensor ops that legally take CPU tensors alongside accelerator ones.
MIX_EXEMPT = {
    _T.__getitem__, _T.__setitem__, _T.copy_, _T.index_put_, _T.index_put, _T.__repr__,
    _T.data.__set__, _T.grad.__set__, torch._has_compatible_shallow_copy_type,
}


class Runtime(TorchFunctionMode):
    """One function mode for every check; see the module docstring."""

    def __init__(self, rec: Recorder, files: UserFiles, device: str) -> None:
        super().__init__()
        self.rec = rec
        self.files = files
        self.kind = logical.logical_kind(device)  # "cuda"/"mps" when emulated, else None
        self.real_accelerator = device in ("cuda", "mps")
        self.discards: dict = {}  # code object -> offsets of calls whose result is popped
        self.device_reads: dict = {}  # see logical.property_handlers
        self.left_behind: set = set()  # positions of discarded .to() calls whose receiver stayed
        self.special = {}
        for func in SYNCS:
            self.special[func] = self._sync
        for func in CONVERSIONS:
            self.special[func] = self._convert
        if self.kind is not None:
            self.special.update(logical.property_handlers(self.kind, self.device_reads))

    # -- dispatch ---------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        handler = self.special.get(func)
        if handler is not None:
            return handler(func, args, kwargs)
        if self.kind is not None:
            return self._logical(func, args, kwargs)
        try:
            return func(*args, **kwargs)
        except Exception as error:
            self._error(error)
            raise

    def _error(self, error: Exception, position=None) -> None:
        text = str(error)
        for check in checks_explaining(text):
            self.rec.event(check.code, position or self.files.here(), first_line(text))

    def failed(self, error: BaseException) -> None:
        """The script's uncaught exception: the mode saw it raised (`_call`)."""

    # -- logical devices: the generic path -----------------------------------------------------
    def _logical(self, func, args, kwargs):
        kind = self.kind
        device = kwargs.get("device")
        if device is not None and logical.device_kind(device) == kind:
            kwargs = dict(kwargs)
            kwargs["device"] = "cpu"
            out = self._call(func, args, kwargs)
            self._tag_outputs(out, kind)
            return out
        accelerated = False
        cpu_tensor = None
        for arg in args:
            if isinstance(arg, Tensor):
                tag = getattr(arg, TAG, None)
                if tag.__class__ is str:
                    accelerated = True
                elif cpu_tensor is None and arg.dim():
                    cpu_tensor = arg
            elif arg.__class__ in (list, tuple) and arg and isinstance(arg[0], Tensor):
                for item in arg:
                    tag = getattr(item, TAG, None)
                    if tag.__class__ is str:
                        accelerated = True
                    elif cpu_tensor is None and isinstance(item, Tensor) and item.dim():
                        cpu_tensor = item
        if kwargs:
            for arg in kwargs.values():
                if isinstance(arg, Tensor):
                    tag = getattr(arg, TAG, None)
                    if tag.__class__ is str:
                        accelerated = True
                    elif cpu_tensor is None and arg.dim():
                        cpu_tensor = arg
        if accelerated:
            if cpu_tensor is not None and func not in MIX_EXEMPT:
                self._mixed(func, cpu_tensor)
            out = self._call(func, args, kwargs)
            self._tag_outputs(out, kind)
            return out
        out = self._call(func, args, kwargs)
        if cpu_tensor is not None:
            origin = getattr(cpu_tensor, TAG, None)
            if origin is not None and isinstance(out, Tensor) and out is not cpu_tensor:
                out._tl_dev = origin  # where this CPU data was created, for reports
        elif not args or not isinstance(args[0], Tensor):
            if func in logical.FACTORIES and isinstance(out, Tensor):
                read = self.device_reads.get(id(device))
                if read is not None and read[0] is device:
                    out._tl_dev = read[1]  # `device=x.device`: on the CPU because `x` is
                    return out
                frame = self.files.caller(2)
                if self.files.is_user_code(frame.f_code):
                    out._tl_dev = self.files.position(frame)
        return out

    def _call(self, func, args, kwargs):
        try:
            return func(*args, **kwargs)
        except Exception as error:
            self._error(error)
            raise

    def _tag_outputs(self, out, kind: str) -> None:
        if isinstance(out, Tensor):
            out._tl_dev = kind
            if kind == "mps" and out.dtype is torch.float64:
                self.rec.event("TL306", self.files.here(), "a float64 tensor on the (logical) mps device")
        elif isinstance(out, (list, tuple)):
            for item in out:
                if isinstance(item, Tensor):
                    item._tl_dev = kind

    def _mixed(self, func, cpu_tensor) -> None:
        origin = getattr(cpu_tensor, TAG, None)
        name = getattr(func, "__name__", None) or repr(func)
        if origin is not None and tuple(origin) in self.left_behind:
            detail = f"the result of this .to() was discarded, so the tensor stayed on the CPU; combined with {self.kind} tensors in {name}()"
            self.rec.event("TL301", tuple(origin), detail)
        elif origin is not None:
            detail = f"created on the CPU here, combined with {self.kind} tensors in {name}()"
            self.rec.event("TL301", tuple(origin), detail)
        else:
            detail = f"{name}() combines a CPU tensor of shape {tuple(cpu_tensor.shape)} with {self.kind} tensors"
            self.rec.event("TL301", self.files.here(), detail)

    # -- host syncs (TL302) -------------------------------------------------------------------
    def _on_accelerator(self, tensor) -> bool:
        if self.kind is not None:
            return getattr(tensor, TAG, None).__class__ is str
        return self.real_accelerator and tensor.device.type != "cpu"

    def _sync(self, func, args, kwargs):
        if args and isinstance(args[0], Tensor) and self._on_accelerator(args[0]):
            self._count_sync(SYNCS[func])
        return self._call(func, args, kwargs)

    def _count_sync(self, what: str, depth: int = 3) -> None:
        # Only syncs the user's code asks for directly: those inside libraries (GradScaler's
        # found-inf check) are not the user's to move.
        if self.rec.probing:
            return
        frame = self.files.caller(depth)
        if self.files.is_user_code(frame.f_code):
            self.rec.event("TL302", self.files.position(frame), f"host sync: {what}")

    # -- .to()/.cuda()/.cpu()/.float()...: devices and discarded results (TL304) ------------
    def _convert(self, func, args, kwargs):
        tensor = args[0] if args else None
        if not isinstance(tensor, Tensor):
            return self._call(func, args, kwargs)
        if self.kind is not None:
            out = logical.convert(self, func, tensor, args, kwargs)
        else:
            if func is _T.cpu and self._on_accelerator(tensor):
                self._count_sync(".cpu()")
            out = self._call(func, args, kwargs)
        if out is not tensor:
            frame = self.files.caller(2)
            if self.files.is_user_code(frame.f_code) and frame.f_lasti in self._discarded_calls(frame.f_code):
                name = getattr(func, "__name__", "to")
                position = self.files.position(frame)
                self.rec.event("TL304", position, f"the result of .{name}() is discarded; the tensor is unchanged")
                if self.kind is not None and getattr(tensor, TAG, None).__class__ is not str:
                    tensor._tl_dev = position  # a later mix is this line's doing
                    self.left_behind.add(position)
        return out

    def _discarded_calls(self, code) -> frozenset:
        found = self.discards.get(code)
        if found is None:
            instructions = list(dis.get_instructions(code))
            # Every offset up to the POP_TOP: while a Python function (a site probe's wrapper)
            # runs, the caller's f_lasti points into the call's inline cache, not at the call.
            found = frozenset(
                offset for ins, nxt in zip(instructions, instructions[1:])
                if ins.opname.startswith("CALL") and nxt.opname == "POP_TOP"
                for offset in range(ins.offset, nxt.offset, 2)
            )
            self.discards[code] = found
        return found


class MethodHooks:
    """Real devices and the CPU: the Runtime's handlers of syncs and conversions as methods of
    the Tensor class, and errors read off the script's uncaught exception. Dynamo traces a
    Tensor method by its name, so compiled code keeps its graphs (their ops run these methods
    when the graph runs eagerly)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.saved: dict[str, object] = {}

    def __enter__(self) -> MethodHooks:
        for func, handler in self.runtime.special.items():
            name = func.__name__
            self.saved[name] = Tensor.__dict__.get(name, _MISSING)
            setattr(Tensor, name, _method(func, handler))
        return self

    def __exit__(self, *exc) -> None:
        for name, original in self.saved.items():
            if original is _MISSING:
                delattr(Tensor, name)
            else:
                setattr(Tensor, name, original)

    def failed(self, error: BaseException) -> None:
        """An error a check knows, at the innermost user frame of its traceback."""
        tb = error.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        files = self.runtime.files
        frame = files.user_frame(tb.tb_frame) if tb is not None else None
        if frame is not None and isinstance(error, Exception):
            self.runtime._error(error, files.position(frame))


_MISSING = object()


def _method(func, handler):
    def method(*args, **kwargs):
        return handler(func, args, kwargs)

    method.__name__, method.__qualname__, method.__doc__ = func.__name__, f"Tensor.{func.__name__}", func.__doc__
    method.__wrapped__ = func
    return method


COMPILE_NOTE = (
    "torch.compile ran its models and functions eagerly: logical devices cannot run compiled "
    "code, so the calls were checked uncompiled (use --device cpu or a GPU to run them compiled)"
)


def install_compile_note(rec: Recorder) -> None:
    """Under logical devices, `torch.compile` returns its usual wrapper with TorchDynamo disabled
    (Dynamo would query the real CUDA runtime): the code runs eagerly, checked, and the user is
    told once."""
    original = torch.compile

    def compile_eagerly(*args, **kwargs):
        import torch._dynamo

        torch._dynamo.config.disable = True
        if COMPILE_NOTE not in rec.notes:
            rec.notes.append(COMPILE_NOTE)
        # With Dynamo disabled no frame is compiled, which `fullgraph=True` takes for a failure.
        kwargs.pop("fullgraph", None)
        return original(*args, **kwargs)

    compile_eagerly.__wrapped__ = original
    torch.compile = compile_eagerly


DATA_PARALLEL_NOTE = (
    "nn.DataParallel ran its module on one device: logical devices count one GPU, and "
    "DataParallel with one device calls its module directly (run on GPUs to check the replicas)"
)


def install_data_parallel_note(rec: Recorder) -> None:
    """Under logical devices, `nn.DataParallel` calls its module as it does with a single GPU,
    without scattering the inputs (the CPU build has no scatter): the user is told once."""
    data_parallel = torch.nn.DataParallel

    def forward(self, *inputs, **kwargs):
        if DATA_PARALLEL_NOTE not in rec.notes:
            rec.notes.append(DATA_PARALLEL_NOTE)
        return self.module(*inputs, **kwargs)

    forward.__wrapped__ = data_parallel.forward
    data_parallel.forward = forward


def install_warnings(rec: Recorder, files: UserFiles) -> None:
    """Before torch is imported: route PyTorch's warnings to the checks that match them."""
    from torchlint.runtime.warnings_capture import WarningCapture

    checks = [c for c in CHECKS.values() if c.warning is not None]

    def on_warning(text, category, filename, lineno, frame):
        for check in checks:
            if check.warning.search(text):
                user = files.user_frame(frame)
                if user is not None and (user.f_code.co_filename, user.f_lineno) == (filename, lineno):
                    position = files.position(user)  # with the columns of the call
                elif files.is_user_file(filename):
                    position = (filename, lineno, lineno, -1, -1)
                else:
                    position = None if user is None else files.position(user)
                check.on_warning(rec, position, text, frame)

    WarningCapture(on_warning).install()
