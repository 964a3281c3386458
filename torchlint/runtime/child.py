"""The child process: `python -m torchlint.runtime.child CONFIG.json`, and the processes it starts.

Runs the user's script (or `-m MODULE`) as `python SCRIPT ARGS` would (same argv,
`__name__ == "__main__"`, cwd, inherited stdio, `sys.path[0]` = the script's directory) with
torch instrumented, and writes what it observed to `observed.PID.json` in the output directory
named in the config: at the end, on SIGTERM (timeout), on Ctrl-C, on `sys.exit` and on an
uncaught exception, plus every few seconds while it runs.

Instrumentation follows the script into the processes it starts: forked DataLoader workers keep
it (their recorder starts afresh, with a file of its own, see `Recorder.after_fork`), and every
new Python process (spawn, forkserver, `subprocess` of `sys.executable`) finds the environment
variable `TORCHLINT_RUNTIME_CONFIG` and a `sitecustomize` on `PYTHONPATH` that calls `follow()`.
The parent merges the files of all processes.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import runpy
import signal
import sys
import traceback
import types

from torchlint.runtime.frames import UserFiles
from torchlint.runtime.notebook import is_notebook, run_cells
from torchlint.runtime.probes import PROBE_NAME, Site, compile_probed
from torchlint.runtime.recorder import Recorder

_OWN_DIR = os.path.dirname(os.path.abspath(__file__))
CONFIG_VARIABLE = "TORCHLINT_RUNTIME_CONFIG"
# The start-up hook of every Python process the script starts (the boot directory holds it).
SITECUSTOMIZE = '''\
import os, sys

def _torchlint_follow():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    me = sys.modules.pop("sitecustomize")
    try:
        import sitecustomize  # noqa: F401 - the environment's own start-up hook, if any
    except ImportError:
        sys.modules["sitecustomize"] = me
    config = os.environ.get({variable!r})
    if config:
        sys.path.insert(0, {root!r})
        try:
            from torchlint.runtime.child import follow
        finally:
            sys.path.remove({root!r})
        follow(config)

_torchlint_follow()
'''


class _ProbedLoader(importlib.machinery.SourceFileLoader):
    """Loads a local module with its flagged sites probed (never writes bytecode)."""

    sites: list[Site] = []

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        source = importlib.util.decode_source(self.get_data(path))
        code, _ = compile_probed(source, path, self.sites)
        return code


class _ProbeFinder(importlib.abc.MetaPathFinder):
    """Imports of files that hold findings (under the user's directories) get probed."""

    def __init__(self, sites_by_file: dict[str, list[Site]]) -> None:
        self.sites_by_file = sites_by_file

    def find_spec(self, fullname, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        sites = self.sites_by_file.get(os.path.realpath(spec.origin))
        if not sites or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        loader = _ProbedLoader(fullname, spec.origin)
        loader.sites = sites
        spec.loader = loader
        return spec


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Calls `then()` once `import torch` has finished (a process that never imports torch is
    left alone)."""

    def __init__(self, then) -> None:
        self.then = then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader, then = spec.loader, self.then

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                then()

        spec.loader = _Loader()
        return spec


class Instrumentation:
    """Everything one process installs: the recorder, warnings, probes and (with torch) the
    function mode and the hooks."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.rec = Recorder(config["output"], main=False)
        self.files = UserFiles(config["roots"])
        self.rec.loaded_files = self._loaded_files
        self.sites = [Site(**site) for site in config["sites"]]
        self.sites_by_file: dict[str, list[Site]] = {}
        for site in self.sites:
            self.sites_by_file.setdefault(os.path.realpath(site.filename), []).append(site)
        self.mode = None

    def _loaded_files(self) -> list[str]:
        names = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
        return sorted(os.path.realpath(n) for n in names if isinstance(n, str) and self.files.is_user_file(n))

    def install_before_torch(self) -> None:
        from torchlint.runtime.instrument import Probe, install_warnings

        install_warnings(self.rec, self.files)
        setattr(builtins, PROBE_NAME, Probe(self.rec, self.sites))
        sys.meta_path.insert(0, _ProbeFinder(self.sites_by_file))
        self._probe_run_path()

    def install_torch(self) -> None:
        from torchlint.runtime import logical
        from torchlint.runtime.health import TrainingHealth
        from torchlint.runtime.instrument import (
            GradTracker, MethodHooks, Runtime, install_compile_note, install_data_parallel_note,
        )

        device = self.config["device"]
        if device == "meta":
            from torchlint.runtime import dry_run

            logical.hide_accelerators()
            self.mode = dry_run.install(self.rec, self.files)
            return
        kind = logical.logical_kind(device)
        if kind is not None:
            logical.install(kind)
            install_compile_note(self.rec)
            install_data_parallel_note(self.rec)
        elif device == "cuda":
            import torch

            torch.cuda.set_sync_debug_mode("warn")
        elif device == "cpu":
            logical.hide_accelerators()
        GradTracker(self.rec, self.files).install()
        TrainingHealth(self.rec, self.files, gradient_flow=self.config.get("gradient_flow", False)).install()
        runtime = Runtime(self.rec, self.files, device)
        self.mode = runtime if kind is not None else MethodHooks(runtime)

    def compile(self, path: str):
        with open(path, "rb") as handle:
            # As Python reads a source: its coding cookie, or UTF-8 without the BOM.
            source = importlib.util.decode_source(handle.read())
        code, _ = compile_probed(source, path, self.sites_by_file.get(os.path.realpath(path), []))
        return code

    def _probe_run_path(self) -> None:
        """`runpy.run_path` (how spawn children import the script as `__mp_main__`) compiles the
        script itself: give it the probed code."""
        original = runpy._get_code_from_file
        instrumentation = self

        def get_code_from_file(*args):
            fname = args[-1]
            if os.path.realpath(fname) in instrumentation.sites_by_file:
                return instrumentation.compile(os.path.abspath(fname)), fname
            return original(*args)

        runpy._get_code_from_file = get_code_from_file


def follow(config_path: str) -> None:
    """In a process the script started: instrument it like the script, write what it sees."""
    import atexit
    from multiprocessing import util

    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    instrumentation = Instrumentation(config)
    instrumentation.install_before_torch()

    def with_torch() -> None:
        instrumentation.install_torch()
        instrumentation.mode.__enter__()  # for the rest of the process

    if "torch" in sys.modules:
        with_torch()
    else:
        sys.meta_path.insert(0, _AfterTorchImport(with_torch))
    rec = instrumentation.rec
    atexit.register(rec.flush)
    # multiprocessing children leave through os._exit: its finalizers are their atexit.
    util.register_after_fork(rec, Recorder.after_fork)
    signal.signal(signal.SIGTERM, _flush_and_exit(rec))


def _flush_and_exit(rec: Recorder):
    def on_term(signum, frame):
        rec.exit_status = 128 + signum
        rec.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signum)

    return on_term


def _user_traceback(error: BaseException) -> str:
    """The traceback as Python would print it for the script: torchlint's frames left out."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_OWN_DIR):
        tb = tb.tb_next
    error.__traceback__ = tb
    lines = traceback.format_exception(type(error), error, tb)
    return "".join(line for line in lines if not _is_own_frame_line(line))


def _is_own_frame_line(line: str) -> bool:
    return line.lstrip().startswith(f'File "{_OWN_DIR}')


def _hand_down(config_path: str, config: dict) -> None:
    """The script's environment as it was, plus what makes its child processes follow."""
    added = config["added_path"]
    if added and added in sys.path:
        sys.path.remove(added)
    pythonpath = [config["boot"]] + ([config["restore_pythonpath"]] if config["restore_pythonpath"] else [])
    os.environ["PYTHONPATH"] = os.pathsep.join(pythonpath)
    os.environ[CONFIG_VARIABLE] = config_path


def main(argv: list[str]) -> int:
    config_path = argv[0]
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    _hand_down(config_path, config)
    instrumentation = Instrumentation(config)
    rec = instrumentation.rec
    rec.main = True
    signal.signal(signal.SIGTERM, _flush_and_exit(rec))
    from multiprocessing import util

    util.register_after_fork(rec, Recorder.after_fork)

    module = config.get("module")
    if module is None:
        script = os.path.abspath(config["script"])
        sys.argv = [config["script"], *config["args"]]
        sys.path[0] = os.path.dirname(script)
    else:
        sys.argv = [module, *config["args"]]
        sys.path[0] = os.getcwd()

    instrumentation.install_before_torch()
    status = 0
    try:
        import torch  # noqa: F401 - after the warnings hook, so torch's `from warnings import warn` sees it

        instrumentation.install_torch()
        with instrumentation.mode:
            if module is None:
                _run_script(instrumentation, script)
            else:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        status = _exit_code(exit_.code)
    except KeyboardInterrupt as error:
        rec.exception = _user_traceback(error)
        sys.stderr.write(rec.exception)
        status = 128 + signal.SIGINT
    except BaseException as error:  # noqa: BLE001 - the script's own failure
        if getattr(error, "ends_dry_run", False):
            rec.notes.append(str(error))  # the dry run went as far as it could: a success
        else:
            if instrumentation.mode is not None:
                instrumentation.mode.failed(error)
            rec.exception = _user_traceback(error)
            sys.stderr.write(rec.exception)
            status = 1
    finally:
        rec.exit_status = status
        rec.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def _run_script(instrumentation: Instrumentation, script: str) -> None:
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(__file__=script, __builtins__=builtins, __cached__=None, __spec__=None)
    sys.modules["__main__"] = main_module
    if is_notebook(script):
        # The notes name the notebook as the user did (`script` is its absolute path).
        sites = instrumentation.sites_by_file.get(os.path.realpath(script), [])
        run_cells(instrumentation.config["script"], sites, main_module.__dict__)
    else:
        exec(instrumentation.compile(script), main_module.__dict__)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
