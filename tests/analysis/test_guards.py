"""`ctx.guards.in_compat_code()`: version-gated branches, try/except fallbacks, TYPE_CHECKING blocks."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports
from torchlint.walker import Walker


class _Probe:
    """Records the guard verdict at each call of `probe()`."""

    def __init__(self, ctx: FileContext, fallback_only: bool) -> None:
        self.ctx = ctx
        self.fallback_only = fallback_only
        self.verdicts: list[bool] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            self.verdicts.append(self.ctx.guards.in_compat_code(node, fallback_only=self.fallback_only))


def verdicts(source: str, fallback_only: bool = False) -> list[bool]:
    module = cst.parse_module(textwrap.dedent(source))
    ctx = FileContext("t.py", textwrap.dedent(source), module, Settings(rules=()))
    _collect_top_level_imports(ctx)
    probe = _Probe(ctx, fallback_only)
    Walker([ctx.values, probe], ctx.ancestors).walk(module)
    return probe.verdicts


@pytest.mark.parametrize(
    "test",
    [
        "_TORCH_GREATER_EQUAL_2_4",
        "not _TORCH_GREATER_EQUAL_2_4",
        'is_torch_version(">=", "2.4")',
        'is_torch_greater_or_equal("2.4")',
        'version.parse(torch.__version__) >= version.parse("2.4")',
        "TORCH_2_4",
        "torch_geometric.typing.WITH_PT24",
        "PT_2_4",
        'hasattr(torch.amp, "GradScaler")',
        'RequirementCache("torch>=2.4")',
        "torch_version >= (2, 4)",
    ],
)
def test_version_tests_guard_both_branches(test: str) -> None:
    source = f"""
    import torch
    if {test}:
        probe()
    else:
        probe()
    probe()
    """
    assert verdicts(source) == [True, True, False]


@pytest.mark.parametrize(
    "test", ["use_amp", "args.version == 2", "hasattr(model, 'module')", "is_torch_available()", "self.training",
             "ckpt_12", "opt_2_4", "PT2"]
)
def test_other_conditions_do_not_guard(test: str) -> None:
    assert verdicts(f"if {test}:\n    probe()\nelse:\n    probe()\n") == [False, False]


def test_conditional_expression_and_elif() -> None:
    source = """
    x = probe() if TORCH_GE_2_4 else probe()
    y = probe() if flag else None
    if flag:
        pass
    elif _TORCH_GREATER_EQUAL_2_1:
        probe()
    else:
        probe()
    """
    assert verdicts(source) == [True, True, False, True, True]


def test_statements_after_an_early_returning_gate() -> None:
    source = """
    def make(device):
        if _TORCH_GREATER_EQUAL_2_4:
            return new(device)
        return probe()

    def gate_raises():
        if not _TORCH_GREATER_EQUAL_2_0:
            raise ImportError("torch>=2.0 needed")
        return probe()

    def gate_after():
        probe()
        if _TORCH_GREATER_EQUAL_2_4:
            return new()
    """
    assert verdicts(source) == [True, False, False]


def test_a_gate_whose_every_path_returns_or_raises() -> None:
    source = """
    def load(path):
        if WITH_PT24:
            try:
                with open(path, "rb") as f:
                    return new(f)
            except RuntimeError as error:
                if "safe_globals" in str(error):
                    return old(path)
                else:
                    raise
        return probe()

    def falls_through(path):
        if WITH_PT24:
            try:
                return new(path)
            except RuntimeError:
                warn()
        return probe()

    def only_raises(path):
        if WITH_PT24:
            with open(path) as f:
                raise ValueError(f)
        return probe()
    """
    assert verdicts(source, fallback_only=True) == [True, False, False]


def test_try_fallbacks() -> None:
    source = """
    try:
        probe()
    except ImportError:
        probe()

    try:
        x = new()
    except (AttributeError, TypeError) as e:
        probe()

    try:
        x = new()
    except Exception:
        probe()

    try:
        x = new()
    except:
        probe()

    try:
        probe()
    except ValueError:
        probe()

    try:
        probe()
    except Exception:
        pass
    else:
        probe()
    finally:
        probe()
    """
    assert verdicts(source) == [True, True, True, True, True, False, False, False, False, False]


def test_long_try_bodies_are_ordinary_code() -> None:
    source = """
    try:
        a = 1
        b = 2
        c = 3
        probe()
    except TypeError:
        probe()
    """
    assert verdicts(source) == [False, True]


def test_nested_functions_inherit_the_gate() -> None:
    source = """
    if TYPE_CHECKING:
        def helper():
            return probe()
    def helper2():
        return probe()
    """
    assert verdicts(source) == [True, False]


def test_default_overridden_by_a_gate() -> None:
    source = """
    def build(conv):
        weight_norm = probe()
        if hasattr(nn.utils.parametrizations, "weight_norm"):
            weight_norm = nn.utils.parametrizations.weight_norm
        other = probe()
        if flag:
            other = 1
        third = probe()
        unrelated = 2
        if _TORCH_GREATER_EQUAL_2_1:
            weight_norm = 3
    """
    assert verdicts(source) == [True, False, False]


def test_type_checking_blocks_never_run_but_their_else_does() -> None:
    source = """
    if TYPE_CHECKING:
        probe()
    else:
        probe()
    if typing.TYPE_CHECKING:
        probe()
    """
    assert verdicts(source) == [True, False, True]


@pytest.mark.parametrize(
    ("test", "newer"),
    [
        ("_TORCH_GREATER_EQUAL_2_4", True),
        ("not _TORCH_GREATER_EQUAL_2_4", False),
        ("TORCH_2_4", True),
        ("_TORCH_LESS_EQUAL_1_13", False),
        ('is_torch_version(">=", "2.4")', True),
        ('is_torch_version("<", "2.2")', False),
        ('is_torch_greater_or_equal("2.4")', True),
        ('hasattr(torch.amp, "GradScaler")', True),
        ('RequirementCache("torch>=2.4")', True),
        ('version.parse(torch.__version__) >= version.parse("2.4")', True),
        ('version.parse(torch.__version__) < version.parse("2.4")', False),
        ('version.parse("2.4") <= version.parse(torch.__version__)', True),
        ('_TORCH_GREATER_EQUAL_2_1 and hasattr(torch, "compile")', True),
        ("torch_version", None),
    ],
)
def test_fallback_only_keeps_the_branch_older_torch_takes(test: str, newer: bool | None) -> None:
    source = f"""
    if {test}:
        probe()
    else:
        probe()
    x = probe() if {test} else probe()
    """
    expected = [True, True] if newer is None else [not newer, newer]
    assert verdicts(source, fallback_only=True) == expected * 2


def test_fallback_only_try_and_early_return() -> None:
    source = """
    try:
        probe()
    except TypeError:
        probe()

    def new_first():
        if _TORCH_GREATER_EQUAL_2_4:
            return new()
        return probe()

    def old_first():
        if _TORCH_LESS_THAN_2_4:
            return old()
        return probe()
    """
    assert verdicts(source, fallback_only=True) == [False, True, True, False]


def test_in_version_gate_ignores_try_fallbacks() -> None:
    source = """
    if _TORCH_GREATER_EQUAL_2_4:
        probe()
    else:
        probe()
    if sys.version_info >= (3, 11):
        probe()
    try:
        probe()
    except ImportError:
        probe()
    """
    module = cst.parse_module(textwrap.dedent(source))
    ctx = FileContext("t.py", textwrap.dedent(source), module, Settings(rules=()))
    answers = []

    class Probe:
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "probe":
                answers.append((ctx.guards.in_version_gate(node), ctx.guards.in_compat_code(node)))

    Walker([ctx.values, Probe()], ctx.ancestors).walk(module)
    assert answers == [(True, True), (True, True), (True, True), (False, True), (False, True)]
