"""Silent training bugs seen from outside the script (TL603-TL606), with no change to its code.

Global hooks only: an optimizer step pre-hook, a global module forward pre-hook and a wrapper of
`nn.Module.__init__` (which remembers where each module was built, to report at that line).
Nothing here syncs the host with the device per step: the per-parameter facts that need the
values (non-finite, gradient ever non-zero) are kept in small tensors on the parameters' device
and read when the recorder writes its file (every few seconds and at the end). The raw-pixel
check reads values, so it looks at the first few training-mode inputs of the top-level module
only. For `--report`, each step's per-parameter gradient norms (computed for the checks anyway)
are kept on the device too, at a bounded number of steps, and read once, at the end.
"""

from __future__ import annotations

import sys
import warnings
import weakref

import torch

from torchlint.runtime.frames import UserFiles
from torchlint.runtime.recorder import Recorder

# How many top-level training inputs the raw-pixel check reads (each read is a sync).
PIXEL_CHECKS = 3
# At least this many optimizer steps before a parameter is said never to learn.
MIN_STEPS = 2
# The most steps whose gradient norms `--report` keeps per optimizer (evenly spaced over the run).
HISTORY_STEPS = 200


class _NormHistory:
    """Per-parameter gradient norms of at most HISTORY_STEPS steps, kept as the device tensors
    they are: every step until full, then every second one kept and every second step after,
    and so on, so the steps kept stay evenly spaced however long the run."""

    def __init__(self) -> None:
        self.steps: list[int] = []  # 0-based
        self.norms: list = []  # one tensor per step kept, a norm per parameter
        self.stride = 1

    def add(self, step: int, norms) -> None:
        if step % self.stride:
            return
        self.steps.append(step)
        self.norms.append(norms)
        if len(self.norms) > HISTORY_STEPS:
            self.steps, self.norms = self.steps[::2], self.norms[::2]
            self.stride *= 2

    def by_layer(self, layer_of: list[int], layers: int) -> list[list[float]]:
        """Per step kept, each layer's gradient norm (its parameters' norms combined): one read."""
        with torch._C.DisableTorchFunction(), torch.no_grad():
            squares = torch.stack(self.norms).float() ** 2
            index = torch.tensor(layer_of, device=squares.device)
            sums = torch.zeros(len(self.norms), layers, device=squares.device).index_add_(1, index, squares)
            return sums.sqrt().tolist()


class ConstructionSites:
    """Where the user's code built each `nn.Module` (`nn.Module.__init__` wrapped), to report a
    module's finding at that line or name it as a related place."""

    def __init__(self, files: UserFiles) -> None:
        self.files = files
        self.built_at: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> position

    def of(self, module):
        return self.built_at.get(module)

    def install(self) -> None:
        original = torch.nn.Module.__init__
        sites = self

        def module_init(module, *args, **kwargs):
            original(module, *args, **kwargs)
            if module not in sites.built_at:
                sites.built_at[module] = sites._construction(module)

        module_init.__wrapped__ = original
        torch.nn.Module.__init__ = module_init

    def _construction(self, module):
        """The user's line that built `module`: the innermost user frame outside its own
        `__init__` (a user-defined module's `super().__init__()` is not where it was built)."""
        frame = sys._getframe(3)
        while frame is not None:
            if self.files.is_user_code(frame.f_code) and frame.f_locals.get("self") is not module:
                return self.files.position(frame)
            frame = frame.f_back
        return None


class _OptimizerState:
    """What one optimizer's steps showed, per parameter (the order of its param groups)."""

    def __init__(self, params: list, position, gradient_flow: bool) -> None:
        self.params = [weakref.ref(p) for p in params]
        self.ids = tuple(id(p) for p in params)
        self.position = position  # the user's step() call
        self.steps = 0
        self.had_grad = [False] * len(params)
        device = params[0].device
        self.nonzero = torch.zeros(len(params), dtype=torch.bool, device=device)
        self.first_bad_grad = torch.full((len(params),), -1, dtype=torch.long, device=device)
        self.first_bad_value = torch.full((len(params),), -1, dtype=torch.long, device=device)
        self.zero = torch.zeros((), device=device)
        self.counter = torch.zeros((), dtype=torch.long, device=device)
        self.non_finite: dict | None = None  # once read: {"step", "what"}, which never changes
        self.history = _NormHistory() if gradient_flow else None


class TrainingHealth:
    def __init__(self, rec: Recorder, files: UserFiles, gradient_flow: bool = False) -> None:
        self.rec = rec
        self.files = files
        self.gradient_flow = gradient_flow  # keep each step's gradient norms (for --report)
        self.optimizers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.stepped: set[int] = set()  # id of every parameter an optimizer stepped
        self.called: dict[int, weakref.ref] = {}  # id(module) -> module, every module called
        self.trained: set[int] = set()  # ids of modules called in training mode
        self.sites = ConstructionSites(files)
        self.pixel_checks = 0
        self.reported: set = set()
        self.broken = False  # a failure of these checks turns them off, never the script

    def install(self) -> None:
        from torch.nn.modules.module import register_module_forward_pre_hook
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        register_optimizer_step_pre_hook(self._pre_step)
        register_module_forward_pre_hook(self._forward_pre)
        # PyTorch warns that torch.compile meets a global module hook: that hook is this one.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
        self.sites.install()
        self.rec.end_hooks.append(self.report)

    # -- hooks -----------------------------------------------------------------------------
    def _forward_pre(self, module, args) -> None:
        # Traced by torch.compile, this hook must add nothing to the graph (`fullgraph=True`
        # refuses frame inspection): the module's eager calls are the ones recorded.
        if torch.compiler.is_compiling():
            return
        key = id(module)
        if key not in self.called:
            self.called[key] = weakref.ref(module)
        if module.training:
            self.trained.add(key)
            if self.pixel_checks < PIXEL_CHECKS and args and _is_top_level():
                self._check_pixels(args[0])

    def _check_pixels(self, x) -> None:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 2 or x.numel() < 64:
            return
        self.pixel_checks += 1
        with torch._C.DisableTorchFunction(), torch.no_grad():
            low, high = float(x.min()), float(x.max())
            integral = bool((x == x.round()).all())
        if integral and 0 <= low and 1 < high <= 255:
            self._event("TL606", self.files.here(), "pixels", (
                f"the model's float input of shape {tuple(x.shape)} holds whole numbers from "
                f"{low:g} to {high:g}: raw 0-255 pixel values, never scaled to [0, 1]"
            ))

    def _pre_step(self, optimizer, args, kwargs) -> None:
        if self.broken or len(args) > 1 or kwargs.get("closure") is not None:
            return  # a closure computes the gradients inside step() (args[0] is the optimizer)
        params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
        if not params:
            return
        state = self.optimizers.get(optimizer)
        if state is None or state.ids != tuple(id(p) for p in params):
            state = self.optimizers[optimizer] = _OptimizerState(params, self.files.here(), self.gradient_flow)
        self.stepped.update(state.ids)
        grads = [p.grad for p in params]
        if all(g is None for g in grads):
            self._event("TL605", self.files.here(), ("no-grad", id(optimizer)), (
                f"optimizer.step() ran while none of its {len(params)} parameters had a gradient: "
                "no backward() since the gradients were cleared"
            ))
            return
        try:
            self._track(state, params, grads)
        except Exception:  # noqa: BLE001 - sparse gradients, several devices...: stop checking
            self.broken = True

    def _track(self, state: _OptimizerState, params: list, grads: list) -> None:
        state.steps += 1
        for index, grad in enumerate(grads):
            if grad is not None:
                state.had_grad[index] = True
        with torch._C.DisableTorchFunction(), torch.no_grad():
            dense = [g if g is not None and g.layout == torch.strided else None for g in grads]
            norms = torch._foreach_norm([g for g in dense if g is not None])
            found = iter(norms)
            grad_norms = torch.stack([next(found) if g is not None else state.zero for g in dense])
            value_norms = torch.stack(torch._foreach_norm(params))
            state.nonzero |= grad_norms != 0
            if state.history is not None:
                state.history.add(state.steps - 1, grad_norms)
            for first, norms_now in ((state.first_bad_grad, grad_norms), (state.first_bad_value, value_norms)):
                first.copy_(torch.where((first < 0) & ~torch.isfinite(norms_now), state.counter, first))
            state.counter += 1

    def _event(self, code: str, position, key, detail: str) -> None:
        if (code, key) not in self.reported and position is not None:
            self.reported.add((code, key))
            self.rec.event(code, position, detail)

    # -- reading the flags (at each write of the recorder's file) --------------------------
    def report(self, final: bool) -> None:
        if self.broken:
            return
        names = None
        summaries = []
        for optimizer, state in list(self.optimizers.items()):
            params = [ref() for ref in state.params]
            if any(p is None for p in params):
                continue
            names = names or self._names()
            self._non_finite(optimizer, state, params, names)
            if final:
                learned = self._learned(state)
                self._never_learn(state, params, learned, names)
                summaries.append(self._summary(state, params, learned, names))
        if final and self.stepped:
            names = names or self._names()
            self._not_optimized(names)
            frozen = [names.get(id(p), "?") for p in self._all_parameters() if not p.requires_grad]
            self.rec.training = {"optimizers": summaries, "frozen": frozen}

    def _non_finite(self, optimizer, state: _OptimizerState, params: list, names: dict) -> None:
        if state.non_finite is not None:
            return
        with torch._C.DisableTorchFunction():
            bad_grad, bad_value = state.first_bad_grad.tolist(), state.first_bad_value.tolist()
        steps = [s for s in bad_grad + bad_value if s >= 0]
        if not steps:
            return
        first = min(steps)
        culprits = [
            f"{'gradient of ' if bad_grad[i] == first else ''}{names.get(id(p), f'parameter {i}')}"
            for i, p in enumerate(params) if first in (bad_grad[i], bad_value[i])
        ]
        state.non_finite = {"step": first + 1, "what": culprits}
        more = f" and {len(culprits) - 1} more" if len(culprits) > 1 else ""
        self._event("TL603", state.position, id(optimizer), (
            f"step {first + 1}: {culprits[0]}{more} first held NaN or Inf"
        ))

    @staticmethod
    def _learned(state: _OptimizerState) -> list[bool]:
        """Per parameter: had a gradient, non-zero at some step."""
        with torch._C.DisableTorchFunction():
            nonzero = state.nonzero.tolist()
        return [had and moved for had, moved in zip(state.had_grad, nonzero)]

    def _never_learn(self, state: _OptimizerState, params: list, learned: list[bool], names: dict) -> None:
        if state.steps < MIN_STEPS or not any(learned):
            return
        owners = self._owners()
        dead = [p for p, ok in zip(params, learned) if not ok and p.requires_grad]
        for module, members in self._group(dead, owners):
            if id(module) in self.called and id(module) not in self.trained:
                continue  # used in eval only (an evaluation head)
            what = "is never called" if id(module) not in self.called else "gets no gradient"
            why = (
                "a layer defined and never used in forward()" if id(module) not in self.called
                else "its output does not reach the loss (a .detach(), or a branch left out of it)"
            )
            self._event("TL604", self.sites.of(module) or state.position, ("dead", id(module)), (
                f"{_label(module, members, names)} {what} in {state.steps} optimizer steps while "
                f"other parameters learn: {why}"
            ))

    def _summary(self, state: _OptimizerState, params: list, learned: list[bool], names: dict) -> dict:
        """What `--report` shows of one optimizer's steps."""
        param_names = [names.get(id(p), f"parameter {i}") for i, p in enumerate(params)]
        summary = {
            "position": state.position, "steps": state.steps, "first_non_finite": state.non_finite,
            "no_gradient": [name for name, ok in zip(param_names, learned) if not ok],
            "gradient_flow": None,
        }
        if state.history is not None and state.history.steps:
            owners = self._owners()
            layers: dict[str, int] = {}  # in the parameters' order: from the input to the output
            layer_of = [
                layers.setdefault(_layer(name, owners.get(id(p))), len(layers)) for name, p in zip(param_names, params)
            ]
            summary["gradient_flow"] = {
                "steps": [step + 1 for step in state.history.steps], "layers": list(layers),
                "norms": state.history.by_layer(layer_of, len(layers)),
            }
        return summary

    def _not_optimized(self, names: dict) -> None:
        # Every parameter some optimizer stepped, also one since dropped (`optimizer = SGD(b...)`
        # rebinds the name: the first model was trained all the same).
        owners = self._owners()
        stray = [
            p for p in self._all_parameters()
            if p.requires_grad and id(p) not in self.stepped and p.grad is not None
        ]
        for module, members in self._group(stray, owners):
            self._event("TL604", self.sites.of(module), ("stray", id(module)), (
                f"{_label(module, members, names)} gets gradients but is in no optimizer's param "
                "groups: the optimizer was built from another module, or before this layer was added"
            ))

    # -- names and owners, from the modules the run called ---------------------------------
    def _modules(self) -> list:
        alive = [ref() for ref in self.called.values()]
        modules = [m for m in alive if m is not None]
        return sorted(modules, key=lambda m: -sum(1 for _ in m.parameters()))

    def _names(self) -> dict[int, str]:
        """id(parameter or module) -> its dotted path in the largest module the run called that
        holds it (`encoder.layers.3.fc1.weight`)."""
        names: dict[int, str] = {}
        for module in self._modules():
            for name, p in module.named_parameters():
                names.setdefault(id(p), name)
            for name, child in module.named_modules():
                if name:
                    names.setdefault(id(child), name)
        return names

    def _owners(self) -> dict[int, tuple]:
        """id(parameter) -> (the module that holds it directly, the chain of modules above)."""
        owners: dict[int, tuple] = {}
        for root in self._modules():
            self._walk(root, (), owners)
        return owners

    def _walk(self, module, above: tuple, owners: dict) -> None:
        for p in module.parameters(recurse=False):
            owners.setdefault(id(p), (module, above))
        for child in module.children():
            self._walk(child, (*above, module), owners)

    def _all_parameters(self) -> list:
        seen: dict[int, torch.Tensor] = {}
        for module in self._modules():
            for p in module.parameters():
                seen.setdefault(id(p), p)
        return list(seen.values())

    def _group(self, params: list, owners: dict):
        """(module, its parameters in `params`) for the largest modules all of whose trainable
        parameters are in `params`: one finding for a whole detached encoder, not one per layer."""
        chosen = set(id(p) for p in params)
        groups: dict[int, tuple] = {}
        for p in params:
            if id(p) not in owners:
                continue
            module, above = owners[id(p)]
            for candidate in above:
                trainable = [q for q in candidate.parameters() if q.requires_grad]
                if trainable and all(id(q) in chosen for q in trainable):
                    module = candidate
                    break
            groups.setdefault(id(module), (module, []))[1].append(p)
        return list(groups.values())


def _label(module, members: list, names: dict) -> str:
    """`encoder` (encoder.fc1.weight, encoder.fc1.bias and 2 more), or this Linear (weight, bias)."""
    listed = ", ".join(names.get(id(p), "?") for p in members[:3])
    more = f" and {len(members) - 3} more" if len(members) > 3 else ""
    name = names.get(id(module))
    return f"{f'`{name}`' if name else f'this {type(module).__name__}'} ({listed}{more})"


def _layer(parameter: str, owner: tuple | None) -> str:
    """The module a parameter belongs to, with its class (`encoder.fc1.weight` -> `encoder.fc1
    (Linear)`: a Sequential's layers are named by their index alone); the top-level module's own
    parameters by its class alone (`Linear`)."""
    path = parameter.rpartition(".")[0]
    if owner is None:
        return path or parameter
    kind = type(owner[0]).__name__
    return f"{path} ({kind})" if path else kind


def _is_top_level() -> bool:
    """No other module's call is under way (one `_call_impl` frame on the stack)."""
    code = torch.nn.Module._call_impl.__code__
    frame = sys._getframe(2)
    calls = 0
    while frame is not None:
        if frame.f_code is code:
            calls += 1
            if calls > 1:
                return False
        frame = frame.f_back
    return True
