"""The AST rewrite probes only the flagged node and keeps the user's positions."""

import ast
import builtins
import traceback

import pytest

from torchlint.runtime.probes import PROBE_NAME, Site, instrument

SOURCE = """\
class Model:
    def run(self, values):
        total = 0
        total += len(values)
        return sum(values) / max(values)
"""


class Recorder:
    def __init__(self):
        self.calls = []

    def call(self, site, func):
        self.calls.append(("call", site, func.__name__))
        return func

    def value(self, site):
        self.calls.append(("value", site))
        return lambda v: v

    def mark(self, site):
        self.calls.append(("mark", site))


@pytest.fixture
def probe(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(builtins, PROBE_NAME, recorder, raising=False)
    return recorder


def test_call_and_statement_probes(probe):
    sites = [Site(1, "X", "m.py", 5, 16, 5, 27), Site(2, "Y", "m.py", 4, 9, 4, 29)]
    tree, probed = instrument(SOURCE, "m.py", sites)
    assert probed == [1, 2]
    namespace = {}
    exec(compile(tree, "m.py", "exec"), namespace)
    assert namespace["Model"]().run([1, 2, 4]) == 7 / 4
    assert probe.calls == [("mark", 2), ("call", 1, "sum")]
    # Nothing else changed: the unflagged max() call is still a plain call.
    assert "max(values)" in ast.unparse(tree)


def test_tracebacks_keep_line_and_columns(probe):
    sites = [Site(1, "X", "m.py", 5, 16, 5, 27)]
    tree, _ = instrument(SOURCE, "m.py", sites)
    namespace = {}
    exec(compile(tree, "m.py", "exec"), namespace)
    with pytest.raises(ValueError) as caught:
        namespace["Model"]().run([])
    frame = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert (frame.filename, frame.lineno, frame.colno, frame.end_colno) == ("m.py", 5, 29, 40)  # 0-based, as in the source
