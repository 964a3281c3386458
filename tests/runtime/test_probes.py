"""The AST rewrite probes only the flagged node and keeps the user's positions."""

import ast
import builtins
import operator
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

    def operation(self, site, name):
        self.calls.append(("operation", site, name))
        return getattr(operator, name)


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


OPERATION = """\
class Column:
    def __rsub__(self, other):
        return ("reflected", other)


def advantage(returns, values):
    return returns - values
"""


def test_an_operation_whose_check_sees_the_operands_is_computed_by_its_operator(probe):
    """TL104 looks at both operands of `returns - values` (a silent broadcast): the operation
    becomes a call of `operator.sub`, which gives what `-` gives, a reflected `__rsub__` too."""
    sites = [Site(1, "TL104", "m.py", 7, 12, 7, 28)]
    tree, probed = instrument(OPERATION, "m.py", sites)
    assert probed == [1]
    namespace = {}
    exec(compile(tree, "m.py", "exec"), namespace)
    assert namespace["advantage"](5, 3) == 2
    assert namespace["advantage"](5, namespace["Column"]()) == ("reflected", 5)
    assert probe.calls == [("operation", 1, "sub")] * 2
    # A check that does not look at the operands keeps the value probe.
    tree, _ = instrument(OPERATION, "m.py", [Site(2, "TL209", "m.py", 7, 12, 7, 28)])
    assert "value(2)(returns - values)" in ast.unparse(tree)
