"""Loop structure: the training-step events of one iteration, their order, conditions and roles."""

from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.analysis.loops import Kind, LoopAnalysis, Role, is_throttle, role_from_name
from torchlint.config import Settings
from torchlint.context import FileContext
from torchlint.engine import _collect_top_level_imports


def analysis(source: str) -> tuple[LoopAnalysis, cst.Module]:
    module = cst.parse_module(textwrap.dedent(source))
    ctx = FileContext("t.py", module.code, module, Settings(rules=()))
    _collect_top_level_imports(ctx)
    return ctx.loops, module


def describe(source: str, loop_index: int = 0) -> list[str]:
    """`kind target [flags]` for each event of the n-th loop of the file."""
    loops, module = analysis(source)
    iteration = loops.iteration(loops.loops()[loop_index])
    rows = []
    for event in iteration.events:
        flags = [flag for flag, on in (("if", event.conditional), ("throttled", event.throttled),
                                       ("nested", bool(event.loops)), ("via", bool(event.via)),
                                       ("scaled", event.scaled)) if on]
        rows.append(" ".join([event.kind.value, event.target_text or "-", *flags]))
    return rows


def test_events_of_an_iteration_in_evaluation_order() -> None:
    rows = describe(
        """
        import torch
        opt = torch.optim.SGD(params, lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 10)
        for x, y in loader:
            loss = criterion(model(x), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            sched.step()
        """
    )
    assert rows == [
        "zero_grad opt",
        "scaler.scale loss",
        "backward loss scaled",
        "scaler.unscale_ opt",
        "clip -",
        "optimizer step opt",
        "scaler.update -",
        "scheduler step sched",
    ]


def test_conditions_throttles_and_nested_loops() -> None:
    source = """
        for epoch in range(3):
            for i, batch in enumerate(loader):
                loss.backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                elif flag:
                    optimizer.zero_grad()
            scheduler.step()
        """
    assert describe(source) == [
        "backward loss nested",
        "optimizer step optimizer if throttled nested",
        "zero_grad optimizer if throttled nested",
        "zero_grad optimizer if nested",
        "scheduler step scheduler",
    ]
    loops, _ = analysis(source)
    inner = loops.iteration(loops.loops()[1])
    step, zero, other_zero = inner.events[1], inner.events[2], inner.events[3]
    assert step.exclusive_with(other_zero) and not step.exclusive_with(zero)


def test_calls_to_functions_and_methods_of_the_file_are_followed() -> None:
    source = """
        def clear(net):
            for p in net.parameters():
                p.grad = None

        def step(loss):
            loss.backward()
            optimizer.step()
            clear(model)

        class Trainer:
            def one(self, batch):
                self.optimizer.zero_grad()
                self.loss(batch).backward()
                self.optimizer.step()

            def fit(self, loader):
                for batch in loader:
                    self.one(batch)

        for batch in loader:
            step(loss_of(batch))
        """
    loops, _ = analysis(source)
    assert describe(source, 1) == [
        "zero_grad self.optimizer via",
        "backward - via",
        "optimizer step self.optimizer via",
    ]
    assert describe(source, 2) == ["backward loss via", "optimizer step optimizer via", "zero_grad - nested via"]
    # The loop inside `clear` alone is no training loop.
    assert [type(it.owner).__name__ for it in loops.training_loops()] == ["For", "For"]


def test_recursion_and_unrun_bodies_are_safe() -> None:
    rows = describe(
        """
        def again(n):
            optimizer.zero_grad()
            again(n - 1)

        for batch in loader:
            def closure():
                loss.backward()
            callback = lambda: optimizer.step()
            again(3)
        """
    )
    assert rows == ["zero_grad optimizer via"]


def test_roles_from_creation_and_from_names() -> None:
    loops, module = analysis(
        """
        import torch
        from transformers import get_scheduler
        from torch.cuda.amp import GradScaler
        self.optimizer = torch.optim.AdamW(params)
        warmup = get_scheduler("linear", optimizer)
        keeper = GradScaler()
        mystery = make_it()
        """
    )
    expr = cst.parse_expression
    assert loops.role(expr("self.optimizer")) is Role.OPTIMIZER
    assert loops.role(expr("warmup")) is Role.SCHEDULER
    assert loops.role(expr("keeper")) is Role.SCALER
    assert loops.role(expr("mystery")) is None
    assert loops.role(expr("optimizers[0]")) is Role.OPTIMIZER
    assert [role_from_name(n) for n in ("opt", "opt_g", "optD", "d_optim", "options", "env", "lr_scheduler", "grad_scaler")] == [
        Role.OPTIMIZER, Role.OPTIMIZER, Role.OPTIMIZER, Role.OPTIMIZER, None, None, Role.SCHEDULER, Role.SCALER
    ]


def test_step_calls_that_are_not_optimizer_steps() -> None:
    rows = describe(
        """
        for t in range(100):
            obs, reward, done, info = env.step(action)
            latents = self.scheduler.step(noise, t, latents).prev_sample
            model_engine.backward(loss)
            model_engine.step()
            MyFunction.backward(ctx, grad)
        """
    )
    assert rows == ["scheduler step self.scheduler", "backward loss"]


def test_throttle_conditions() -> None:
    throttles = ["step % 10 == 0", "(i + 1) % accum == 0", "not step % log_every", "last or i % n == 0"]
    others = ["step > 10", "'%d' % x", "accelerator.sync_gradients", "flag"]
    assert all(is_throttle(cst.parse_expression(text)) for text in throttles)
    assert not any(is_throttle(cst.parse_expression(text)) for text in others)


def test_files_without_training_calls_have_no_training_loops() -> None:
    loops, _ = analysis(
        """
        for x in data:
            total += x
        """
    )
    assert loops.training_loops() == [] and loops.step_functions() == []
    assert loops.iteration(loops.loops()[0]).events == ()


def test_needs_grad_and_step_functions() -> None:
    source = """
        import torch
        def attack(x):
            x.requires_grad_()
            g, = torch.autograd.grad(model(x).sum(), x)
            return x + g.sign()

        def update(loss):
            loss.backward()
            opt.step()

        for x in loader:
            model(attack(x))
        """
    loops, _ = analysis(source)
    iteration = loops.iteration(loops.loops()[0])
    assert iteration.needs_grad and not iteration.is_training_step
    assert [it.owner.name.value for it in loops.step_functions()] == ["update"]


def test_noise_scheduler_files_are_not_scanned_for_training_steps() -> None:
    loops, _ = analysis(
        """
        def __call__(self, latents, timesteps):
            for t in timesteps:
                latents = self.scheduler.step(self.unet(latents, t), t, latents).prev_sample
            return latents
        """
    )
    assert loops.training_loops() == [] and loops.step_functions() == []


def test_element_walks() -> None:
    from torchlint.analysis.loops import element_walk

    def walk_of(header: str) -> tuple[list[str], list[tuple[str, str | None]], str | None] | None:
        loop = cst.parse_statement(f"{header}\n    pass\n")
        found = element_walk(loop.target, loop.iter)
        if found is None:
            return None
        code = cst.Module([]).code_for_node
        elements = [(name, None if source is None else code(source)) for name, source in found.elements]
        return [code(source) for source in found.sources], elements, None if found.mapping is None else code(found.mapping)

    assert walk_of("for row in t:") == (["t"], [("row", "t")], None)
    assert walk_of("for i in range(len(t)):") == (["t"], [], None)
    assert walk_of("for i in range(t.size(0)):") == (["t"], [], None)
    assert walk_of("for i in range(x.shape[0]):") == (["x"], [], None)
    assert walk_of("for i, row in enumerate(self.w):") == (["self.w"], [("row", "self.w")], None)
    assert walk_of("for a, b in zip(t, u):") == (["t", "u"], [("a", "t"), ("b", "u")], None)
    assert walk_of("for p in model.parameters():") == ([], [("p", None)], None)
    assert walk_of("for name, p in self.net.named_parameters():") == ([], [("p", None)], None)
    assert walk_of("for k, v in model.state_dict().items():") == ([], [("v", None)], None)
    assert walk_of("for k, v in metrics.items():") == ([], [("v", "metrics")], "metrics")
    assert walk_of("for v in logs.values():") == ([], [("v", "logs")], "logs")
    assert walk_of("for i in range(10):") is None
    assert walk_of("for a in range(0, n, 2):") is None
    assert walk_of("for k in metrics.keys():") is None


def test_enclosing_loops_from_the_walk() -> None:
    from torchlint.analysis.loops import enclosing_loops
    from torchlint.walker import Walker

    module = cst.parse_module(
        textwrap.dedent(
            """
            for epoch in range(3):
                for step, batch in enumerate(probe("iterable")):
                    if step % 10 == 0:
                        probe("throttled")
                    else:
                        probe("every step")
                    def helper():
                        probe("own function")
            """
        )
    )
    seen = {}

    class Probe:
        def __init__(self, ancestors):
            self.ancestors = ancestors

        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value == "probe":
                seen[node.args[0].value.evaluated_value] = len(enclosing_loops(self.ancestors))

    ancestors: list = []
    Walker([Probe(ancestors)], ancestors).walk(module)
    assert seen == {"iterable": 1, "throttled": 2, "every step": 2, "own function": 0}


def test_gradients_cleared_or_written_by_hand() -> None:
    rows = describe(
        """
        for batch in loader:
            for p in params:
                p.grad = None
                p.grad.data.zero_()
                del p.grad
                p.grad = torch.zeros_like(p)
                p.grad.copy_(g)
                p.grad.mul_(0.5)
        """
    )
    assert rows == ["zero_grad - nested", "zero_grad - nested", "zero_grad - nested", "grad set - nested", "grad set - nested"]


def test_epoch_loops_run_no_step_of_their_own() -> None:
    loops, _ = analysis(
        """
        def train_epoch(loader):
            for x, y in loader:
                loss = model(x)
                loss.backward()
                opt.step()

        for epoch in range(3):
            for x, y in loader:
                model(x).backward()
            train_epoch(loader)

        for step in range(100):
            train_epoch(loader)
            loss = step_once()
            loss.backward()
        """
    )
    steps = [loops.iteration(loop).steps_each_iteration for loop in loops.loops()]
    trains = [loops.iteration(loop).is_training_step for loop in loops.loops()]
    assert trains == [True, True, True, True]
    assert steps == [True, False, True, True]
