"""Site probes: rewrite only the flagged expressions of a file into calls of a probe.

The rewrite works on Python's `ast` and gives every node it creates the location of the node it
replaces, so the compiled code keeps the user's filename, line numbers and columns: tracebacks
and the positions the runtime reads from frames (`co_positions`) are those of the original text.

Three probe forms, chosen from the flagged node (all reach the `__torchlint__` builtin):
- a call `F(args)` becomes `__torchlint__.call(ID, F)(args)`: the probe sees the callee (for a
  method, its receiver is `F.__self__`), the arguments, the result or the exception;
- another expression `e` becomes `__torchlint__.value(ID)(e)`: "reached", then the value;
- an operation `a - b` whose check looks at its operands becomes
  `__torchlint__.operation(ID, "sub")(a, b)`, which computes it with `operator.sub`;
- a statement (or a node that cannot be wrapped) gets `__torchlint__.mark(ID)` inserted before it.
A TL302 site (a host sync) also gets `__torchlint__.iterate(ID)` at the top of the body of the
loop that holds it, so that its syncs are counted per iteration of that loop.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchlint.runtime.checks import check_for
from torchlint.sources import source_rows

PROBE_NAME = "__torchlint__"  # ends with "__", so class bodies do not mangle it


@dataclass(frozen=True)
class Site:
    """A static finding the runtime watches: its id and range (1-based, end exclusive)."""

    id: int
    code: str
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int


def _byte_col(lines: list[str], row: int, column: int) -> int:
    """A 1-based character column -> the 0-based UTF-8 byte offset `ast` uses."""
    if 1 <= row <= len(lines):
        return len(lines[row - 1][: max(column - 1, 0)].encode("utf-8"))
    return max(column - 1, 0)


def _positioned(node: ast.AST) -> bool:
    return hasattr(node, "lineno") and hasattr(node, "end_lineno")


_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _locate(tree: ast.Module, lines: list[str], site: Site) -> tuple[ast.AST, ast.stmt | None, ast.stmt | None] | None:
    """The node a site flags, the statement that holds it and the innermost loop (in the same
    function) whose body holds it."""
    start = (site.row, _byte_col(lines, site.row, site.column))
    end = (site.end_row, _byte_col(lines, site.end_row, site.end_column))
    exact: list[tuple] = []
    starting: list[tuple] = []
    enclosing: ast.stmt | None = None

    def walk(node: ast.AST, statement: ast.stmt | None, loop: ast.stmt | None, depth: int) -> None:
        nonlocal enclosing
        if isinstance(node, ast.stmt):
            statement = node
            if node.lineno <= site.row <= (node.end_lineno or node.lineno):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.lineno == site.row:
                    enclosing = node
        if _positioned(node) and (node.lineno, node.col_offset) == start:
            entry = (depth, node, statement, loop)
            if (node.end_lineno, node.end_col_offset) == end:
                exact.append(entry)
            starting.append(entry)
        if isinstance(node, _SCOPES):
            loop = None
        for child in ast.iter_child_nodes(node):
            inner = node if isinstance(node, _LOOPS) and any(child is s for s in node.body) else loop
            walk(child, statement, inner, depth + 1)

    walk(tree, None, None, 0)

    def pick(entries):
        # Expressions before statements; then the outermost (a method chain's whole call).
        expressions = [e for e in entries if isinstance(e[1], ast.expr)]
        pool = expressions or entries
        calls = [e for e in pool if isinstance(e[1], ast.Call)]
        pool = calls or pool
        return min(pool, key=lambda e: e[0]) if pool else None

    chosen = pick(exact) or pick(starting)
    if chosen is not None:
        return chosen[1], chosen[2], chosen[3]
    if enclosing is not None:
        return enclosing, enclosing, None
    return None


def _place(node: ast.AST, like: ast.AST) -> ast.AST:
    for new in ast.walk(node):
        if not _positioned(new) and isinstance(new, (ast.expr, ast.stmt)):
            new.lineno, new.col_offset = like.lineno, like.col_offset
            new.end_lineno, new.end_col_offset = like.end_lineno, like.end_col_offset
    return node


def _probe_attr(name: str, like: ast.AST) -> ast.expr:
    return _place(ast.Attribute(ast.Name(PROBE_NAME, ast.Load()), name, ast.Load()), like)


# The `operator` function of each binary operator: the same dunder methods, reflected ones included.
_OPERATORS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv", ast.Mod: "mod",
    ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and_", ast.BitOr: "or_", ast.BitXor: "xor",
    ast.LShift: "lshift", ast.RShift: "rshift",
}


class _Rewriter(ast.NodeTransformer):
    def __init__(self, replace: dict[int, int], marks: dict[int, list[int]], loops: dict[int, list[int]],
                 operands: set[int]) -> None:
        self.replace = replace  # id(expression node) -> site id
        self.marks = marks  # id(statement) -> site ids to mark before it
        self.loops = loops  # id(loop statement) -> site ids counting its iterations
        self.operands = operands  # the site ids of operations whose check sees the operands

    def visit(self, node):
        site_id = self.replace.get(id(node))
        counted = self.loops.get(id(node))
        node = super().visit(node)
        if counted:
            first = node.body[0]
            node.body[:0] = [
                _place(ast.Expr(ast.Call(_probe_attr("iterate", first), [ast.Constant(s)], [])), first)
                for s in counted
            ]
        if site_id is not None:
            node = self._wrap(node, site_id, site_id in self.operands)
        if isinstance(node, ast.stmt) and id(node) in self.marks:
            before = [
                _place(ast.Expr(ast.Call(_probe_attr("mark", node), [ast.Constant(s)], [])), node)
                for s in self.marks[id(node)]
            ]
            return [*before, node]
        return node

    @staticmethod
    def _wrap(node: ast.expr, site_id: int, operands: bool) -> ast.expr:
        if operands and isinstance(node, ast.BinOp):
            name = ast.Constant(_OPERATORS[type(node.op)])
            opener = ast.Call(_probe_attr("operation", node), [ast.Constant(site_id), name], [])
            return _place(ast.Call(opener, [node.left, node.right], []), node)
        if isinstance(node, ast.Call):
            callee = ast.Call(_probe_attr("call", node), [ast.Constant(site_id), node.func], [])
            return _place(ast.Call(callee, node.args, node.keywords), node)
        opener = ast.Call(_probe_attr("value", node), [ast.Constant(site_id)], [])
        return _place(ast.Call(opener, [node], []), node)


def _wrappable(node: ast.AST) -> bool:
    if not isinstance(node, ast.expr) or isinstance(node, (ast.Starred, ast.Slice)):
        return False
    ctx = getattr(node, "ctx", None)
    return ctx is None or isinstance(ctx, ast.Load)


def instrument(source: str, filename: str, sites: list[Site]) -> tuple[ast.Module, list[int]]:
    """Parse `source` and probe `sites`; returns the tree and the ids that got a probe."""
    tree = ast.parse(source, filename)
    lines = source_rows(source)
    replace: dict[int, int] = {}
    marks: dict[int, list[int]] = {}
    loops: dict[int, list[int]] = {}
    probed: list[int] = []
    operands: set[int] = set()
    for site in sites:
        found = _locate(tree, lines, site)
        if found is None:
            continue
        node, statement, loop = found
        if site.code == "TL302" and loop is not None:
            loops.setdefault(id(loop), []).append(site.id)
        if _wrappable(node) and id(node) not in replace:
            replace[id(node)] = site.id
            check = check_for(site.code)
            if isinstance(node, ast.BinOp) and check is not None and check.wants_operands:
                operands.add(site.id)
        elif statement is not None:
            marks.setdefault(id(statement), []).append(site.id)
        else:
            continue
        probed.append(site.id)
    tree = _Rewriter(replace, marks, loops, operands).visit(tree)
    return tree, probed


def compile_probed(source: str, filename: str, sites: list[Site]):
    """Code for `source` with its sites probed, compiled under the original filename."""
    tree, probed = instrument(source, filename, sites)
    return compile(tree, filename, "exec", dont_inherit=True), probed
