"""One traversal of a libcst tree that feeds every analysis and every rule.

libcst's own `visit()` rebuilds each node's children as it goes, which costs about as much as
parsing. This walker only reads the dataclass fields that can hold syntax worth visiting (no
whitespace, parentheses or punctuation), and dispatches each node to the `visit_<Class>` and
`leave_<Class>` methods of the participants that define them.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable, Iterator
from functools import lru_cache

import libcst as cst

_TOKEN_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
        "header", "footer", "trailing_whitespace", "operator", "dot", "equal", "colon",
        "lbracket", "rbracket", "lbrace", "rbrace", "asynchronous", "newline", "arrow",
        "default_comma", "star_tok", "whitespace", "await_whitespace",
    }
)


@lru_cache(maxsize=None)
def _child_fields(node_class: type) -> tuple[str, ...]:
    return tuple(
        f.name
        for f in dataclasses.fields(node_class)
        if f.name not in _TOKEN_FIELDS and not f.name.startswith("whitespace") and _may_hold_nodes(f.type)
    )


def _may_hold_nodes(annotation: object) -> bool:
    """False for a field that holds only text (`Name.value`, `Arg.star`): the leaves of the tree,
    most of its nodes, then cost the walk no attribute reads at all."""
    if isinstance(annotation, type):
        return issubclass(annotation, cst.CSTNode)
    return typing.get_origin(annotation) is not typing.Literal


def _subclasses(root: type) -> set[type]:
    found = set()
    for subclass in root.__subclasses__():
        found.add(subclass)
        found |= _subclasses(subclass)
    return found


# Every libcst node class: an exact-type lookup here is several times cheaper than
# isinstance() against CSTNode, an ABC, on the hottest line of the walk.
_NODE_CLASSES = frozenset(_subclasses(cst.CSTNode))


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of `node` worth visiting, in field order."""
    found = []
    node_classes = _NODE_CLASSES
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        value_type = type(value)
        if value_type in node_classes:
            found.append(value)
        elif value_type is tuple or value_type is list:
            found.extend([item for item in value if type(item) in node_classes])
    return found


def nodes_in_order(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node` in source order, not entering nested functions, classes, lambdas."""
    for child in child_nodes(node):
        yield child
        if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from nodes_in_order(child)


def every_node(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node`, nested functions, classes and lambdas included."""
    for child in child_nodes(node):
        yield child
        yield from every_node(child)


@lru_cache(maxsize=None)
def _handler_names(participant_class: type) -> tuple[tuple[str, str, type], ...]:
    """(method name, 'visit' or 'leave', libcst node class) for each handler a class defines."""
    found = []
    for attribute in dir(participant_class):
        kind, _, node_name = attribute.partition("_")
        node_class = getattr(cst, node_name, None)
        if kind in ("visit", "leave") and isinstance(node_class, type):
            found.append((attribute, kind, node_class))
    return tuple(found)


class Walker:
    """Walks a module once. Participants listed first see a node first and leave it last."""

    def __init__(self, participants: list[object], ancestors: list[cst.CSTNode]) -> None:
        self._visit: dict[type, list] = {}
        self._leave: dict[type, list] = {}
        self._ancestors = ancestors
        for participant in participants:
            for method_name, kind, node_class in _handler_names(type(participant)):
                table = self._visit if kind == "visit" else self._leave
                table.setdefault(node_class, []).append(getattr(participant, method_name))
        for handlers in self._leave.values():
            handlers.reverse()

    def walk(self, module: cst.Module, progress: Callable[[float], None] | None = None) -> None:
        """Walk `module`; `progress(fraction)` after each of its top-level statements, for a
        meter of a file long enough to take seconds."""
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            if progress is None:
                self._walk(module)
            else:
                self._walk_reporting(module, progress)
        finally:
            sys.setrecursionlimit(limit)

    def _walk_reporting(self, module: cst.Module, progress: Callable[[float], None]) -> None:
        """`_walk(module)`, with `progress` told the share of statements walked."""
        for handler in self._visit.get(cst.Module, ()):
            handler(module)
        self._ancestors.append(module)
        statements = module.body
        for done, statement in enumerate(statements):
            progress(done / len(statements))
            self._walk(statement)
        self._ancestors.pop()
        for handler in self._leave.get(cst.Module, ()):
            handler(module)

    def _walk(self, node: cst.CSTNode) -> None:
        node_class = type(node)
        for handler in self._visit.get(node_class, ()):
            handler(node)
        fields = _child_fields(node_class)
        if fields:  # child_nodes(), inlined: this line runs for every node of every file
            ancestors = self._ancestors
            ancestors.append(node)
            node_classes = _NODE_CLASSES
            for name in fields:
                value = getattr(node, name)
                value_type = type(value)
                if value_type in node_classes:
                    self._walk(value)
                elif value_type is tuple or value_type is list:
                    for item in value:
                        if type(item) in node_classes:
                            self._walk(item)
            ancestors.pop()
        for handler in self._leave.get(node_class, ()):
            handler(node)
