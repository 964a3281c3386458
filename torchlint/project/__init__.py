"""Project-wide knowledge: what the other files of the checked file's project define.

summary.py reads one module cheaply (CPython's `ast`, lazily); layout.py finds the project root
and resolves imports like Python; index.py answers the analyses' questions about imported names
(`ctx.project`). See docs/project-wide.md.
"""
