"""Runtime verification: run the user's script once, instrumented, and judge each static finding.

`run_script` starts `python -m torchlint.runtime.child` (see child.py), which runs the script as
`python SCRIPT ARGS` would, with torch instrumented, and leaves its observations in a JSON file;
verdicts.py turns them into a verdict per finding (`confirmed`, `refuted`, `not-reached`) and
runtime-only findings. This module itself never imports torch.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from torchlint.diagnostics import Diagnostic
from torchlint.runtime.notebook import NotebookFindings, is_notebook

__all__ = ["RuntimeReport", "RuntimeUnavailable", "run_script", "DEVICES"]

DEVICES = ("auto", "cpu", "cuda", "mps", "logical:cuda", "logical:mps")
# Seconds a child gets to write its observations after SIGTERM before it is killed.
TERM_GRACE = 5.0


class RuntimeUnavailable(RuntimeError):
    """Runtime mode cannot run here (torch missing, or the requested device absent)."""


@dataclass
class RuntimeReport:
    diagnostics: list[Diagnostic]
    exit_status: int
    exception: str | None
    timed_out: bool


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
    if device in ("cpu", "logical:cuda", "logical:mps"):
        return device
    present = _probe_devices()
    if device == "auto":
        return "cuda" if present["cuda"] else "mps" if present["mps"] else "logical:cuda"
    if not present[device]:
        raise RuntimeUnavailable(f"--device {device}: no {device} device here (use logical:{device})")
    return device


def run_script(
    script: str,
    args: list[str],
    findings: list[Diagnostic],
    *,
    device: str = "auto",
    timeout: float | None = None,
) -> RuntimeReport:
    """Run `script` with `args` under instrumentation and give every finding a verdict."""
    if not _torch_installed():
        raise RuntimeUnavailable(
            "runtime mode needs PyTorch, which is not importable here: pip install torchlint[runtime]"
        )
    resolved = resolve_device(device)
    from torchlint.runtime.verdicts import judge_all, sites_for

    notebook = NotebookFindings(script) if is_notebook(script) else None
    if notebook is not None:
        findings = notebook.for_run(findings)
    sites = sites_for(findings)
    with tempfile.TemporaryDirectory(prefix="torchlint-runtime-") as workdir:
        output = os.path.join(workdir, "observed.json")
        config_path = os.path.join(workdir, "config.json")
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        config = {
            "script": script, "args": list(args), "device": resolved, "output": output,
            "sites": [site.__dict__ for site in sites],
            "restore_pythonpath": None, "added_path": package_root,
        }
        config["restore_pythonpath"] = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        timed_out, status = _run_child([sys.executable, "-m", "torchlint.runtime.child", config_path], env, timeout)
        observed = _read(output)
    diagnostics = judge_all(findings, sites, observed)
    if notebook is not None:
        diagnostics = notebook.by_cell(diagnostics)
    return RuntimeReport(
        diagnostics=diagnostics,
        exit_status=status,
        exception=observed.get("exception"),
        timed_out=timed_out,
    )


def _run_child(command: list[str], env: dict, timeout: float | None) -> tuple[bool, int]:
    process = subprocess.Popen(command, env=env)
    timed_out = False
    try:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=TERM_GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached the child too (same process group): let it write what it saw.
        try:
            process.wait(timeout=TERM_GRACE)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            process.kill()
            process.wait()
    status = process.returncode
    if status < 0:
        status = 128 - status
    return timed_out, status


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}
