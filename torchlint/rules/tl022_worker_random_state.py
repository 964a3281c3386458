from __future__ import annotations

import libcst as cst

from torchlint.analysis.module_attributes import self_attribute
from torchlint.analysis.names import argument, keyword_arg, method_name, suite_statements
from torchlint.diagnostics import Severity
from torchlint.reports import RelatedNode
from torchlint.rule import Rule
from torchlint.walker import nodes_in_order

# NumPy generators a dataset may build once and draw from in every worker.
_GENERATORS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"})
# From torch 1.9 each DataLoader worker reseeds NumPy's global generator itself.
_NUMPY_SEEDED_SINCE = (1, 9)


class WorkerRandomState(Rule):
    """
    ## What it does
    Flags NumPy randomness in a `Dataset`'s `__getitem__` (and the methods of the class it
    calls) that repeats across `DataLoader` workers, when the file loads that dataset with
    `num_workers` other than 0 and no `worker_init_fn`:
    - a NumPy generator built once in `__init__` (`self.rng = np.random.default_rng(seed)`) and
      drawn from per item: each worker gets a copy of the same state, on every torch version;
    - NumPy's global functions (`np.random.rand`, `np.random.randint`...), when the project
      supports torch older than 1.9 (`target-torch-version`, or the floor in its metadata):
      those versions did not reseed NumPy in each worker. Newer ones do, so with a newer or
      unknown floor they are not reported.

    ## Why is this bad?
    The workers start as copies of the main process. A generator they all copy yields the
    same numbers in each worker: with 4 workers, every random crop, flip or noise sample comes
    4 times, and the augmentation is a quarter as varied as intended, silently.

    ## Example
    ```python
    class Crops(Dataset):
        def __init__(self, images):
            self.images, self.rng = images, np.random.default_rng(0)

        def __getitem__(self, i):
            return random_crop(self.images[i], self.rng.integers(0, 32))

    loader = DataLoader(Crops(images), batch_size=64, num_workers=4)
    ```

    ## Use instead
    ```python
    def seed_worker(worker_id):
        info = torch.utils.data.get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed % 2**32)

    loader = DataLoader(Crops(images), batch_size=64, num_workers=4, worker_init_fn=seed_worker)
    ```
    or draw with `torch` (`torch.randint`), which each worker reseeds.
    """

    code = "TL022"
    name = "worker-random-state"
    summary = "NumPy randomness in a Dataset repeats across DataLoader workers"
    severity = Severity.WARNING

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Dataset class name -> a DataLoader in the file that runs it in unseeded workers.
        self._loaders: dict[str, cst.Call] = {}
        self._active = "random" in ctx.source and "num_workers" in ctx.source

    def visit_Module(self, node: cst.Module) -> None:
        if not self._active:
            return
        built: dict[str, set[str]] = {}  # `train_set = Crops(...)`: name -> classes
        loaders = []
        for child in nodes_in_order(node):
            if isinstance(child, cst.Assign) and isinstance(child.value, cst.Call) and isinstance(child.value.func, cst.Name):
                for target in child.targets:
                    if isinstance(target.target, cst.Name):
                        built.setdefault(target.target.value, set()).add(child.value.func.value)
            elif self._unseeded_workers(child):
                loaders.append(child)
        for loader in loaders:
            dataset = argument(loader, 0, "dataset")
            if isinstance(dataset, cst.Call) and isinstance(dataset.func, cst.Name):
                self._loaders.setdefault(dataset.func.value, loader)
            elif isinstance(dataset, cst.Name):
                for class_name in built.get(dataset.value, ()):
                    self._loaders.setdefault(class_name, loader)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        loader = self._loaders.get(node.name.value)
        if loader is None:
            return
        methods = {m.name.value: m for m in suite_statements(node.body) if isinstance(m, cst.FunctionDef)}
        if "__getitem__" not in methods:
            return
        generators = self._generators(methods.get("__init__"))
        old_torch = self._numpy_not_reseeded()
        for call in self._item_calls(methods):
            if self._draws_from(call, generators):
                what = f"`self.{self._receiver_attribute(call)}` is built once"
            elif old_torch and (self.ctx.callee(call) or "").startswith("numpy.random."):
                what = "NumPy's global generator is not reseeded in workers before torch 1.9"
            else:
                continue
            self.report(
                call,
                f"{what}: every DataLoader worker draws the same numbers, so augmentations repeat across "
                "workers; seed it per worker in `worker_init_fn` or draw with `torch`",
                related=(RelatedNode(loader, "the workers are started here"),),
            )

    def _unseeded_workers(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, cst.Call) or not (self.ctx.callee(node) or "").endswith("DataLoader"):
            return False
        workers = keyword_arg(node, "num_workers")
        if workers is None or isinstance(workers.value, cst.Integer) and workers.value.value == "0":
            return False
        return keyword_arg(node, "worker_init_fn") is None and not any(arg.star for arg in node.args)

    def _generators(self, init: cst.FunctionDef | None) -> set[str]:
        """`{"rng"}` for `self.rng = np.random.default_rng(...)` in `__init__`."""
        found = set()
        for node in nodes_in_order(init) if init is not None else ():
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call) \
                    and self.ctx.callee(node.value) in _GENERATORS:
                for target in node.targets:
                    name = self_attribute(target.target)
                    if name is not None:
                        found.add(name)
        return found

    def _numpy_not_reseeded(self) -> bool:
        floor = self.ctx.settings.target_torch_version
        return floor is not None and tuple(floor[:2]) < _NUMPY_SEEDED_SINCE

    @staticmethod
    def _item_calls(methods: dict[str, cst.FunctionDef]) -> list[cst.Call]:
        """The calls in `__getitem__` and in the methods of the class it calls (`self.augment(x)`)."""
        reached, calls = ["__getitem__"], []
        for name in reached:
            for node in nodes_in_order(methods[name]):
                if not isinstance(node, cst.Call):
                    continue
                calls.append(node)
                callee = self_attribute(node.func)
                if callee in methods and callee not in reached and callee != "__init__":
                    reached.append(callee)
        return calls

    @staticmethod
    def _receiver_attribute(call: cst.Call) -> str | None:
        return self_attribute(call.func.value) if isinstance(call.func, cst.Attribute) else None

    def _draws_from(self, call: cst.Call, generators: set[str]) -> bool:
        return method_name(call) is not None and self._receiver_attribute(call) in generators
