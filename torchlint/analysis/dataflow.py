"""Flow-sensitive local values: what each name was last assigned from, at this point of the walk.

The tracker follows the engine's single traversal. Each function (and class body, lambda,
comprehension) has its own scope. Branches of `if`/`else`, loops (which may run zero or many
times) and `try` blocks are merged conservatively: a name whose value differs between paths
becomes unknown. Values are the assigned expressions themselves (libcst nodes), or the `Param`
node for a function parameter, so that other analyses can classify them.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.names import nested_statement_lists, suite_statements

UNKNOWN = "<unknown>"

_Value = cst.CSTNode | str
_Scope = dict[str, _Value]


def _merge(first: _Scope, second: _Scope) -> _Scope:
    merged = {}
    for name in first.keys() | second.keys():
        value = first.get(name, UNKNOWN)
        merged[name] = value if value is second.get(name, UNKNOWN) else UNKNOWN
    return merged


def target_names(target: cst.BaseExpression) -> list[str]:
    """Every plain name bound by an assignment target (`a`, `(a, b)`, `[a, *b]`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def assigned_names(statements) -> set[str]:
    """Names assigned anywhere in these statements (not inside nested functions or classes)."""
    names: set[str] = set()
    for statement in statements:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        names.update(target_names(target.target))
                elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                    names.update(target_names(small.target))
        elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            names.add(statement.name.value)
        else:
            if isinstance(statement, cst.For):
                names.update(target_names(statement.target))
            if isinstance(statement, cst.With):
                for item in statement.items:
                    if item.asname is not None:
                        names.update(target_names(item.asname.name))
            for nested in nested_statement_lists(statement):
                names |= assigned_names(nested)
    return names


@dataclass
class _Branch:
    """A compound statement being walked: the scope before it and where its first path ended."""

    node: cst.CSTNode
    depth: int
    before: _Scope
    first_path_end: _Scope | None = None


class LocalValues:
    """Answers `value_of(name)`: the expression a local name holds here, or None when unknown."""

    def __init__(self, ancestors: list[cst.CSTNode]) -> None:
        self._ancestors = ancestors
        self._scopes: list[_Scope] = [{}]
        self._branches: list[_Branch] = []

    # Queries -----------------------------------------------------------------------------

    def value_of(self, name: str) -> cst.CSTNode | None:
        value = self._scopes[-1].get(name)
        return None if value is None or value == UNKNOWN else value

    def is_bound(self, name: str) -> bool:
        """True when the current scope assigned `name` (even to an unknown value)."""
        return name in self._scopes[-1]

    def resolve(self, expr: cst.BaseExpression, max_steps: int = 8) -> cst.BaseExpression:
        """Follow plain local names to the expression they were assigned from."""
        seen = 0
        while isinstance(expr, cst.Name) and seen < max_steps:
            value = self.value_of(expr.value)
            if not isinstance(value, cst.BaseExpression):
                break
            expr, seen = value, seen + 1
        return expr

    # Scopes ------------------------------------------------------------------------------

    def _bind(self, name: str, value: _Value) -> None:
        self._scopes[-1][name] = value

    def _push_scope(self, bound: dict[str, _Value]) -> None:
        self._scopes.append(dict(bound))

    def _pop_scope(self) -> None:
        self._scopes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        params = node.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                every.append(star)
        self._push_scope({param.name.value: param for param in every})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop_scope()
        self._bind(node.name.value, UNKNOWN)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        params = node.params
        names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
        self._push_scope({name: UNKNOWN for name in names})

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._pop_scope()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push_scope({})

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._pop_scope()
        self._bind(node.name.value, UNKNOWN)

    def _visit_comprehension(self, node: cst.BaseComp) -> None:
        # The element is walked before its `for` clauses, so bind the loop names up front.
        bound = dict(self._scopes[-1])
        clause = node.for_in
        while clause is not None:
            for name in target_names(clause.target):
                bound[name] = UNKNOWN
            clause = clause.inner_for_in
        self._push_scope(bound)

    def _leave_comprehension(self, node: cst.BaseComp) -> None:
        self._pop_scope()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    # Assignments -------------------------------------------------------------------------

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._bind(target.target.value, node.value)
            else:
                for name in target_names(target.target):
                    self._bind(name, UNKNOWN)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, node.value if node.value is not None else UNKNOWN)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        for name in target_names(node.target):
            self._bind(name, UNKNOWN)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, node.value)

    def leave_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in target_names(node.asname.name):
                self._bind(name, UNKNOWN)

    def _leave_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            while isinstance(bound, cst.Attribute):
                bound = bound.value
            if isinstance(bound, cst.Name):
                self._bind(bound.value, UNKNOWN)

    leave_Import = leave_ImportFrom = _leave_import

    def leave_Del(self, node: cst.Del) -> None:
        for name in target_names(node.target):
            self._scopes[-1].pop(name, None)

    # Branches ----------------------------------------------------------------------------

    def _open_branch(self, node: cst.CSTNode) -> _Branch:
        branch = _Branch(node, len(self._scopes) - 1, dict(self._scopes[-1]))
        self._branches.append(branch)
        return branch

    def _close_branch(self) -> None:
        branch = self._branches.pop()
        current = self._scopes[branch.depth]
        other = branch.first_path_end if branch.first_path_end is not None else branch.before
        self._scopes[branch.depth] = _merge(other, current)

    def _start_second_path(self, owner: cst.CSTNode) -> None:
        branch = self._branches[-1] if self._branches else None
        if branch is None or branch.node is not owner:
            return
        branch.first_path_end = self._scopes[branch.depth]
        self._scopes[branch.depth] = dict(branch.before)

    def visit_If(self, node: cst.If) -> None:
        parent = self._ancestors[-1] if self._ancestors else None
        if isinstance(parent, cst.If) and parent.orelse is node:
            self._start_second_path(parent)
        self._open_branch(node)

    def leave_If(self, node: cst.If) -> None:
        self._close_branch()

    def visit_Else(self, node: cst.Else) -> None:
        parent = self._ancestors[-1] if self._ancestors else None
        if isinstance(parent, cst.If):
            self._start_second_path(parent)

    def _visit_loop(self, node: cst.For | cst.While) -> None:
        self._open_branch(node)
        # A later iteration may see values assigned further down the body.
        for name in assigned_names(suite_statements(node.body)):
            self._bind(name, UNKNOWN)
        if isinstance(node, cst.For):
            for name in target_names(node.target):
                self._bind(name, UNKNOWN)

    def _leave_loop(self, node: cst.For | cst.While) -> None:
        self._close_branch()

    visit_For = visit_While = _visit_loop
    leave_For = leave_While = _leave_loop

    def visit_Try(self, node: cst.Try) -> None:
        self._open_branch(node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        # The exception may have been raised before any assignment of the `try` body.
        branch = self._branches[-1]
        self._scopes[branch.depth] = _merge(branch.before, self._scopes[branch.depth])
        if node.name is not None:
            for name in target_names(node.name.name):
                self._bind(name, UNKNOWN)

    def leave_Try(self, node: cst.Try) -> None:
        self._close_branch()


def comprehension_targets(comprehension: cst.BaseComp) -> set[str]:
    """The names a comprehension's `for` clauses bind."""
    names: set[str] = set()
    clause = comprehension.for_in
    while clause is not None:
        names.update(target_names(clause.target))
        clause = clause.inner_for_in
    return names


def bound_by_comprehension(ancestors: list[cst.CSTNode], name: str) -> bool:
    """`name` is a variable of a comprehension around the node (`[f(x.to(d)) for x in chunks]`):
    another value each time round."""
    return any(isinstance(node, cst.BaseComp) and name in comprehension_targets(node) for node in ancestors)
