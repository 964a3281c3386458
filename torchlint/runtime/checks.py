"""How `--runtime` confirms each rule: one small class per rule code, in one table.

A check says what confirms its rule, in any of these ways:
- `warning`: a regex on the text of a warning PyTorch emits (captured with the user's line);
- `error`: a regex on the text of an exception a torch call raises (seen by the function mode);
- probe hooks `before_call` / `after_call` / `on_error` / `on_value` / `on_operands`: run at the flagged site
  itself (see probes.py), with the callee, its arguments and its result;
- events that the shared instrumentation emits under the rule's code (optimizer hooks for
  TL001/TL002, logical devices for TL301/TL306, host syncs for TL302, discarded conversions for
  TL304): see instrument.py.
and, on the parent side, `judge` turns what was observed at a site into a verdict.

Adding a rule's runtime confirmation = adding (or extending) its class here. A code whose site
running is the pitfall (forward called directly, a bare no_grad()...) is in `RUNNING_IS_THE_PITFALL`;
any other code with no class is `not checked at run time`: the line running proves nothing.

The child calls the probe hooks (torch imported); the parent only calls `judge`, `counts` and reads
metadata, so nothing here imports torch at module level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

CONFIRMED, REFUTED, NOT_REACHED = "confirmed", "refuted", "not-reached"
# The site ran but this run could not show the pitfall (its data, or --device cpu): not innocence.
NOT_OBSERVED = "not observed in this run"
# The rule has no runtime test: whether its site ran says nothing about the finding.
NOT_CHECKED = "not checked at run time"
VERDICTS = (CONFIRMED, REFUTED, NOT_OBSERVED, NOT_REACHED, NOT_CHECKED)
VERIFY_ON_DEVICE = "run with --device auto or a GPU to verify"
STOPPED_EARLY = "the script stopped early: what came after the flagged code may not have run"


@dataclass(frozen=True)
class RunFacts:
    """What the parent knows about the whole run when it judges a site."""

    steps: int = 0  # optimizer steps
    iteration_steps: int = 0  # the steps of the optimizer that stepped most (one per iteration)
    device: str = "cpu"  # the resolved --device
    iterations: dict = field(default_factory=dict)  # str(loop id) -> iterations run
    # The script ran to its end (exit status 0, no timeout): only such a run can show an absence.
    completed: bool = True


class Check:
    code: ClassVar[str] = ""
    # For findings the runtime adds on its own (no static finding at that place).
    name: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    message: ClassVar[str] = ""
    adds_findings: ClassVar[bool] = False
    warning: ClassVar[re.Pattern | None] = None
    error: ClassVar[re.Pattern | None] = None
    # Whether the check can tell "ran, and the pitfall did not happen" (refuted).
    observable: ClassVar[bool] = True
    # The pitfall needs an accelerator (real or logical) to show: under --device cpu a site that
    # ran without it is NOT_OBSERVED, never refuted.
    device_dependent: ClassVar[bool] = False
    # The pitfall depends on the values (an underflow): a site that ran without it is NOT_OBSERVED.
    data_dependent: ClassVar[bool] = False

    # -- child side: probe hooks at the flagged site -------------------------------------------
    wants_call: ClassVar[bool] = False  # wrap the flagged call (else the probe only marks reached)
    wants_value: ClassVar[bool] = False  # see the value of a flagged expression that is not a call
    wants_operands: ClassVar[bool] = False  # see both operands of a flagged operation (`a - b`) too

    def before_call(self, rec, site: int, func, args: tuple, kwargs: dict) -> None:
        pass

    def after_call(self, rec, site: int, func, args: tuple, kwargs: dict, result: Any) -> None:
        pass

    def on_value(self, rec, site: int, value: Any) -> None:
        pass

    def on_operands(self, rec, site: int, operator: str, left: Any, right: Any, result: Any) -> None:
        """`left <operator> right` gave `result` (`operator` names the `operator` module's function)."""

    def on_error(self, rec, site: int, func, args: tuple, kwargs: dict, error: BaseException) -> None:
        if self.error is not None and self.error.search(str(error)):
            rec.confirm(site, first_line(error))

    def on_warning(self, rec, position, text: str, frame) -> None:
        """A warning matching `warning` was emitted; `position` is its user position."""
        rec.event(self.code, position, first_line(text))

    # -- parent side -------------------------------------------------------------------------
    def adds(self, event: dict) -> bool:
        """Whether an event no static finding explains becomes a finding of its own."""
        return self.adds_findings

    def counts(self, event: dict, run: RunFacts) -> bool:
        """Whether an observed event is the pitfall (TL302 asks for repetition)."""
        return True

    def judge(self, site: dict, events: list[dict], run: RunFacts) -> tuple[str, str | None]:
        if site.get("confirmed"):
            return CONFIRMED, site["confirmed"]
        counted = [e for e in events if self.counts(e, run)]
        if counted:
            return CONFIRMED, self.describe(counted, run)
        if site.get("reached") or events:
            if not self.observable:
                return CONFIRMED, "the flagged code ran, and running it is the pitfall"
            if self.device_dependent and run.device == "cpu":
                return NOT_OBSERVED, VERIFY_ON_DEVICE
            if self.data_dependent:
                return NOT_OBSERVED, site.get("refuted") or self.describe_absence(events, run)
            if site.get("refuted"):  # seen at the site itself: what the code did there
                return REFUTED, site["refuted"]
            if not run.completed:
                return NOT_OBSERVED, STOPPED_EARLY
            return REFUTED, self.describe_absence(events, run)
        return NOT_REACHED, None

    def describe(self, events: list[dict], run: RunFacts) -> str:
        return events[0].get("detail") or "observed"

    def describe_absence(self, events: list[dict], run: RunFacts) -> str:
        return "the flagged code ran and the pitfall was not observed"


def first_line(value: object) -> str:
    text = str(value).strip()
    return text.splitlines()[0] if text else ""


CHECKS: dict[str, Check] = {}


def register(cls: type[Check]) -> type[Check]:
    CHECKS[cls.code] = cls()
    return cls


class ReachedCheck(Check):
    observable = False


class UncheckedRule(Check):
    def judge(self, site, events, run):
        if site.get("reached") or events:
            return NOT_CHECKED, None
        return NOT_REACHED, None


# Forward called directly, a bare no_grad(), a misspelled requires_grad assigned, a deprecated
# API called, a module built in forward(): the flagged code running is the pitfall.
RUNNING_IS_THE_PITFALL = frozenset({"TL005", "TL009", "TL014", "TL403", "TL504"})


def checks_explaining(error_text: str) -> list[Check]:
    """The checks whose `error` pattern matches the text of an exception torch raised."""
    return [check for check in CHECKS.values() if check.error is not None and check.error.search(error_text)]


def check_for(code: str) -> Check:
    found = CHECKS.get(code)
    if found is None:
        found = ReachedCheck() if code in RUNNING_IS_THE_PITFALL else UncheckedRule()
    return found


def _is_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


# ---------------------------------------------------------------------------------------------
# TL0xx training loop


@register
class MissingZeroGrad(Check):
    """Events from the optimizer hooks: the first gradient accumulation after a step found the
    same `p.grad` with `_version` one higher, so nothing cleared it (instrument.GradTracker)."""

    code = "TL001"
    adds_findings = True  # a loop whose zero_grad() the static side saw, but that does not run

    def describe_absence(self, events, run):
        return f"gradients were cleared between optimizer steps ({run.steps} steps observed)"


@register
class ZeroGradBetweenBackwardAndStep(Check):
    """Events from the step pre-hook: every gradient unchanged since a zeroing."""

    code = "TL002"

    def describe_absence(self, events, run):
        return "every optimizer step saw gradients accumulated after the last zeroing"


@register
class ManualUpdateOutsideNoGrad(Check):
    code = "TL004"
    error = re.compile(r"a leaf Variable that requires grad is being used in an in-place operation")


@register
class RequiresGradOnIntegerTensor(Check):
    code = "TL006"
    wants_call = True
    error = re.compile(r"Only Tensors of floating point and complex dtype can require gradients")


@register
class NonLeafParameter(Check):
    code = "TL008"
    wants_call = True

    def after_call(self, rec, site, func, args, kwargs, result):
        if _is_tensor(result) and result.requires_grad and not result.is_leaf:
            rec.confirm(site, f"the result is not a leaf (grad_fn={type(result.grad_fn).__name__}): its .grad stays None")
        elif _is_tensor(result):
            rec.refute(site, "the result is a leaf tensor")


@register
class SchedulerBeforeOptimizerStep(Check):
    code = "TL011"
    warning = re.compile(r"Detected call of `lr_scheduler\.step\(\)` before `optimizer\.step\(\)`")


@register
class BackwardUnderNoGrad(Check):
    code = "TL012"
    error = re.compile(r"element 0 of tensors does not require grad and does not have a grad_fn")


@register
class AdamCoupledWeightDecay(Check):
    """The optimizer built at the site, confirmed at its first step with a coupled weight decay."""

    code = "TL016"
    wants_call = True

    def after_call(self, rec, site, func, args, kwargs, result):
        import torch

        if not isinstance(result, torch.optim.Optimizer):
            return
        decays = [group.get("weight_decay") or 0 for group in result.param_groups
                  if not group.get("decoupled_weight_decay")]
        if not any(decays):
            rec.refute(site, "no parameter group adds weight decay to the gradient")
            return
        name, decay = type(result).__name__, max(decays)

        def stepped(optimizer, args, kwargs) -> None:
            rec.confirm(site, f"{name} stepped with weight_decay={decay} added to the gradient (L2, not decoupled)")

        result.register_step_post_hook(stepped)

    def judge(self, site, events, run):
        if site.get("reached") and not site.get("confirmed") and not site.get("refuted"):
            return NOT_OBSERVED, "the optimizer built here never stepped in this run"
        return super().judge(site, events, run)


@register
class EpochScheduleSteppedPerBatch(Check):
    """Counts the flagged `scheduler.step()` calls against the optimizer steps so far: a schedule
    stepped as often as the optimizer runs per batch; one stepped less often runs per epoch."""

    code = "TL017"
    wants_call = True

    def __init__(self) -> None:
        self._calls: dict[int, int] = {}

    def after_call(self, rec, site, func, args, kwargs, result):
        calls = self._calls[site] = self._calls.get(site, 0) + 1
        steps = max(rec.steps_by_optimizer.values(), default=0)
        if calls >= 2 and calls >= steps:
            rec.confirm(site, f"the schedule stepped {_plural(calls, 'time')} in {_plural(steps, 'optimizer step')}: once per batch")
        elif steps > calls:
            rec.refute(site, f"the schedule stepped {_plural(calls, 'time')} in {_plural(steps, 'optimizer step')}: not once per batch")


@register
class EvaluationInTrainingMode(Check):
    """The flagged model call, seen before it runs: in training mode with Dropout or BatchNorm
    layers, or not."""

    code = "TL019"
    wants_call = True

    def before_call(self, rec, site, func, args, kwargs):
        import torch

        if not isinstance(func, torch.nn.Module):
            return
        acting = [m for m in func.modules() if m.training and isinstance(m, _mode_layers())]
        if acting:
            kinds = sorted({type(m).__name__ for m in acting})
            rec.confirm(site, f"the model ran in training mode: {_plural(len(acting), 'layer')} ({', '.join(kinds)}) acted as in training")
        elif any(isinstance(m, _mode_layers()) for m in func.modules()):
            rec.refute(site, "the model was in eval mode when this ran")
        else:
            rec.refute(site, "the model has no Dropout or BatchNorm layers: its mode changes nothing")


def _plural(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _mode_layers() -> tuple[type, ...]:
    """Layers that act differently in training mode."""
    from torch import nn

    return (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


@register
class OptimizerBuiltInLoop(Check):
    """The optimizer (or compiled model) made at the site: built a second time, its state restarted."""

    code = "TL021"
    wants_call = True
    data_dependent = True  # a loop that ran once cannot show it

    def __init__(self) -> None:
        self._built: dict[int, int] = {}

    def after_call(self, rec, site, func, args, kwargs, result):
        built = self._built[site] = self._built.get(site, 0) + 1
        if built == 2:
            rec.confirm(site, f"`{type(result).__name__}` was built again on the next iteration: its state restarted")

    def describe_absence(self, events, run):
        return "built once in this run: the loop ran one iteration"


# ---------------------------------------------------------------------------------------------
# TL1xx shapes


@register
class ViewAfterPermute(Check):
    code = "TL101"
    wants_call = True
    adds_findings = True  # a stride error at a `view` the static side did not flag
    error = re.compile(r"view size is not compatible with input tensor's size and stride")

    def after_call(self, rec, site, func, args, kwargs, result):
        receiver = getattr(func, "__self__", None)
        if _is_tensor(receiver):
            rec.refute(site, f"legal view: receiver strides {tuple(receiver.stride())} for shape {tuple(receiver.shape)}")

    def on_error(self, rec, site, func, args, kwargs, error):
        receiver = getattr(func, "__self__", None)
        if self.error.search(str(error)):
            strides = f" (receiver shape {tuple(receiver.shape)}, strides {tuple(receiver.stride())})" if _is_tensor(receiver) else ""
            rec.confirm(site, f"view() raised: not compatible with the receiver's strides{strides}")


@register
class LegacyTensorConstructor(Check):
    code = "TL102"
    wants_call = True

    def before_call(self, rec, site, func, args, kwargs):
        import torch

        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            rec.confirm(site, f"called with ints {tuple(args)}: uninitialized memory of that shape")
        elif len(args) == 1 and isinstance(args[0], torch.Size):
            rec.confirm(site, f"called with a torch.Size {tuple(args[0])}: uninitialized memory")
        elif len(args) == 1 and isinstance(args[0], torch.Tensor):
            rec.confirm(site, "called with a tensor: the result aliases it")
        else:
            kinds = ", ".join(type(a).__name__ for a in args) or "no arguments"
            rec.refute(site, f"called with data ({kinds})")


# ---------------------------------------------------------------------------------------------
# TL2xx numerics


@register
class LogOfSoftmax(Check):
    code = "TL201"
    wants_call = True
    data_dependent = True

    def after_call(self, rec, site, func, args, kwargs, result):
        bad = _count_where(result, lambda t: t.isneginf())
        if bad:
            rec.confirm(site, f"log produced -inf in {bad} of {result.numel()} elements")
        elif bad is not None:
            rec.refute(site, "no probability underflowed to 0 in this run, so log() gave no -inf")


def _count_where(result, test) -> int | None:
    """How many elements of a floating-point tensor `result` pass `test` (None for anything else)."""
    import torch

    if not _is_tensor(result) or not result.is_floating_point():
        return None
    with torch.no_grad():
        return int(test(result).sum())


@register
class SoftmaxWithoutDim(Check):
    code = "TL202"
    wants_call = True
    warning = re.compile(r"Implicit dimension choice for \w+ has been deprecated")

    def __init__(self) -> None:
        self.modules: dict[int, int] = {}  # id(nn.Softmax built at a flagged site) -> site

    def after_call(self, rec, site, func, args, kwargs, result):
        import torch

        if isinstance(result, (torch.nn.Softmax, torch.nn.LogSoftmax, torch.nn.Softmin)):
            if result.dim is None:
                self.modules[id(result)] = site
            else:
                rec.refute(site, f"built with dim={result.dim}")
        elif _is_tensor(result) and (len(args) > 1 or kwargs.get("dim") is not None):
            rec.refute(site, "called with a dim")

    def on_warning(self, rec, position, text, frame):
        super().on_warning(rec, position, text, frame)
        # A module built at a flagged site warns from its forward(): confirm the construction.
        while frame is not None:
            if frame.f_code.co_name == "forward":
                owner = frame.f_locals.get("self")
                site = self.modules.get(id(owner))
                if site is not None:
                    rec.confirm(site, f"{type(owner).__name__} without dim, input of rank {_rank(frame)}")
                    break
            frame = frame.f_back


    def judge(self, site, events, run):
        verdict, detail = super().judge(site, events, run)
        if verdict == REFUTED and not site.get("refuted"):
            # Every call without dim warns: a site that ran without one built a module never called.
            return NOT_OBSERVED, "the softmax module built here was never called in this run"
        return verdict, detail


def _sizes(tensor) -> str:
    sizes = tuple(tensor.shape)
    return f"({sizes[0]},)" if len(sizes) == 1 else str(sizes)


def _rank(frame) -> str:
    value = frame.f_locals.get("input")
    return str(value.dim()) if _is_tensor(value) else "?"


@register
class Uint8Mask(Check):
    """What torch itself says of a uint8 mask: a deprecation warning (indexing, `where`) or an error."""

    code = "TL106"
    warning = re.compile(r"indexing with dtype torch\.uint8 is now deprecated|where received a uint8 condition tensor")
    error = re.compile(r"only supports boolean masks|expected BoolTensor for mask")


# What torch says when an elementwise loss broadcasts a target of another shape.
_LOSS_BROADCAST = re.compile(r"Using a target size \(.*\) that is different to the input size")


@register
class ShapeMismatch(Check):
    """Confirmed by what torch says at the flagged call: the shape error it raises, or the
    warning of a loss that broadcasts its target (the finding's silent case). The shapes the
    finding reads may come from an example input the run does not use: a clean run is not
    proof against it."""

    code = "TL104"
    message = "The operands' sizes cannot work together: torch raised a shape error here"
    data_dependent = True
    adds_findings = True  # a shape error at a line the static side did not flag (see `adds`)
    warning = _LOSS_BROADCAST
    error = re.compile(
        r"must match the size of tensor|shapes cannot be multiplied|is invalid for input of size|"
        r"Sizes of tensors must match|Expected target size|Expected input batch_size|"
        r"expected .* to have the same|size mismatch|must match except in dimension|"
        # The same errors as the meta device words them (a dry run).
        r"must have same reduction dim|to have \d+ channels, but got|Invalid channel dimensions"
    )

    wants_operands = True

    def on_operands(self, rec, site, operator, left, right, result):
        """The finding's silent case: an elementwise op whose operands of different ranks both
        grew, as an (N, 1) column against (N,) rows gives (N, N). A matrix product grows by rule."""
        if operator == "matmul" or not all(_is_tensor(value) for value in (left, right, result)):
            return
        if left.dim() != right.dim() and result.numel() > max(left.numel(), right.numel()):
            rec.confirm(site, f"{_sizes(left)} and {_sizes(right)} broadcast to {_sizes(result)} here, without an error")

    def adds(self, event: dict) -> bool:
        """A shape error anywhere (a dry run's above all); a loss broadcast's warning is TL601's."""
        return self.adds_findings and self.error.search(event.get("detail", "")) is not None

    def describe_absence(self, events, run):
        return "the flagged code ran without a shape error on the shapes of this run"


class _ConfirmedByShapeError(ShapeMismatch):
    """A shape rule that TL104's shape errors confirm at its own findings; it adds none (TL104
    does), and a loss's broadcast warning is not its pitfall."""

    message = ""
    adds_findings = False
    warning = None


@register
class LayerSizeMismatch(_ConfirmedByShapeError):
    """The shape error of layers that cannot chain, raised where the first batch meets them."""

    code = "TL103"


@register
class ReductionBroadcast(_ConfirmedByShapeError):
    """A reduction broadcast back the wrong way raises only where the sizes differ."""

    code = "TL105"


@register
class ManualLogSumExp(Check):
    code = "TL205"
    wants_call = True
    data_dependent = True

    def after_call(self, rec, site, func, args, kwargs, result):
        self.confirm_overflow(rec, site, result, "results are not finite")

    @staticmethod
    def confirm_overflow(rec, site, value, what: str) -> None:
        bad = _count_where(value, lambda t: ~t.isfinite())
        if bad:
            rec.confirm(site, f"exp() overflowed: {bad} of {value.numel()} {what}")

    def describe_absence(self, events, run):
        return "no exp() overflowed in this run"


@register
class ManualSoftmax(ManualLogSumExp):
    """Probed through the division's value: the flagged site is not a call."""

    code = "TL209"
    wants_call = False
    wants_value = True

    def on_value(self, rec, site, value):
        self.confirm_overflow(rec, site, value, "probabilities are NaN or inf")


@register
class ManualExpm1(Check):
    code = "TL206"
    data_dependent = True

    def describe_absence(self, events, run):
        return "the site ran; the precision lost near 0 depends on the values and is not measured"


@register
class ManualLog1p(ManualExpm1):
    code = "TL207"


@register
class LogitsIntoNllLoss(Check):
    """The input the flagged NLL loss gets: log-probabilities have rows whose exp sums to 1."""

    code = "TL210"
    wants_call = True

    def before_call(self, rec, site, func, args, kwargs):
        import torch

        scores = args[0] if args else kwargs.get("input")
        if not _is_tensor(scores) or not scores.is_floating_point() or scores.numel() == 0:
            return
        with torch.no_grad():
            totals = scores.detach().float().exp().sum(dim=1 if scores.dim() > 1 else 0)
            farthest = float((totals - 1).abs().max())
        if farthest > 1e-3:
            rec.confirm(site, f"the input's rows are not log-probabilities: their exp sums to {float(totals.flatten()[0]):.3g}, not 1")
        else:
            rec.refute(site, "the input's rows are log-probabilities: their exp sums to 1")


# ---------------------------------------------------------------------------------------------
# TL3xx devices and syncs


@register
class MixedDevices(Check):
    """Events from logical-device tracking (at the factory that made the CPU tensor when known,
    else at the op) or, on a real accelerator, from the device-mismatch RuntimeError."""

    code = "TL301"
    device_dependent = True
    name = "mixed-devices"
    severity = "error"
    message = "Tensors on different devices are combined"
    adds_findings = True
    error = re.compile(r"Expected all tensors to be on the same device")

    def describe_absence(self, events, run):
        return "no op mixed devices"


@register
class SyncInLoop(Check):
    """Events from the function mode: a host sync (item, tolist, cpu, numpy, bool/float/int) on
    an accelerator (or logical-accelerator) tensor. A flagged sync is counted per iteration of the
    loop the finding sits in (probes.py marks each iteration); one the static side did not flag,
    per optimizer-step interval."""

    code = "TL302"
    name = "sync-in-loop"
    severity = "warning"
    message = "Host-device synchronisation repeated in a loop"
    adds_findings = True
    device_dependent = True

    def counts(self, event, run):
        # In most iterations: `if step % 100 == 0: print(loss.item())` is not.
        return event["count"] >= 2 and event["intervals"] >= max(2, sync_intervals(event, run) / 2)

    def judge(self, site, events, run):
        loop = site.get("loop_iterations")
        if loop is not None and loop >= 2:
            # Syncs counted per iteration that ran: a measure whether or not the script went on.
            run = replace(run, completed=True)
        verdict, detail = super().judge(site, events, run)
        if verdict == REFUTED and loop is not None and loop < 2:
            return NOT_OBSERVED, f"the loop ran {loop} iteration{'s' if loop != 1 else ''}: too few to show a sync in each"
        return verdict, detail

    def describe(self, events, run):
        e = max(events, key=lambda e: e["count"])
        return f"{e['detail']}: {e['count']} syncs in {e['intervals']} of {sync_intervals_text(e, run)}"

    def describe_absence(self, events, run):
        if events:
            e = max(events, key=lambda e: e["count"])
            return f"{e['detail']}: {e['count']} sync(s) in {e['intervals']} of {sync_intervals_text(e, run)}"
        return "no host sync on an accelerator tensor"


def sync_intervals(event: dict, run: RunFacts) -> int:
    loop = event.get("loop")
    return run.iterations.get(str(loop), 0) if loop is not None else run.iteration_steps + 1


def sync_intervals_text(event: dict, run: RunFacts) -> str:
    count = sync_intervals(event, run)
    if event.get("loop") is not None:
        return f"{count} iteration{'s' if count != 1 else ''}"
    return f"{count} optimizer-step intervals"


@register
class NumpyWithoutCpuDetach(Check):
    code = "TL303"
    wants_call = True
    device_dependent = True
    error = re.compile(r"Can't call numpy\(\) on Tensor that requires grad|can't convert \S+ device type tensor to numpy")


@register
class DiscardedTo(Check):
    code = "TL304"
    name = "discarded-to"
    severity = "error"
    message = "The result of a tensor conversion is discarded (tensors are not converted in place)"
    adds_findings = True
    wants_call = True

    def before_call(self, rec, site, func, args, kwargs):
        receiver = getattr(func, "__self__", None)
        if _is_tensor(receiver):
            rec.confirm(site, f"the receiver is a {type(receiver).__name__}: .{func.__name__}() returns a new tensor")
        else:
            rec.refute(site, f"the receiver is a {type(receiver).__name__}, converted in place")


@register
class Float64OnMps(Check):
    code = "TL306"
    device_dependent = True
    name = "float64-on-mps"
    severity = "error"
    message = "float64 tensor on MPS"


# ---------------------------------------------------------------------------------------------
# TL5xx API hygiene


@register
class DeprecatedCudaAmp(Check):
    code = "TL501"
    warning = re.compile(r"`torch\.(cuda|cpu)\.amp\.\w+\(args\.\.\.\)` is deprecated")


@register
class UnsafeTorchLoad(Check):
    """Decided at the call: what `weights_only` means on the torch that ran it."""

    code = "TL502"
    wants_call = True

    def before_call(self, rec, site, func, args, kwargs):
        import torch

        weights_only = kwargs.get("weights_only")
        if weights_only is False:
            rec.confirm(site, "weights_only=False: the file is unpickled, and can run code")
        elif weights_only is None and _version(torch.__version__) < (2, 6):
            rec.confirm(site, f"torch {torch.__version__} unpickles by default (weights_only=False)")
        else:
            rec.refute(site, f"torch {torch.__version__} loads with weights_only=True by default")

    def on_error(self, rec, site, func, args, kwargs, error):
        import pickle

        if isinstance(error, pickle.UnpicklingError):
            rec.confirm(site, "the file holds more than weights: torch refused to unpickle it without "
                              f"weights_only=False ({first_line(error)[:120]})")


def _version(text: str) -> tuple[int, int]:
    major, minor = re.match(r"(\d+)\.(\d+)", text).groups()
    return int(major), int(minor)


@register
class LoadWithoutMapLocation(Check):
    code = "TL505"
    wants_call = True
    data_dependent = True
    error = re.compile(r"Attempting to deserialize object on a CUDA device")

    def describe_absence(self, events, run):
        return "this checkpoint loaded: it held no CUDA tensors, or CUDA was there; a GPU checkpoint without CUDA fails"


@register
class CheckpointWithoutUseReentrant(Check):
    code = "TL503"
    warning = re.compile(r"use_reentrant parameter should be passed explicitly")


# ---------------------------------------------------------------------------------------------
# TL6xx runtime-only


@register
class LossTargetBroadcast(Check):
    code = "TL601"
    name = "loss-target-broadcast"
    severity = "error"
    message = "Loss input and target shapes broadcast"
    adds_findings = True
    warning = _LOSS_BROADCAST


@register
class MpsCpuFallback(Check):
    code = "TL602"
    name = "mps-cpu-fallback"
    severity = "warning"
    message = "An operator fell back from MPS to the CPU"
    adds_findings = True
    warning = re.compile(r"is not currently supported on the MPS backend and will fall back to run on the CPU")


class _TrainingHealth(Check):
    """Events from health.py's global hooks; there is no static site, so every event is a
    finding (name, message and severity come from the rule files tl603-tl606)."""

    adds_findings = True


@register
class NonFiniteValues(_TrainingHealth):
    code = "TL603"


@register
class ParameterNeverLearns(_TrainingHealth):
    code = "TL604"


@register
class StepWithoutGradients(_TrainingHealth):
    code = "TL605"


@register
class UnscaledPixelInput(_TrainingHealth):
    code = "TL606"
