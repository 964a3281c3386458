from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import first_parameter, registration_of, self_attribute


def call(code: str) -> cst.Call:
    return cst.parse_expression(code)  # type: ignore[return-value]


def test_registration_of() -> None:
    assert registration_of(call('self.register_buffer("mask", m)')) == ("register_buffer", "mask")
    assert registration_of(call("self.register_parameter('w', p)")) == ("register_parameter", "w")
    assert registration_of(call('self.add_module(f"layer{i}", m)')) == ("add_module", None)
    assert registration_of(call('setattr(self, "head", m)')) == ("setattr", "head")
    assert registration_of(call("setattr(self, name, m)")) == ("setattr", None)
    assert registration_of(call("self.forward(x)")) is None


def test_self_attribute_and_first_parameter() -> None:
    assert self_attribute(cst.parse_expression("self.x")) == "x"
    assert self_attribute(cst.parse_expression("this.x"), "this") == "x"
    assert self_attribute(cst.parse_expression("self.x.y")) is None
    assert self_attribute(cst.parse_expression("other.x")) is None
    function = cst.parse_module("def f(me, a):\n    pass\n").body[0]
    assert first_parameter(function) == "me"  # type: ignore[arg-type]
    assert first_parameter(None) is None


def test_first_parameter_counts_positional_only_parameters():
    import libcst as cst

    from torchlint.analysis.module_attributes import first_parameter

    function = cst.parse_statement("def forward(this, /, x):\n    pass\n")
    assert first_parameter(function) == "this"
    assert first_parameter(cst.parse_statement("def forward(self, x):\n    pass\n")) == "self"
    assert first_parameter(cst.parse_statement("def make():\n    pass\n")) is None
