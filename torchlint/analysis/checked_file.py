"""What the analyses read of the file being checked.

`torchlint.context.FileContext` is the one implementation. The analyses name this protocol in
their annotations instead of importing the context, which imports them: analysis never imports
the context, the configuration or the rule modules, not even for type checking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

if TYPE_CHECKING:
    from torchlint.analysis.dataflow import LocalValues
    from torchlint.analysis.modules import ModuleClasses
    from torchlint.analysis.tensor_facts.model import TensorModel
    from torchlint.analysis.values import ValueKinds


class CheckedFile(Protocol):
    source: str
    module: cst.Module
    ancestors: list[cst.CSTNode]
    values: LocalValues
    module_classes: ModuleClasses
    kinds: ValueKinds

    @property
    def tensors(self) -> TensorModel: ...

    def qualified_name(self, expr: cst.BaseExpression) -> str | None: ...

    def code_for(self, node: cst.CSTNode) -> str: ...

    def enclosing_class(self) -> cst.ClassDef | None: ...
