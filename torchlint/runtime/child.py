"""The child process: `python -m torchlint.runtime.child CONFIG.json`.

Runs the user's script as `python SCRIPT ARGS` would (same argv, `__name__ == "__main__"`, cwd,
inherited stdio, `sys.path[0]` = the script's directory) with torch instrumented, and writes
what it observed to the output file named in the config: at the end, on SIGTERM (timeout), on
Ctrl-C, on `sys.exit` and on an uncaught exception, plus every few seconds while it runs.
"""

from __future__ import annotations

import builtins
import functools
import importlib.abc
import importlib.machinery
import json
import os
import signal
import sys
import traceback
import types

from torchlint.runtime.frames import UserFiles
from torchlint.runtime.notebook import is_notebook, run_cells
from torchlint.runtime.probes import PROBE_NAME, Site, compile_probed
from torchlint.runtime.recorder import Recorder

_OWN_DIR = os.path.dirname(os.path.abspath(__file__))


class _ProbedLoader(importlib.machinery.SourceFileLoader):
    """Loads a local module with its flagged sites probed (never writes bytecode)."""

    sites: list[Site] = []

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        source = self.get_data(path).decode("utf-8")
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


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as handle:
        config = json.load(handle)
    # The parent may have put torchlint on PYTHONPATH: give the script the environment it had.
    if config.get("restore_pythonpath") is not None:
        added = config["added_path"]
        if config["restore_pythonpath"]:
            os.environ["PYTHONPATH"] = config["restore_pythonpath"]
        else:
            os.environ.pop("PYTHONPATH", None)
        if added in sys.path:
            sys.path.remove(added)

    script = os.path.abspath(config["script"])
    rec = Recorder(config["output"])
    files = UserFiles([os.path.dirname(script), os.getcwd()])
    sites = [Site(**site) for site in config["sites"]]
    sites_by_file: dict[str, list[Site]] = {}
    for site in sites:
        sites_by_file.setdefault(os.path.realpath(site.filename), []).append(site)

    def on_term(signum, frame):
        rec.exit_status = 128 + signum
        rec.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)

    sys.argv = [config["script"], *config["args"]]
    sys.path[0] = os.path.dirname(script)

    from torchlint.runtime.instrument import install_warnings

    install_warnings(rec, files)
    mode = None
    status = 0
    try:
        import torch  # noqa: F401 - after the warnings hook, so torch's `from warnings import warn` sees it

        from torchlint.runtime import logical
        from torchlint.runtime.instrument import GradTracker, Probe, Runtime

        device = config["device"]
        kind = logical.logical_kind(device)
        if kind is not None:
            logical.install(kind)
        elif device == "cuda":
            torch.cuda.set_sync_debug_mode("warn")
        GradTracker(rec, files).install()
        mode = Runtime(rec, files, device)
        setattr(builtins, PROBE_NAME, Probe(rec, {s.id: s.code for s in sites}))
        sys.meta_path.insert(0, _ProbeFinder(sites_by_file))

        script_sites = sites_by_file.get(os.path.realpath(script), [])
        if is_notebook(script):
            run = functools.partial(run_cells, config["script"], script_sites)
        else:
            with open(script, "rb") as handle:
                source = handle.read().decode("utf-8")
            run = functools.partial(exec, compile_probed(source, script, script_sites)[0])
        main_module = types.ModuleType("__main__")
        main_module.__dict__.update(__file__=script, __builtins__=builtins, __cached__=None, __spec__=None)
        sys.modules["__main__"] = main_module
        with mode:
            run(main_module.__dict__)
    except SystemExit as exit_:
        status = _exit_code(exit_.code)
    except KeyboardInterrupt as error:
        rec.exception = _user_traceback(error)
        sys.stderr.write(rec.exception)
        status = 128 + signal.SIGINT
    except BaseException as error:  # noqa: BLE001 - the script's own failure
        rec.exception = _user_traceback(error)
        sys.stderr.write(rec.exception)
        status = 1
    finally:
        rec.exit_status = status
        rec.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
