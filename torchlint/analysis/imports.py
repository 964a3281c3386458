"""Import alias resolution: `F.softmax` is `torch.nn.functional.softmax` after `import torch.nn.functional as F`."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.names import dotted_name


def _module_name(node: cst.BaseExpression | None) -> str:
    return dotted_name(node) if node is not None else ""


# Frameworks with their own automatic differentiation, by top-level package.
_OTHER_AUTOGRADS = ("warp", "jax", "tensorflow", "paddle", "mxnet", "mindspore", "oneflow", "chainer")


class ImportTable:
    """The qualified name behind each local name bound by an import statement in one file."""

    def __init__(self) -> None:
        self._bound: dict[str, str] = {}
        # Answers of `qualified_name` by node (kept, so that its id is not reused), until the next
        # import is added: rules ask about the same nodes many times.
        self._answers: dict[int, tuple[cst.BaseExpression, str | None]] = {}

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        self._answers.clear()
        if isinstance(node, cst.Import):
            self._add_import(node)
        else:
            self._add_import_from(node)

    def _add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None:
                self._bind(alias.asname.name, full)
            else:
                # `import torch.nn.functional` binds `torch`.
                head = full.split(".", 1)[0]
                self._bound[head] = head

    def _add_import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = "." * len(node.relative) + _module_name(node.module)
        for alias in node.names:
            imported = _module_name(alias.name)
            local = alias.asname.name if alias.asname is not None else alias.name
            separator = "" if not module or module.endswith(".") else "."
            self._bind(local, f"{module}{separator}{imported}")

    def _bind(self, target: cst.BaseExpression, full: str) -> None:
        if isinstance(target, cst.Name):
            self._bound[target.value] = full

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        """The imported name an expression refers to, or None when it is not built on an import."""
        found = self._answers.get(id(expr))
        if found is None:
            found = self._answers[id(expr)] = (expr, self._qualified_name(expr))
        return found[1]

    def _qualified_name(self, expr: cst.BaseExpression) -> str | None:
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, dot, rest = dotted.partition(".")
        target = self._bound.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if dot else target

    def imports_module(self, prefix: str) -> bool:
        """True when any import binds `prefix` or something inside it (`torch` for `torch.nn`)."""
        return any(full == prefix or full.startswith(prefix + ".") for full in self._bound.values())

    def other_autograd(self) -> str | None:
        """The framework with an autograd of its own that the file imports, while it imports
        nothing of torch (`import warp as wp`, `import jax`): its `tape.backward(loss)` and
        `optimizer.step()` are that framework's, whose gradients torch's rules know nothing of."""
        if self.imports_module("torch"):
            return None
        heads = {full.split(".", 1)[0] for full in self._bound.values() if not full.startswith(".")}
        return next((framework for framework in _OTHER_AUTOGRADS if framework in heads), None)

    def bound_names(self) -> list[tuple[str, str]]:
        """(local name, the name it imports) for every import of the file."""
        return list(self._bound.items())

    def local_names_for(self, full: str) -> list[str]:
        """The local names bound to exactly `full` (e.g. `F` for `torch.nn.functional`)."""
        return [local for local, bound in self._bound.items() if bound == full]
