"""Positions of reported nodes, without computing positions for the whole file.

libcst's PositionProvider generates code for the whole module and records a range for every node:
several times the cost of parsing. A finding only needs the range of a few nodes, so this module
regenerates just the innermost statement that holds each one, starting at that statement's line
(found through CPython's `ast`, which parses far faster) with the indentation of its enclosing
blocks. Whenever the statement cannot be mapped with certainty, it falls back to PositionProvider.
"""

from __future__ import annotations

import ast
import functools
from types import SimpleNamespace

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

_AST_TYPES = {
    cst.If: (ast.If,), cst.For: (ast.For, ast.AsyncFor), cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith), cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,), cst.Try: (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
}
_STATEMENT = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


@functools.lru_cache(maxsize=1)
def _python_tree(source: str) -> ast.Module | None:
    """CPython's tree of the file, parsed once for every rule of a check that asks for positions
    (the engine, TL103 and TL302 each keep their own StatementPositions), None where it fails."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _ast_index(statements, position: int) -> int:
    """CPython splits `a; b` into two statements where libcst keeps one line."""
    return sum(len(s.body) if isinstance(s, cst.SimpleStatementLine) else 1 for s in statements[:position])


def _step(chain, k: int, ast_node):
    """From the statement holder chain[k] (and its ast twin), the next statement in the chain:
    (its index in the chain, its ast twin), or None when the shapes do not correspond."""
    holder, child = chain[k], chain[k + 1] if k + 1 < len(chain) else None
    if isinstance(holder, cst.Module):
        return k + 1, holder.body, ast_node.body
    if child is None:
        return None
    if child is getattr(holder, "body", None) and isinstance(child, cst.IndentedBlock):
        return k + 2, child.body, ast_node.body
    if isinstance(child, cst.If) and getattr(holder, "orelse", None) is child:
        return k + 1, [child], ast_node.orelse
    if isinstance(child, cst.Else):
        return k + 3, child.body.body, ast_node.orelse
    if isinstance(child, cst.Finally):
        return k + 3, child.body.body, ast_node.finalbody
    if isinstance(child, cst.ExceptHandler):
        index = list(holder.handlers).index(child)
        return k + 3, child.body.body, ast_node.handlers[index].body
    return None


def _statement_line(chain: list[cst.CSTNode], target: int, tree: ast.Module) -> int | None:
    """The 1-based line where chain[target] (a statement) starts, through the ast twin."""
    k, ast_node = 0, tree
    while k < target:
        step = _step(chain, k, ast_node)
        if step is None:
            return None
        k_next, statements, ast_statements = step
        if k_next > target or k_next >= len(chain):
            return None
        statement = chain[k_next]
        try:
            ast_node = ast_statements[_ast_index(statements, list(statements).index(statement))]
        except (ValueError, IndexError):
            return None
        expected = _AST_TYPES.get(type(statement))
        if isinstance(statement, cst.BaseCompoundStatement) and (expected is None or not isinstance(ast_node, expected)):
            return None
        k = k_next
    decorators = getattr(ast_node, "decorator_list", None)
    return decorators[0].lineno if decorators else ast_node.lineno


def _indents(chain: list[cst.CSTNode], target: int, module: cst.Module) -> list[str]:
    return [
        node.indent if node.indent is not None else module.default_indent
        for node in chain[:target]
        if isinstance(node, cst.IndentedBlock)
    ]


def _without_leading_lines(statement: cst.CSTNode) -> cst.CSTNode:
    statement = statement.with_changes(leading_lines=())
    decorators = getattr(statement, "decorators", ())
    if decorators:
        first = decorators[0].with_changes(leading_lines=())
        statement = statement.with_changes(decorators=(first, *decorators[1:]))
    return statement


def _ancestors(root: cst.CSTNode, target: cst.CSTNode) -> tuple[cst.CSTNode, ...] | None:
    """The nodes from `root` down to `target`'s parent, or None when `target` is not below root."""
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(root, ())]
    while stack:
        node, above = stack.pop()
        if node is target:
            return above
        below = (*above, node)
        stack.extend((child, below) for child in reversed(node.children))
    return None


class StatementPositions:
    """Ranges of nodes, computed one statement at a time."""

    def __init__(self, module: cst.Module, source: str) -> None:
        self._module = module
        self._source = source
        self._tree: ast.Module | None = None
        self._ranges: dict[cst.CSTNode, CodeRange] = {}
        self._done: set[int] = set()
        self._whole_file = False

    def range_of(self, node: cst.CSTNode, chain: tuple[cst.CSTNode, ...]) -> CodeRange:
        if node not in self._ranges:
            path = [*chain, node]
            for target in range(len(path) - 1, 0, -1):
                if isinstance(path[target], _STATEMENT) and self._generate(path, target) and node in self._ranges:
                    break
            else:
                self._generate_whole_file()
        return self._ranges[node]

    def range_of_any(self, node: cst.CSTNode) -> CodeRange:
        """The range of a node found anywhere in the module (not under the walk's current node)."""
        if node not in self._ranges:
            chain = _ancestors(self._module, node)
            if chain is None:
                self._generate_whole_file()
            else:
                return self.range_of(node, chain)
        return self._ranges[node]

    def _generate(self, chain: list[cst.CSTNode], target: int) -> bool:
        statement = chain[target]
        if id(statement) in self._done:
            return True
        if self._tree is None:
            self._tree = _python_tree(self._source)
            if self._tree is None:
                return False
        line = _statement_line(chain, target, self._tree)
        if line is None:
            return False
        module = self._module
        state = PositionProvidingCodegenState(
            default_indent=module.default_indent, default_newline=module.default_newline,
            provider=SimpleNamespace(_computed=self._ranges),
        )
        state.line = line
        state.indent_tokens = _indents(chain, target, module)
        generated = _without_leading_lines(statement)
        holder = chain[target - 1]
        if isinstance(statement, cst.If) and isinstance(holder, cst.If) and holder.orelse is statement:
            generated._codegen(state, is_elif=True)
        else:
            generated._codegen(state)
        self._ranges[statement] = self._ranges.pop(generated)
        self._done.add(id(statement))
        return True

    def _generate_whole_file(self) -> None:
        if not self._whole_file:
            self._ranges.update(MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider))
            self._whole_file = True
