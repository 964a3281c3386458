from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.call_edits import keyword, with_arguments
from torchlint.analysis.cpu_fallback import cpu_fallback_row
from torchlint.analysis.loops import Role, name_hint, role_from_name
from torchlint.analysis.names import argument, dotted_name
from torchlint.analysis.torch_api import LOAD_FUNCTIONS
from torchlint.diagnostics import Applicability, Related, Severity
from torchlint.reports import FixSpec
from torchlint.rule import Rule

# `torch.save(x.cpu(), path)`: what the file saves, it saves from the CPU.
_SAVE = re.compile(r"torch\.save\(([^,\n]*)")
# `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`: the name that holds it.
_DEVICE_NAME = re.compile(r"""^[ \t]*([A-Za-z_][\w.]*)\s*=\s*[^=\n]*is_available\(\)[^\n]*["']cpu""", re.MULTILINE)


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` without `map_location` in a file that is written to run without
    CUDA too: it chooses `"cuda" if torch.cuda.is_available() else "cpu"` (or
    `torch.device(...)` of that), calls `.cuda()` only under `if torch.cuda.is_available():`,
    or has a `--cpu` / `--no-cuda` / `--disable-cuda` / `--device` / `--gpu` option (an example
    in a docstring, `>>> device = torch.device(...)`, is not code the file runs). Where the
    fallback is in another file of the program, one that imports this file or that this file
    imports (`main.py` with `--disable-cuda` running the agent that `agent.py` defines), a load
    that restores a model is flagged, with a note on that place: its result goes to
    `load_state_dict(...)` or is used as a model (`.eval()`, `.to(...)`); a data cache is not.
    A call with `**kwargs` (which may carry `map_location`) is not flagged, nor is a load that goes
    straight to a scheduler's or a GradScaler's `load_state_dict` (Python numbers, on no device:
    `self.lr_scheduler.load_state_dict(torch.load(path))`), nor is a load under
    `if torch.cuda.is_available():` (its `else` picks the device), a load of what the same
    function saves with `torch.save` (or a helper named for saving: `utils.save_on_master(...)`,
    a dataset cache) or has a call write, given the loaded file's folder as its output
    (`convert(ckpt, output_dir=out_dir)` then `torch.load(out_dir / "model.pth")`), a file that
    never falls back to the CPU, or one whose every `torch.save` saves `x.cpu()` (the files it
    loads back hold CPU tensors).

    ## Why is this bad?
    `torch.load` puts every tensor back on the device it was saved from. A checkpoint saved
    during GPU training holds CUDA tensors, and on a machine without CUDA (a laptop, a CPU
    inference server, CI) loading it raises `RuntimeError: Attempting to deserialize object on a
    CUDA device but torch.cuda.is_available() is False`: exactly the machines the CPU fallback
    was written for. It also fills GPU 0 first when the script runs on another GPU.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.load_state_dict(torch.load("model.pt"))
    ```

    ## Use instead
    ```python
    model.load_state_dict(torch.load("model.pt", map_location=device))
    ```

    ## Fix safety
    The fix adds `map_location=NAME`, with the name the file assigns its device to
    (`device = torch.device(...)`). It is unsafe: that name must exist where the load runs
    (a local of another function, or an attribute such as `self.device`, may not). Without such a
    name, no fix is offered; `map_location="cpu"` then `.to(device)` also works.

    Bug left in place: no. Computation changed: no (the tensors land on the chosen device).
    """

    code = "TL505"
    name = "load-without-map-location"
    summary = "torch.load without map_location in code that runs without CUDA: GPU checkpoints fail to load"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._may_load = "load" in ctx.source and not _saves_on_cpu(ctx.source)
        self._file_falls_back: bool | None = None  # asked at the first load without `map_location`

    def visit_Call(self, node: cst.Call) -> None:
        if not self._may_load or self.ctx.callee(node) not in LOAD_FUNCTIONS:
            return
        if argument(node, 1, "map_location") is not None or any(arg.star == "**" for arg in node.args):
            return
        if self._restores_numbers(node):
            return
        fallback = self._falls_back()
        if fallback is None or self._only_with_cuda() or self._reads_back(node):
            return
        where, related = fallback
        if related and not self._restores_model(node):
            return  # evidence from another file: only a model's checkpoint is surely saved on a GPU
        device = _DEVICE_NAME.search(self.ctx.source)
        fix = None
        if device is not None and not any(arg.star for arg in node.args):
            fixed = with_arguments(node, last=[keyword("map_location", device.group(1))])
            fix = FixSpec(f"Add `map_location={device.group(1)}`", ((node, self.ctx.code_for(fixed)),), Applicability.UNSAFE)
        self.report(
            node,
            "`torch.load` without `map_location` puts tensors back on the GPU they were saved from: on a "
            f"machine without CUDA, which {where} falls back to, a GPU checkpoint fails to load; pass "
            f"`map_location={device.group(1) if device is not None else 'device'}`",
            fix=fix, related=related,
        )

    def _loaded_into(self) -> cst.BaseExpression | None:
        """What the load being visited goes straight into the `load_state_dict` of
        (`self.lr_scheduler` for `self.lr_scheduler.load_state_dict(torch.load(path))`)."""
        parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        call = self.ctx.ancestors[-2] if isinstance(parent, cst.Arg) and len(self.ctx.ancestors) > 1 else None
        loads = isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value == "load_state_dict"
        return call.func.value if loads else None

    def _restores_numbers(self, load: cst.Call) -> bool:
        """The loaded state goes straight to a scheduler's or a GradScaler's `load_state_dict`
        (`self.lr_scheduler.load_state_dict(torch.load(path))`): Python numbers, on no device."""
        into = self._loaded_into()
        return into is not None and role_from_name(name_hint(into)) in (Role.SCHEDULER, Role.SCALER)

    def _restores_model(self, load: cst.Call) -> bool:
        """The loaded object goes to `load_state_dict(...)` (inline, or through the name it is
        assigned to, subscripted or not) or is used as a model (`model = torch.load(p)` then
        `model.eval()`): a checkpoint of weights trained where the program ran, not a data cache."""
        parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        if isinstance(parent, cst.Arg):
            return self._loaded_into() is not None
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
            return False
        name = re.escape(parent.targets[0].target.value)
        scope = self.ctx.code_for(self.ctx.enclosing_function() or self.ctx.module)
        return re.search(rf"load_state_dict\(\s*{name}\b|\b{name}\.(?:eval|to|cuda|state_dict|parameters)\(", scope) is not None

    def _reads_back(self, load: cst.Call) -> bool:
        """`torch.save(model, PATH)` (or a helper named for saving: `utils.save_on_master(data,
        PATH)`) and `torch.load(PATH)` in one function, or a call handed the folder the load reads
        from as its output (`convert(checkpoint, output_dir=out_dir)` then `torch.load(out_dir /
        "model.pth")`): what this machine has written, it can read."""
        source = argument(load, 0, "f")
        if source is None:
            return False
        scope = self.ctx.code_for(self.ctx.enclosing_function() or self.ctx.module)
        if re.search(rf"\w*save\w*\([^\n]*,\s*{re.escape(self.ctx.code_for(source))}\s*[,)]", scope):
            return True
        folder = _folder_of(source)
        written_to = rf"\b{_OUTPUT_KEYWORD}\s*=\s*{re.escape(folder)}\s*[,)]" if folder is not None else None
        return written_to is not None and re.search(written_to, scope) is not None

    def _only_with_cuda(self) -> bool:
        """In the body of `if torch.cuda.is_available():` (or of `if args.cuda and ...`): the load
        runs only where CUDA is, as its `else` loads with a `map_location`."""
        ancestors = self.ctx.ancestors
        for parent, child in zip(ancestors, ancestors[1:]):
            if isinstance(parent, cst.If) and child is parent.body:
                test = self.ctx.code_for(parent.test)
                if "cuda.is_available()" in test and not test.startswith("not") and " or " not in test:
                    return True
        return False

    def _falls_back(self) -> tuple[str, tuple[Related, ...]] | None:
        """("this file", no notes) where the file runs without CUDA too, ("this program", a note on
        the place) where a project file it imports or that imports it does; None where nothing does."""
        if self._file_falls_back is None:
            self._file_falls_back = cpu_fallback_row(self.ctx.source) is not None
        if self._file_falls_back:
            return "this file", ()
        elsewhere = self.ctx.project.cpu_fallback()  # the project view keeps its answer
        return None if elsewhere is None else ("this program", self.ctx.project.related([elsewhere], self.ctx.path))


# The keyword a call takes for where it writes its output: `output_dir=`, `out_path=`, `save_dir=`.
_OUTPUT_KEYWORD = r"(?:output|out|save|dest)_?(?:dir|directory|folder|path)"


def _folder_of(path: cst.BaseExpression) -> str | None:
    """The name of the folder a path is built on: `out_dir` of `out_dir / "model.pth"` or of
    `os.path.join(out_dir, "model.pth")`."""
    if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Divide):
        return _folder_of(path.left) if not isinstance(path.left, cst.Name) else path.left.value
    if isinstance(path, cst.Call) and path.args and dotted_name(path.func) in ("os.path.join", "osp.join", "path.join"):
        first = path.args[0].value
        return first.value if isinstance(first, cst.Name) else None
    return None


def _saves_on_cpu(source: str) -> bool:
    saved = [match.group(1).strip() for match in _SAVE.finditer(source)]
    return bool(saved) and all(value.endswith(".cpu()") for value in saved)
