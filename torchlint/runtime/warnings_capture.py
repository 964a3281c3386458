"""Capture PyTorch's warnings with the user's line.

PyTorch's Python warnings use `stacklevel` to point at the user's call. The function mode adds
frames of its own between the user and torch (`handle_torch_function`, the mode's
`__torch_function__`, a second entry into the same torch function), so a plain `warnings.warn`
would blame torchlint's file and, worse, its "once per location" registry would show a warning
for one user line only. `warnings.warn` is therefore replaced (before torch is imported) by a
version that counts `stacklevel` over the frames the user would have had. Warnings raised from
C++ (`TORCH_WARN`) bypass `warnings.warn`; `showwarning` still sees those, and the innermost user
frame is looked up from the live stack.
"""

from __future__ import annotations

import os
import sys
import warnings

import torchlint.runtime as _runtime_pkg

_OWN_DIR = os.path.dirname(os.path.abspath(_runtime_pkg.__file__))


def _is_inserted(frame) -> bool:
    filename = frame.f_code.co_filename
    if filename.startswith(_OWN_DIR):
        return True
    return frame.f_code.co_name == "handle_torch_function" and filename.endswith("overrides.py")


def _target_frame(stacklevel: int):
    """The frame `stacklevel` levels above warn's caller, as if torchlint were not there."""
    frame = sys._getframe(2)  # warn's caller
    frames = []
    skip_next_duplicate = False
    while frame is not None:
        if _is_inserted(frame):
            if frame.f_code.co_name == "handle_torch_function":
                skip_next_duplicate = True
        elif skip_next_duplicate:
            # The public torch function that dispatched to the mode: the same function as the
            # one the mode called again, so it appears twice.
            skip_next_duplicate = False
        else:
            frames.append(frame)
            if len(frames) >= stacklevel:
                return frame
        frame = frame.f_back
    return None


class WarningCapture:
    def __init__(self, on_warning) -> None:
        self.on_warning = on_warning  # (text, category, filename, lineno, frame) -> None
        self._original_warn = warnings.warn
        self._original_show = warnings.showwarning

    def install(self) -> None:
        capture = self

        def warn(message, category=None, stacklevel=1, source=None):
            if isinstance(message, Warning):
                category = message.__class__
            if category is None:
                category = UserWarning
            frame = _target_frame(max(int(stacklevel), 1))
            if frame is None:
                module_globals, filename, lineno = sys.__dict__, "sys", 1
            else:
                module_globals, filename, lineno = frame.f_globals, frame.f_code.co_filename, frame.f_lineno
            try:
                capture.on_warning(str(message), category, filename, lineno, sys._getframe(1))
            except Exception:  # noqa: BLE001 - never break the user's program
                pass
            module = module_globals.get("__name__", "<string>")
            registry = module_globals.setdefault("__warningregistry__", {})
            # No module globals, as C's warnings.warn passes none: given the script's, Python 3.12+
            # asks them for a loader, which `__main__` run by exec has not (ValueError).
            warnings.warn_explicit(message, category, filename, lineno, module, registry, None, source)

        def showwarning(message, category, filename, lineno, file=None, line=None):
            try:
                capture.on_warning(str(message), category, filename, lineno, sys._getframe(1))
            except Exception:  # noqa: BLE001
                pass
            return capture._original_show(message, category, filename, lineno, file, line)

        warnings.warn = warn
        warnings.showwarning = showwarning
