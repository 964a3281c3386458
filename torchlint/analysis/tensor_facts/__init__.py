"""One model of what is known about the tensors of a file (see `model.py`).

`domain.py` holds the abstract values, `ops.py` the table of how torch functions and tensor
methods transform them, `interpreter.py` the per-function flow-sensitive interpretation, and
`model.py` the lazy, memoized entry point that rules reach as `ctx.tensors`.
"""
