"""Runtime verification: run the user's script once, instrumented, and judge each static finding.

`run_script` starts `python -m torchlint.runtime.child` (see child.py), which runs the script as
`python SCRIPT ARGS` would, with torch instrumented, and leaves its observations in a JSON file;
verdicts.py turns them into a verdict per finding (`confirmed`, `refuted`, `not-reached`) and
runtime-only findings. This module itself never imports torch.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import signal
import site
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from torchlint.diagnostics import Diagnostic
from torchlint.runtime.notebook import NotebookFindings, is_notebook

__all__ = ["RuntimeReport", "RuntimeUnavailable", "run_script", "DEVICES"]

DEVICES = ("auto", "cpu", "cuda", "mps", "logical:cuda", "logical:mps", "meta")
# What a dry run (`meta`: shapes, no values) can confirm.
DRY_RUN_CODES = frozenset({"TL103", "TL104", "TL105"})
# Seconds a child gets to write its observations after SIGTERM before it is killed.
TERM_GRACE = 5.0
# How long the processes a finished script leaves behind may take to end.
GROUP_GRACE = 3.0


class RuntimeUnavailable(RuntimeError):
    """Runtime mode cannot run here (torch missing, or the requested device absent)."""


@dataclass
class RuntimeReport:
    diagnostics: list[Diagnostic]
    exit_status: int
    exception: str | None
    timed_out: bool
    device: str = "cpu"  # the resolved device the run used
    notes: tuple[str, ...] = ()  # what the run did differently from plain python, said once
    # What `--report` draws: optimizer steps, the health checks' view of the training
    # (health.py's `report`) and the host syncs per line (verdicts.host_syncs).
    steps: int = 0
    training: dict = field(default_factory=dict)
    host_syncs: list[dict] = field(default_factory=list)


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


@functools.lru_cache(maxsize=None)
def _probe_devices() -> dict[str, bool]:
    """Which real accelerators exist (asked in a subprocess: this process never imports torch)."""
    code = (
        "import json, torch\n"
        "mps = getattr(torch.backends, 'mps', None)\n"
        "print(json.dumps({'cuda': torch.cuda.is_available(),"
        " 'mps': bool(mps and mps.is_available())}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"cuda": False, "mps": False}


def resolve_device(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    if device in ("cpu", "logical:cuda", "logical:mps", "meta"):
        return device
    present = _probe_devices()
    if device == "auto":
        return "cuda" if present["cuda"] else "mps" if present["mps"] else "logical:cuda"
    if not present[device]:
        raise RuntimeUnavailable(f"--device {device}: no {device} device here (use logical:{device})")
    return device


def _package_root() -> str:
    """The directory torchlint is imported from: a checkout, or site-packages after `pip install .`."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _added_path(package_root: str) -> str:
    """What the child needs on PYTHONPATH to import torchlint: nothing where the interpreter's own
    site-packages hold it (a regular install, beside torch: the child takes that directory off its
    path again once started, which would hide torch and everything else installed there)."""
    site_directories = {os.path.realpath(path) for path in site.getsitepackages()}
    return "" if os.path.realpath(package_root) in site_directories else package_root


def run_script(
    script: str | None,
    args: list[str],
    findings: list[Diagnostic],
    *,
    device: str = "auto",
    timeout: float | None = None,
    module: str | None = None,
    gradient_flow: bool = False,
) -> RuntimeReport:
    """Run `script` (or `python -m module`) with `args` under instrumentation and give every
    finding in the files the run loaded a verdict. `gradient_flow`: keep each layer's gradient
    norms over the optimizer steps (for a report)."""
    if not _torch_installed():
        raise RuntimeUnavailable(
            "runtime mode needs PyTorch, which is not importable here: pip install torch "
            "(the CPU build is enough)"
        )
    resolved = resolve_device(device)
    from torchlint.runtime.child import CONFIG_VARIABLE, SITECUSTOMIZE
    from torchlint.runtime.recorder import merge
    from torchlint.runtime.checks import NOT_CHECKED
    from torchlint.runtime.verdicts import host_syncs, judge_all, loaded_files, sites_for

    notebook = NotebookFindings(script) if script is not None and is_notebook(script) else None
    if notebook is not None:
        findings = notebook.for_run(findings)
    unchecked = []
    if resolved == "meta":
        unchecked = [d.with_runtime(NOT_CHECKED, "a dry run checks shapes only") for d in findings if d.code not in DRY_RUN_CODES]
        findings = [d for d in findings if d.code in DRY_RUN_CODES]
    sites = sites_for(findings)
    roots = [os.getcwd()] if script is None else [os.path.dirname(os.path.abspath(script)), os.getcwd()]
    try:
        with tempfile.TemporaryDirectory(prefix="torchlint-runtime-") as workdir:
            output = os.path.join(workdir, "observed")
            boot = os.path.join(workdir, "boot")
            os.makedirs(output)
            os.makedirs(boot)
            package_root = _package_root()
            with open(os.path.join(boot, "sitecustomize.py"), "w", encoding="utf-8") as handle:
                handle.write(SITECUSTOMIZE.format(variable=CONFIG_VARIABLE, root=package_root))
            env = dict(os.environ)
            env.pop(CONFIG_VARIABLE, None)
            config = {
                "script": script, "module": module, "args": list(args), "device": resolved, "output": output,
                "roots": roots, "sites": [site.__dict__ for site in sites], "boot": boot,
                "restore_pythonpath": env.get("PYTHONPATH", ""), "added_path": _added_path(package_root),
                "gradient_flow": gradient_flow,
            }
            env["PYTHONPATH"] = os.pathsep.join(p for p in (config["added_path"], env.get("PYTHONPATH")) if p)
            if resolved in ("cpu", "meta"):
                # The script's tensors go to the CPU, in every process it starts: a GPU it
                # could see would take them there, unwatched.
                env["CUDA_VISIBLE_DEVICES"] = ""
            config_path = os.path.join(workdir, "config.json")
            with open(config_path, "w", encoding="utf-8") as handle:
                json.dump(config, handle)
            timed_out, status = _run_child([sys.executable, "-m", "torchlint.runtime.child", config_path], env, timeout)
            observed = merge([_read(os.path.join(output, name)) for name in sorted(os.listdir(output))])
    except _Terminated as stop:
        # The script's processes and the temporary folder are gone: now stop as asked, as the
        # signal's default would have it (or as the caller's own handler decides).
        os.kill(os.getpid(), stop.signum)
        raise SystemExit(128 + stop.signum) from None
    main_file = None if script is None else os.path.realpath(script)
    diagnostics = judge_all(findings, sites, observed, resolved, main_file, completed=status == 0 and not timed_out)
    loaded = loaded_files(observed, main_file)
    diagnostics += [d for d in unchecked if os.path.realpath(d.filename) in loaded]
    if notebook is not None:
        diagnostics = notebook.by_cell(diagnostics)
    return RuntimeReport(
        diagnostics=diagnostics,
        exit_status=status,
        exception=observed.get("exception"),
        timed_out=timed_out,
        device=resolved,
        notes=tuple(observed.get("notes", ())),
        steps=observed["steps"],
        training=observed["training"],
        host_syncs=host_syncs(observed, resolved),
    )


class _Terminated(Exception):
    """torchlint itself was asked to stop (SIGTERM from a cancelled CI job, SIGHUP from a
    closed terminal) while the script ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _terminations_raised():
    """SIGTERM and SIGHUP raise `_Terminated` while the child runs, so that it is stopped with
    them; signals can only be caught in the main thread (elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise _Terminated(signum)

    previous = {number: signal.signal(number, raise_terminated) for number in _TERMINATIONS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _run_child(command: list[str], env: dict, timeout: float | None) -> tuple[bool, int]:
    """Run the child in a process group of its own, so that a timeout, Ctrl-C, SIGTERM or SIGHUP
    stops every process the script started (DataLoader workers, spawned children) and none is
    orphaned."""
    with _terminations_raised():
        process = subprocess.Popen(command, env=env, start_new_session=True)
        timed_out = False
        try:
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _stop_group(process, signal.SIGTERM)
        except KeyboardInterrupt:
            # The terminal's Ctrl-C reached this process only: pass it on, let the script write
            # what it saw, then stop what is left.
            _stop_group(process, signal.SIGINT)
        except _Terminated as stop:
            _stop_group(process, stop.signum)
            raise  # the handlers are restored on the way out; `run_script` stops torchlint
    _await_group(process.pid)
    status = process.returncode
    if status < 0:
        status = 128 - status
    return timed_out, status


_TERMINATIONS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _stop_group(process: subprocess.Popen, first: int) -> None:
    _signal_group(process.pid, first)
    try:
        process.wait(timeout=TERM_GRACE)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pass
    _signal_group(process.pid, signal.SIGKILL)  # whatever is left, workers included
    process.wait()


def _await_group(group: int) -> None:
    """Give the processes the script left behind (multiprocessing's resource tracker, a
    forkserver) the moment they take to end once it has, as under plain python, before the
    folder they write their observations to is removed."""
    deadline = time.monotonic() + GROUP_GRACE
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.02)


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}
