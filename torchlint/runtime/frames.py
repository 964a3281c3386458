"""Map an event to the user's code: the innermost frame whose file is one of the user's.

Walking `f_back` and testing `co_filename` costs a few microseconds (a `traceback.extract_stack`
per call would cost x7.7), and both answers are cached per code object.
"""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType

# (filename, row, end_row, column, end_column): 1-based rows, 0-based UTF-8 byte columns
# (as `co_positions` gives them; -1 when unknown). The parent turns columns into characters.
Position = tuple[str, int, int, int, int]

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_EXCLUDED_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


class UserFiles:
    """Which files are the user's: under the script's directory or the working directory, not
    installed packages, not torchlint itself."""

    def __init__(self, roots: list[str]) -> None:
        self.roots = tuple(os.path.join(os.path.abspath(r), "") for r in roots)
        self._by_code: dict[CodeType, bool] = {}
        self._by_name: dict[str, bool] = {}
        self._positions: dict[CodeType, list] = {}

    def is_user_file(self, filename: str) -> bool:
        known = self._by_name.get(filename)
        if known is None:
            path = os.path.abspath(filename) if not filename.startswith("<") else filename
            known = (
                path.startswith(self.roots)
                and not path.startswith(_RUNTIME_DIR)
                and not any(part in path for part in _EXCLUDED_PARTS)
                and os.sep + ".venv" + os.sep not in path
            )
            self._by_name[filename] = known
        return known

    def is_user_code(self, code: CodeType) -> bool:
        known = self._by_code.get(code)
        if known is None:
            known = self._by_code[code] = self.is_user_file(code.co_filename)
        return known

    def user_frame(self, frame: FrameType | None) -> FrameType | None:
        by_code = self._by_code
        while frame is not None:
            code = frame.f_code
            known = by_code.get(code)
            if known is None:
                known = self.is_user_code(code)
            if known:
                return frame
            frame = frame.f_back
        return None

    def position(self, frame: FrameType) -> Position:
        """The position of the instruction a frame is executing (the whole call expression for
        a call)."""
        code = frame.f_code
        table = self._positions.get(code)
        if table is None:
            table = self._positions[code] = list(code.co_positions())
        index = frame.f_lasti // 2
        if 0 <= index < len(table):
            row, end_row, col, end_col = table[index]
            if row is not None:
                return (
                    code.co_filename, row, end_row or row,
                    -1 if col is None else col, -1 if end_col is None else end_col,
                )
        return (code.co_filename, frame.f_lineno, frame.f_lineno, -1, -1)

    @staticmethod
    def caller(depth: int) -> FrameType:
        """The frame `depth` levels up from the caller, not counting torchlint's own frames (a
        site probe's wrapper stands between the user's call and torch)."""
        frame = sys._getframe(depth + 1)
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_RUNTIME_DIR):
            frame = frame.f_back
        return frame

    def here(self, depth: int = 1) -> Position | None:
        """The position of the innermost user frame at or above the caller (`depth` 1)."""
        frame = self.user_frame(sys._getframe(depth))
        return None if frame is None else self.position(frame)
