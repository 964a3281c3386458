from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.guards import caught_names
from torchlint.analysis.names import (
    dotted_name, keyword_arg, method_named, other_branch, positional_args, suite_statements,
)
from torchlint.analysis.values import string_value
from torchlint.diagnostics import Severity
from torchlint.rule import Rule
from torchlint.walker import every_node, nodes_in_order

# Words in a condition, decorator or guard that show the code knows whether CUDA is there.
_GUARD_WORDS = (
    "cuda", "gpu", "is_available", "device_count", "accelerator", "nccl",
    "is_sm", "sm_at_least", "capability", "hopper", "blackwell",  # GPU generations: `is_sm_at_least_90()`
)
# What a function that works the GPU itself uses: CUDA profiling, CUDA timings, CUDA streams. It
# needs CUDA whatever device it names (`def profile():` of a benchmark script, a loader that copies
# batches on a side stream).
_WORKS_CUDA = re.compile(r"ProfilerActivity\.CUDA|cuda_time|cuda\.Event\(|cuda\.Stream\(|cuda\.stream\(")
# `nn.DataParallel` splits batches over the GPUs it is given, and has none to split over without
# CUDA: a subclass (PyG's, for graph batches) is multi-GPU code whatever device it names.
_SPLITS_OVER_GPUS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
})
# A CPU device written out: `"cpu"`, `torch.device('cpu')`.
_CPU_DEVICE = re.compile(r"""["']cpu["']""")
# Code that runs only when several processes take part: a machine without CUDA (a laptop, CPU-only
# CI) runs one. `if world_size > 1:` or `if dist.is_initialized():`, or after `if world_size == 1:
# return` or `if not is_dist_avail_and_initialized(): return` in the function.
_PROCESS_GROUP = r"(?:\b(?:dist|distributed)\.is_initialized|_avail_and_initialized)\(\)"
_MANY_PROCESSES = re.compile(r"world_size(?:\(\))?\s*(?:>\s*1|!=\s*1|>=\s*2)|" + _PROCESS_GROUP)
_ONE_PROCESS_RETURNS = re.compile(
    r"if\s+(?:[\w.]*world_size(?:\(\))?\s*(?:==|<=)\s*1|not\s+[\w.]*" + _PROCESS_GROUP + r")\s*:\s*return\b")
# A device index compared with -1 or 0 (`if device != -1:`, `if args.gpu >= 0:`): the pre-0.4 way
# to choose between a GPU and the CPU.
_DEVICE_INDEX_TEST = re.compile(r"(?:device|gpu|cuda)\w*\s*(?:!=|==|>=|<=|<|>)\s*-?[01]\b")
# A statement at the top of a test module that skips the whole module.
_MODULE_SKIP = re.compile(r"allow_module_level\s*=\s*True|\bSkipTest\b")
# Libraries that run only on NVIDIA GPUs (TensorRT, CuPy, GPUDirect Storage, the CUDA bindings,
# the CUDA rasterizers of Gaussian splatting, tiny-cuda-nn's fused networks), by their top-level
# package, and NCCL's bindings wherever they live (vLLM's `...pynccl`, `...nccl_engine`): code
# that uses one needs CUDA whatever device it names.
_CUDA_ONLY_PACKAGES = frozenset({
    "tensorrt", "torch_tensorrt", "cupy", "pycuda", "kvikio", "cuda", "nvidia",
    "gsplat", "diff_gaussian_rasterization", "tinycudann",
})
# What a machine without CUDA raises at the first allocation on "cuda", and what catches it all.
_MISSING_CUDA_ERRORS = frozenset({"AssertionError", "RuntimeError", "Exception", "BaseException"})
# What a device object answers without touching a device.
_DEVICE_FIELDS = frozenset({"type", "index"})


def _cuda_only(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in _CUDA_ONLY_PACKAGES or any("nccl" in part for part in parts)


def _handles_missing_cuda(statement: cst.Try) -> bool:
    """A handler of the `try` catches what a machine without CUDA raises: `AssertionError` (torch
    built without CUDA), `RuntimeError` (no GPU found), or any exception."""
    return any((caught := caught_names(handler)) is None or caught & _MISSING_CUDA_ERRORS
               for handler in statement.handlers)


def _leaves_block(body: cst.BaseSuite) -> bool:
    """The suite ends by leaving: `return`, `raise`, `continue` or `break`."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    last = statements[-1] if statements else body if isinstance(body, cst.SimpleStatementSuite) else None
    small = last.body[-1] if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body else None
    return isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _is_cuda_string(expr: cst.BaseExpression) -> bool:
    text = string_value(expr)
    return text is not None and (text == "cuda" or text.startswith("cuda:"))


def _calls(node: cst.CSTNode, name: str) -> bool:
    """Whether `node` calls the function `name`, or hands it to a call that runs it
    (`mp.spawn(name, ...)`, `Thread(target=name)`)."""
    return any(
        isinstance(call, cst.Call) and (
            isinstance(call.func, cst.Name) and call.func.value == name
            or any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in call.args))
        for call in nodes_in_order(node)
    )


class HardcodedCuda(Rule):
    """
    ## What it does
    Flags `.cuda()` calls and `"cuda"` device strings (`device="cuda"`, `.to("cuda")`,
    `torch.device("cuda")`) in code with no availability check or fallback. Off by default: many
    projects only ever run on NVIDIA GPUs.

    Code under `if torch.cuda.is_available():` (or any condition, decorator or guard about CUDA,
    GPUs or a GPU generation: `@skipif(not is_sm_at_least_90())`, or a device index compared
    with -1 or 0: `if device != -1:`, `if args.gpu >= 0:`), `"cuda" if
    torch.cuda.is_available() else "cpu"` or any choice whose other branch is the CPU
    (`torch.device("cpu") if device == torch.device("cpu") else torch.device("cuda", rank)`),
    code in functions or classes named for CUDA or GPUs (`class CUDAAccelerator`, `def to_gpu`)
    or extending `nn.DataParallel` (which splits batches over GPUs, as PyG's does for graphs) or
    wrapping what they are given in one in `__init__` (`self.net = nn.DataParallel(net)`),
    test classes under such a decorator
    (`@unittest.skipIf(not torch.cuda.is_available(), ...)`), private helpers (or helpers in a
    test module) and private methods called only from such guarded code in their file or class,
    or handed to a call there (`mp.spawn(_run_rank, ...)` in a test that needs two GPUs,
    `self.run_subtests(..., self._run_subtest)`), the default of such a helper (or
    of one in a test folder) that every call in the project replaces (`def make_data(...,
    device=torch.device("cuda"))`, always called with `device=`), the default of an override that
    hands it on to the method it overrides (`super().__init__(plans, device)`: the base class's
    default is reported once, where it is written), and test modules that skip
    themselves without CUDA (`pytestmark = pytest.mark.skipif(...)`, or `pytest.skip(...,
    allow_module_level=True)` under such a condition at their top) are not reported. Nor is code
    that needs CUDA whatever device it names: a function or class that uses a library running
    only on NVIDIA GPUs (TensorRT, CuPy, kvikio, pycuda, the CUDA bindings, an NCCL
    communicator, gsplat's rasterizer, tiny-cuda-nn), imported or loaded by name (`cp, _ =
    optional_import("cupy")`), code
    under a condition about NCCL (`if backend == "nccl":`), a function or class that measures or
    drives the GPU itself (CUDA profiler activity, `torch.cuda.Event` timings, `torch.cuda.Stream`:
    a loader that copies batches on a side stream), and a file whose processes talk through NCCL,
    which runs only on CUDA (`dist.init_process_group("nccl")`, `backend="nccl"`), or that imports
    `setGPU` (which picks an NVIDIA GPU, and fails without one): choosing its device at run time
    would not make it run on a CPU. Nor is code that runs only when several
    processes take part (under `if world_size > 1:` or `if dist.is_initialized():`, or in a
    function that returns first `if world_size == 1:` or `if not is_dist_avail_and_initialized():`):
    a machine without CUDA, a laptop or CPU-only CI, runs one. Nor is a
    device object only compared or asked its `type` (`self.device.type ==
    torch.device("cuda").type`): it is made on any machine, and places nothing on the GPU. Nor
    is code whose failure without CUDA is handled: in a `try` whose handler catches it
    (`AssertionError` without a CUDA build, `RuntimeError` without a GPU, `Exception`, or a bare
    `except:`), or after an `if` about CUDA that leaves the block (`if dev.type != "cuda": return
    False`). Nor
    is the `if __name__ == "__main__":` block of a module that another file of the project
    imports: a demo of the library the module is (a block run on a GPU to show its output
    shapes), not the program users run; a script's own `__main__` block is checked.

    ## Why is this bad?
    The script crashes on machines without CUDA (laptops, Apple silicon, CPU-only CI) with
    `AssertionError: Torch not compiled with CUDA enabled`, although the same code would run
    everywhere with a device chosen once.

    ## Example
    ```python
    model = Net().cuda()
    batch = batch.to("cuda")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    batch = batch.to(device)
    ```
    """

    code = "TL305"
    name = "hardcoded-cuda"
    summary = "Hard-coded CUDA device with no availability check or fallback"
    severity = Severity.WARNING
    default_enabled = False

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._guarded_functions: dict[int, bool] = {}
        self._guarded_callers: dict[int, bool] = {}
        self._active = "cuda" in ctx.source
        self._skipped_module: bool | None = None
        self._cuda_only_names: frozenset[str] | None = None
        self._library_users: dict[int, bool] = {}  # by definition: uses a CUDA-only library
        self._needs_cuda: bool | None = None  # the whole file: NCCL, or `import setGPU`

    def visit_Call(self, node: cst.Call) -> None:
        if not self._active:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda" and not self._is_namespace(func.value):
            if self._cuda_signature(node) and self._unguarded(node):
                self.report(node, "`.cuda()` fails on machines without CUDA; move to a `device` chosen with `torch.cuda.is_available()`")
            return
        candidates = []
        device_arg = keyword_arg(node, "device")
        if device_arg is not None:
            candidates.append(device_arg.value)
        if isinstance(func, cst.Attribute) and func.attr.value == "to" or self.ctx.callee(node) == "torch.device" \
                and not self._only_compared():
            candidates.extend(arg.value for arg in positional_args(node)[:1])
        for candidate in candidates:
            if _is_cuda_string(candidate) and self._unguarded(node):
                self.report(
                    candidate,
                    "hard-coded `\"cuda\"` device fails on machines without CUDA; use "
                    "`\"cuda\" if torch.cuda.is_available() else \"cpu\"`",
                )

    def _only_compared(self) -> bool:
        """The device object being visited is only compared or asked its `type`
        (`self.device.type == torch.device("cuda").type`): it is made on any machine and places
        nothing on the GPU."""
        parent = self.ctx.ancestors[-1] if self.ctx.ancestors else None
        if isinstance(parent, cst.Attribute):
            return parent.attr.value in _DEVICE_FIELDS
        return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))

    @staticmethod
    def _cuda_signature(call: cst.Call) -> bool:
        """`Tensor.cuda`/`Module.cuda` arguments: (device=None, non_blocking=False, memory_format)."""
        positional = [arg for arg in call.args if arg.keyword is None]
        keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        return len(positional) <= 1 and keywords <= {"device", "non_blocking", "memory_format"}

    def _is_namespace(self, expr: cst.BaseExpression) -> bool:
        """`torch.cuda` itself (`torch.cuda.synchronize()` is not a `.cuda()` call)."""
        return self.ctx.qualified_name(expr) is not None

    def _unguarded(self, call: cst.Call) -> bool:
        for ancestor, child in self.ctx.enclosing_with_child(call):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)):
                if self._mentions_guard(ancestor.test) or self._falls_back_to_cpu(ancestor, child):
                    return False
            elif isinstance(ancestor, cst.BooleanOperation) and isinstance(ancestor.operator, cst.Or):
                return False  # `get_accelerator() or torch.device("cuda")`: a fallback
            elif isinstance(ancestor, cst.Try) and child is ancestor.body and _handles_missing_cuda(ancestor):
                return False  # `try: probe(torch.device("cuda", i)) except Exception: return False`
            elif isinstance(ancestor, cst.IndentedBlock) and self._left_unless_guarded(ancestor, child):
                return False  # `if dev.type != "cuda": return False` before it
            elif isinstance(ancestor, cst.FunctionDef):
                if self._definition_guarded(ancestor) or self._callers_guarded(ancestor) \
                        or self._default_replaced(ancestor, call) or self._default_passed_to_base(ancestor, call):
                    return False
            elif isinstance(ancestor, cst.ClassDef) and self._definition_guarded(ancestor):
                # `class CUDAAccelerator`: CUDA-specific by design; a test class under
                # `@unittest.skipIf(not torch.cuda.is_available(), ...)`: guarded.
                return False
        return not self._module_guarded() and not self._module_skipped() and not self._file_needs_cuda() \
            and not self.ctx.in_library_demo()

    def _left_unless_guarded(self, block: cst.IndentedBlock, statement: cst.CSTNode) -> bool:
        """An earlier statement of the block leaves it on a condition about CUDA (`if dev.type !=
        "cuda": return False`): the rest runs only where that condition let it."""
        earlier = block.body[:block.body.index(statement)] if statement in block.body else ()
        return any(isinstance(check, cst.If) and self._mentions_guard(check.test) and _leaves_block(check.body)
                   for check in earlier)

    def _falls_back_to_cpu(self, choice: cst.If | cst.IfExp | cst.While, branch: cst.CSTNode) -> bool:
        """`torch.device("cpu") if device.type == "cpu" else torch.device("cuda", rank)`: the other
        branch of the choice the hard-coded device is in is the CPU."""
        other = other_branch(choice, branch)
        return other is not None and _CPU_DEVICE.search(self.ctx.code_for(other)) is not None

    def _definition_guarded(self, definition: cst.FunctionDef | cst.ClassDef) -> bool:
        """Named for CUDA or GPUs, or guarded: a function by a decorator or a check in its body,
        a class by a decorator."""
        if self._names_cuda(definition) or self._uses_cuda_only_library(definition):
            return True
        if isinstance(definition, cst.FunctionDef):
            return self._function_guarded(definition)
        if self._splits_over_gpus(definition):
            return True
        # A class that drives the GPU itself (`torch.cuda.Stream()` in a prefetching loader) needs CUDA.
        return any(self._mentions_guard(decorator) for decorator in definition.decorators) \
            or _WORKS_CUDA.search(self.ctx.code_for(definition.body)) is not None

    def _splits_over_gpus(self, classdef: cst.ClassDef) -> bool:
        """The class extends `nn.DataParallel`, or wraps what it is given in one as its `__init__`
        always does (tianshou's `DataParallelNet`: `self.net = nn.DataParallel(net)`)."""
        if any(self.ctx.qualified_name(base.value) in _SPLITS_OVER_GPUS for base in classdef.bases):
            return True
        initializer = method_named(classdef, "__init__")
        return initializer is not None and any(
            isinstance(small, cst.Assign) and isinstance(small.value, cst.Call)
            and self.ctx.callee(small.value) in _SPLITS_OVER_GPUS
            for line in suite_statements(initializer.body) if isinstance(line, cst.SimpleStatementLine)
            for small in line.body
        )

    @staticmethod
    def _names_cuda(definition: cst.FunctionDef | cst.ClassDef) -> bool:
        name = definition.name.value.lower()
        return "cuda" in name or "gpu" in name

    def _uses_cuda_only_library(self, definition: cst.FunctionDef | cst.ClassDef) -> bool:
        """`cp.cuda.Device(...)`, `trt.Runtime(...)`, `PyNcclCommunicator(...)` in its body."""
        if self._cuda_only_names is None:
            self._cuda_only_names = _names_of_cuda_only_libraries(self.ctx.module)
        if not self._cuda_only_names:
            return False
        key = id(definition)
        if key not in self._library_users:
            # Asked for each enclosing definition of every hard-coded device: walked once each.
            self._library_users[key] = any(
                isinstance(node, cst.Name) and node.value in self._cuda_only_names for node in every_node(definition))
        return self._library_users[key]

    def _mentions_guard(self, node: cst.CSTNode) -> bool:
        text = self.ctx.code_for(node).lower()
        return any(word in text for word in _GUARD_WORDS) or _MANY_PROCESSES.search(text) is not None \
            or _DEVICE_INDEX_TEST.search(text) is not None

    def _function_guarded(self, function: cst.FunctionDef) -> bool:
        """A decorator (`@skipif(not torch.cuda.is_available())`, `@require_torch_gpu`) or a check in the body."""
        key = id(function)
        if key not in self._guarded_functions:
            guarded = any(self._mentions_guard(decorator) for decorator in function.decorators)
            if not guarded:
                body = self.ctx.code_for(function.body)
                guarded = "is_available" in body or "device_count" in body or _WORKS_CUDA.search(body) is not None \
                    or _ONE_PROCESS_RETURNS.search(re.sub(r"\s+", " ", body)) is not None
            self._guarded_functions[key] = guarded
        return self._guarded_functions[key]

    def _callers_guarded(self, function: cst.FunctionDef) -> bool:
        """A module-private helper (or one in a test module) whose every caller in the file is a
        guarded test: `_make_inputs()` called only from tests under `@skipUnless(is_hopper())`;
        or a private method that only guarded methods of its class use (`self.run_subtests(...,
        self._run_subtest)` in a test that skips without CUDA)."""
        key = id(function)
        if key not in self._guarded_callers:
            classdef = self._class_holding(function)
            if classdef is not None:
                guarded = function.name.value.startswith("_") and self._method_users_guarded(classdef, function)
            else:
                guarded = self._private(function) and self._all_callers_guarded(function.name.value)
            self._guarded_callers[key] = guarded
        return self._guarded_callers[key]

    def _class_holding(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        """The class whose body holds `function` as a method."""
        return next((node for node in self.ctx.ancestors if isinstance(node, cst.ClassDef)
                     and any(statement is function for statement in suite_statements(node.body))), None)

    def _method_users_guarded(self, classdef: cst.ClassDef, method: cst.FunctionDef) -> bool:
        name = method.name.value
        users = [
            other for other in suite_statements(classdef.body) if isinstance(other, cst.FunctionDef) and other is not method
            and any(isinstance(node, cst.Attribute) and node.attr.value == name and isinstance(node.value, cst.Name)
                    and node.value.value == "self" for node in every_node(other))
        ]
        return bool(users) and all(self._definition_guarded(user) for user in users)

    def _private(self, function: cst.FunctionDef) -> bool:
        """A top-level helper no user calls: module-private, or serving the tests (in a test
        module, or a module of a test folder: `tests/utils.py`)."""
        is_top_level = any(statement is function for statement in self.ctx.module.body)
        return is_top_level and (function.name.value.startswith("_") or self.ctx.serves_tests)

    def _default_replaced(self, function: cst.FunctionDef, call: cst.Call) -> bool:
        """A parameter's default in a helper that every call in the project replaces:
        `def make_data(..., device=torch.device("cuda"))` always called with `device=`."""
        param = self._enclosing_default(function, call)
        if param is None or not self._private(function):
            return False
        calls = self.ctx.project.calls(function.name.value)
        return bool(calls) and all(call.passed is None or param in call.passed for call in calls)

    def _default_passed_to_base(self, function: cst.FunctionDef, call: cst.Call) -> bool:
        """A default that an override repeats from the method it overrides and hands on to it
        (`def __init__(self, plans, device=torch.device("cuda")): super().__init__(plans, device)`):
        the base class decides the device, and its own default is reported where it is written."""
        param = self._enclosing_default(function, call)
        if param is None or self._class_holding(function) is None:
            return False
        name = function.name.value
        return any(
            isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == name
            and isinstance(node.func.value, cst.Call) and isinstance(node.func.value.func, cst.Name)
            and node.func.value.func.value == "super"
            and any(isinstance(arg.value, cst.Name) and arg.value.value == param for arg in node.args)
            for node in every_node(function.body)
        )

    def _enclosing_default(self, function: cst.FunctionDef, call: cst.Call) -> str | None:
        """The parameter of `function` whose default holds `call`."""
        ancestors = self.ctx.ancestors
        below = next((i for i, node in enumerate(ancestors) if node is function), len(ancestors)) + 1
        chain = [*ancestors[below:], call]
        for param, inner in zip(chain, chain[1:]):
            if isinstance(param, cst.Param):
                return param.name.value if inner is param.default else None
        return None

    def _all_callers_guarded(self, name: str) -> bool:
        verdicts = []
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.ClassDef):
                verdicts.extend(
                    self._definition_guarded(statement) or self._definition_guarded(method)
                    for method in suite_statements(statement.body)
                    if isinstance(method, cst.FunctionDef) and _calls(method, name)
                )
            elif isinstance(statement, cst.FunctionDef):
                if statement.name.value != name and _calls(statement, name):
                    verdicts.append(self._definition_guarded(statement))
            elif _calls(statement, name):
                verdicts.append(False)
        return bool(verdicts) and all(verdicts)

    def _module_skipped(self) -> bool:
        """A test module that skips itself without CUDA: `pytestmark = pytest.mark.skipif(...)`, or
        `if not torch.cuda.is_available(): pytest.skip(..., allow_module_level=True)` at its top."""
        if self._skipped_module is None:
            self._skipped_module = any(self._skips_module(statement) for statement in self.ctx.module.body)
        return self._skipped_module

    def _skips_module(self, statement: cst.CSTNode) -> bool:
        if isinstance(statement, cst.If):
            return self._mentions_guard(statement.test) and _MODULE_SKIP.search(self.ctx.code_for(statement.body)) is not None
        if isinstance(statement, cst.SimpleStatementLine):
            return any(
                isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == "pytestmark" for t in small.targets
                ) and self._mentions_guard(small.value)
                for small in statement.body
            )
        return False

    def _file_needs_cuda(self) -> bool:
        """The file sets up NCCL, CUDA's communication library (`init_process_group("nccl")`,
        `new_group(backend="nccl")`; a backend chosen by a condition is not a plain string), or
        imports `setGPU` at its top, which picks an NVIDIA GPU and fails without one."""
        if self._needs_cuda is None:
            self._needs_cuda = _imports_set_gpu(self.ctx.module) or "nccl" in self.ctx.source and any(
                isinstance(node, cst.Call) and _selects_nccl(node) for node in every_node(self.ctx.module))
        return self._needs_cuda

    def _module_guarded(self) -> bool:
        if self.ctx.enclosing_function() is not None:
            return False
        source = self.ctx.source
        return "is_available" in source or "device_count" in source


def _imports_set_gpu(module: cst.Module) -> bool:
    return any(
        isinstance(small, cst.Import) and any(dotted_name(alias.name) == "setGPU" for alias in small.names)
        for statement in module.body if isinstance(statement, cst.SimpleStatementLine) for small in statement.body
    )


def _selects_nccl(call: cst.Call) -> bool:
    backend = keyword_arg(call, "backend")
    if backend is None and (dotted_name(call.func) or "").endswith("init_process_group"):
        backend = next(iter(positional_args(call)), None)
    return backend is not None and string_value(backend.value) == "nccl"


def _names_of_cuda_only_libraries(module: cst.Module) -> frozenset[str]:
    """The names the file binds to a CUDA-only library, by an import (at any depth) or by an
    optional-import helper given its name (`cp, _ = optional_import("cupy")`)."""
    names = set()
    for node in every_node(module):
        if isinstance(node, cst.Import):
            names.update(_local_name(alias) for alias in node.names if _cuda_only(dotted_name(alias.name) or ""))
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar) and node.module is not None:
            module_name = dotted_name(node.module) or ""
            names.update(_local_name(alias) for alias in node.names
                         if _cuda_only(f"{module_name}.{dotted_name(alias.name)}"))
        elif isinstance(node, cst.Assign) and _imports_by_name(node.value):
            library = string_value(node.value.args[0].value)
            if library is not None and _cuda_only(library):
                target = node.targets[0].target
                first = target.elements[0].value if isinstance(target, (cst.Tuple, cst.List)) and target.elements else target
                names.add(first.value if isinstance(first, cst.Name) else "")
    names.discard("")
    return frozenset(names)


def _imports_by_name(expr: cst.BaseExpression) -> bool:
    """`optional_import("cupy")`, `importlib.import_module("tensorrt")`: a helper that imports
    the module its first argument names."""
    if not isinstance(expr, cst.Call) or not expr.args:
        return False
    helper = dotted_name(expr.func) or ""
    return "import" in helper.rsplit(".", 1)[-1].lower()


def _local_name(alias: cst.ImportAlias) -> str:
    """The name an import binds: its `as` name, or the first part of `import a.b`."""
    if alias.asname is not None:
        return alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else ""
    return (dotted_name(alias.name) or "").split(".")[0]
