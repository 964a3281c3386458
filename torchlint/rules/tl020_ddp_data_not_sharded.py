from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.names import argument, is_constant_true, keyword_arg
from torchlint.diagnostics import Severity
from torchlint.rule import Rule

_DDP = frozenset({"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"})
_LOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_SAMPLER = frozenset({"torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler"})
# A sampler or a dataset that shards by rank on its own: a sampler of any kind, a rank-aware split.
_EVALUATION_DATA = re.compile(r"val|test|eval", re.I)
_SHARDED_ELSEWHERE = re.compile(r"Sampler\(|split_by_node|shard\(|num_replicas|get_rank\(\)\s*::")


class DdpDataNotSharded(Rule):
    """
    ## What it does
    Flags two ways distributed training feeds every rank the same data:
    - in a file that wraps a model in `DistributedDataParallel`, a `DataLoader(..., shuffle=True)`
      with no `sampler=`, when nothing in the file shards the data (no `DistributedSampler` or other
      sampler, no rank-aware split such as `split_by_node` or `dataset.shard(...)`);
    - a `DistributedSampler` (shuffling, the default) assigned to a name, in a file that runs a
      training loop and never calls `set_epoch(...)`, when the sampler is only given to a
      `DataLoader` (a function it is passed to, or a caller it is returned to, may set the epoch).

    ## Why is this bad?
    `DistributedDataParallel` averages gradients across ranks but does not split the data. Without
    a `DistributedSampler`, each of the N ranks goes through the whole dataset every epoch: an
    epoch costs N times the compute for the value of one, and the effective batch holds near
    duplicates. A `DistributedSampler` shuffles with a seed derived from its epoch: without
    `sampler.set_epoch(epoch)` at the start of each epoch, every epoch sees the same order.

    ## Example
    ```python
    model = DDP(model.to(rank), device_ids=[rank])
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    ```

    ## Use instead
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        ...
    ```
    """

    code = "TL020"
    name = "ddp-data-not-sharded"
    summary = "Distributed training without a DistributedSampler (or without set_epoch): every rank sees the same data"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        source = ctx.source
        self._relevant = "DistributedDataParallel" in source or "DistributedSampler" in source or "DDP" in source
        self._wraps_ddp: bool | None = None
        self._calls: list[cst.Call] = []
        self._samplers: list[tuple[cst.Call, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if not self._relevant:
            return
        callee = self.ctx.callee(node)
        if callee in _LOADER:
            self._check_loader(node)
        elif callee in _SAMPLER:
            self._check_sampler(node)

    def _check_loader(self, node: cst.Call) -> None:
        shuffle = keyword_arg(node, "shuffle")
        if shuffle is None or not is_constant_true(shuffle.value):
            return
        if argument(node, 2, "sampler") is not None or keyword_arg(node, "batch_sampler") is not None:
            return
        if not self._file_wraps_ddp() or _SHARDED_ELSEWHERE.search(self.ctx.source):
            return
        self.report(node, "this file trains with `DistributedDataParallel`, but the loader has no `DistributedSampler`: "
                          "every rank goes through the whole dataset each epoch; pass "
                          "`sampler=DistributedSampler(dataset)` (and drop `shuffle=True`)")

    def _check_sampler(self, node: cst.Call) -> None:
        shuffle = keyword_arg(node, "shuffle")
        if shuffle is not None and not is_constant_true(shuffle.value):
            return
        parent = self.ctx.parent
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return
        dataset = argument(node, 0, "dataset")
        if dataset is not None and _EVALUATION_DATA.search(self.ctx.code_for(dataset)):
            return  # the order of evaluation data does not matter
        self._samplers.append((node, self.ctx.code_for(parent.targets[0].target)))

    def leave_Module(self, node: cst.Module) -> None:
        if not self._samplers or ".set_epoch(" in self.ctx.source or not self.ctx.loops.training_loops():
            return  # set here, or the epochs run elsewhere (a helper that builds loaders)
        for sampler, target in self._samplers:
            if not self._handed_on(target):  # `train(..., sampler=s)`: the function it goes to may set it
                self._report_sampler(sampler, target)

    def _report_sampler(self, node: cst.Call, target: str) -> None:
        self.report(node, f"`{target}` shuffles by epoch, but the file never calls `{target}.set_epoch(epoch)`: every "
                          "epoch sees the same order; call it at the start of each epoch")

    def _handed_on(self, name: str) -> bool:
        """The sampler is an argument of a call other than a DataLoader's, or is returned."""
        mention = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        for call in self._calls:
            if self.ctx.callee(call) in _LOADER:
                continue
            if any(mention.search(self.ctx.code_for(arg.value)) for arg in call.args):
                return True
        # `return sampler` or `return loader, sampler`; not a keyword of that name (`sampler=s`).
        return re.search(rf"return[^\n]*(?<![\w.]){re.escape(name)}(?!\w|\s*=(?!=))", self.ctx.source) is not None

    def leave_Call(self, node: cst.Call) -> None:
        if self._relevant:
            self._calls.append(node)

    def _file_wraps_ddp(self) -> bool:
        if self._wraps_ddp is None:
            self._wraps_ddp = any(
                full in _DDP for _, full in self.ctx.imports.bound_names()
            ) or "DistributedDataParallel(" in self.ctx.source
        return self._wraps_ddp
