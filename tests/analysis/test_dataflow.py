from __future__ import annotations

import libcst as cst

from tests.analysis.helpers import walk_with_probe


def values_at_probes(source: str, name: str = "x") -> list[str | None]:
    seen: list[str | None] = []

    def record(ctx, call):
        value = ctx.values.value_of(name)
        seen.append(ctx.code_for(value) if isinstance(value, cst.BaseExpression) else None)

    walk_with_probe(source, record)
    return seen


def test_last_assignment_wins_in_order():
    assert values_at_probes("x = a.permute(0, 2, 1)\nprobe()\nx = x.contiguous()\nprobe()\n") == [
        "a.permute(0, 2, 1)", "x.contiguous()",
    ]


def test_if_else_branches_merge_conservatively():
    source = """
x = a.t()
if flag:
    x = b
    probe()
else:
    probe()
probe()
y = 1
if flag:
    y = 2
"""
    assert values_at_probes(source) == ["b", "a.t()", None]


def test_same_value_on_both_paths_is_kept():
    source = "x = a.t()\nif flag:\n    y = 1\nelse:\n    y = 2\nprobe()\n"
    assert values_at_probes(source) == ["a.t()"]


def test_elif_chains():
    source = "if p:\n    x = a\nelif q:\n    x = b\n    probe()\nelse:\n    x = c\n    probe()\nprobe()\n"
    assert values_at_probes(source) == ["b", "c", None]


def test_loops_forget_names_assigned_in_the_body():
    source = "x = a.t()\nfor i in r:\n    probe()\n    x = i\nprobe()\n"
    assert values_at_probes(source) == [None, None]


def test_functions_have_their_own_scope_and_parameters():
    source = "x = a.t()\ndef f(x):\n    probe()\nprobe()\n"
    seen: list = []
    walk_with_probe(source, lambda ctx, call: seen.append(type(ctx.values.value_of("x")).__name__))
    assert seen == ["Param", "Call"]


def test_comprehension_variables_shadow_outer_names():
    assert values_at_probes("x = a.t()\nys = [probe() for x in xs]\nprobe()\n") == [None, "a.t()"]


def test_except_handlers_see_values_from_before_the_try():
    source = "x = a\ntry:\n    x = b\nexcept E:\n    probe()\nprobe()\n"
    assert values_at_probes(source) == [None, None]


def test_resolve_follows_names():
    seen = []
    walk_with_probe(
        "p = F.softmax(z, 1)\nq = p\nprobe(q)\n",
        lambda ctx, call: seen.append(ctx.code_for(ctx.values.resolve(call.args[0].value))),
    )
    assert seen == ["F.softmax(z, 1)"]


def test_assigned_names_sees_every_nested_statement_list():
    from torchlint.analysis.dataflow import assigned_names

    module = cst.parse_module(
        "if a:\n    x = 1\nelif b:\n    y = 2\nelse:\n    z = 3\n"
        "for i in r: w = i\n"
        "try:\n    t = 1\nexcept E:\n    u = 2\nfinally:\n    v = 3\n"
        "def f():\n    hidden = 1\n"
    )
    assert assigned_names(module.body) == {"x", "y", "z", "i", "w", "t", "u", "v", "f"}
