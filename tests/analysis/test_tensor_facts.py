"""The tensor-facts model (`torchlint/analysis/tensor_facts/`): domain joins, the op table and the
per-function interpretation, asked at `probe(expr)` calls the way rules ask `ctx.tensors`."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.layouts import Layout
from torchlint.analysis.shape_checks import known_sizes
from torchlint.analysis.tensor_facts.domain import (
    NUMBER, UNKNOWN, Device, DeviceValue, Iterable, ModuleValue, Sequence, TensorFacts, join, unpack,
)
from torchlint.analysis.tensor_facts.ops import FUNCTION_OPS, METHOD_OPS, Rule
from tests.analysis.helpers import walk_with_probe


def probed(source: str) -> list:
    found = []
    walk_with_probe(source, lambda ctx, call: found.append(ctx.tensors.facts(call.args[0].value)))
    return found


def only(source: str):
    [value] = probed(source)
    return value


# Domain ------------------------------------------------------------------------------------


def test_join_keeps_what_both_paths_know() -> None:
    cuda = TensorFacts(device=Device.ACCELERATOR, layout=Layout(3, None, ()), scalar=False)
    target = TensorFacts(device=Device.TARGET, layout=Layout(3, None, ()), scalar=False)
    joined = join(cuda, target)
    assert joined.device is Device.TARGET and joined.rank == 3
    # Placed on one path only: where that path ran, it is on the GPU.
    assert join(cuda, TensorFacts(device=Device.DEFAULT)).device is Device.CONDITIONAL
    assert join(TensorFacts(device=Device.DEFAULT), TensorFacts(device=Device.CPU)).device is Device.UNKNOWN
    assert join(cuda, NUMBER) is UNKNOWN
    assert join(Sequence((cuda, NUMBER)), Sequence((cuda, NUMBER))) == Sequence((cuda, NUMBER))


def test_join_forgets_a_reordering_one_path_did_not_make_but_keeps_the_rank() -> None:
    plain = TensorFacts(layout=Layout(4, None, ()))
    swapped = TensorFacts(layout=Layout(4, None, (("transpose", 1, 2),)))
    assert join(plain, swapped).layout == Layout(4, None, ())
    assert join(TensorFacts(layout=Layout(3, None, ())), swapped).layout is None


def test_unpacking_a_sequence_and_an_iterable() -> None:
    tensor = TensorFacts(device=Device.MODULE)
    assert unpack(Sequence((tensor, NUMBER)), 2) == [tensor, NUMBER]
    assert unpack(Sequence((tensor,)), 2) == [UNKNOWN, UNKNOWN]
    assert unpack(Iterable(tensor), 3) == [tensor] * 3


# Op table ----------------------------------------------------------------------------------


def test_the_table_serves_function_and_method_forms() -> None:
    assert FUNCTION_OPS["permute"].rule is METHOD_OPS["permute"].rule is Rule.REORDER
    assert FUNCTION_OPS["cat"].combines and not METHOD_OPS["to"].combines
    assert "view" not in FUNCTION_OPS and METHOD_OPS["view"].rule is Rule.VIEW
    assert METHOD_OPS["float"].dtype == "float32"


# Interpretation: shapes and layouts --------------------------------------------------------


def test_rank_flows_through_views_matmul_softmax_and_layers() -> None:
    source = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B, T, 4, C // 4).transpose(1, 2)
            k = k.view(B, T, 4, C // 4).transpose(1, 2)
            att = self.drop(F.softmax(q @ k.transpose(-2, -1), dim=-1))
            probe(att)
            probe((att @ q).transpose(1, 2))
    """
    att, merged = probed(source)
    assert att.rank == 4 and att.device is Device.MODULE and not att.layout.reordered
    assert merged.layout.ops == (("transpose", 1, 2),) and merged.layout.base_rank == 4


def test_shape_unpacking_and_size_give_symbolic_sizes() -> None:
    source = """
    import torch
    def f(x: torch.Tensor):
        b, n, c = x.shape
        probe(x)
        probe(x.size(1))
        probe(torch.zeros(b, n).unsqueeze(1))
    """
    x, size, unsqueezed = probed(source)
    assert x.layout == Layout(3, ("b", "n", "c"), ())
    assert size.code == "n"
    assert unsqueezed.layout.candidates()[0][1][2] == "1"


def test_reductions_einsum_cat_stack_and_tuples() -> None:
    source = """
    import torch
    def f():
        x = torch.randn(2, 3, 4)
        probe(x.sum(dim=1))
        probe(x.mean(-1, keepdim=True))
        probe(x.sum())
        probe(torch.einsum("bij,bjk->bik", x, x))
        probe(torch.stack([x, x]))
        probe(torch.cat([x, x], dim=1))
        values, indices = x.max(dim=1)
        probe(indices)
        probe(x.chunk(2, dim=-1))
    """
    summed, kept, total, einsum, stacked, concatenated, indices, chunks = probed(source)
    assert (summed.rank, kept.rank, total.rank, einsum.rank, stacked.rank, concatenated.rank) == (2, 3, 0, 3, 4, 3)
    assert total.scalar is True and indices.dtype == "int64"
    assert isinstance(chunks, Sequence) and len(chunks.items) == 2


# Interpretation: devices -------------------------------------------------------------------


def test_devices_of_factories_moves_and_module_values() -> None:
    source = """
    import torch
    import torch.nn as nn
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(3, 3)
    model.to(device)
    x = torch.ones(4, 3)
    probe(x)
    probe(x.to(device))
    probe(x.cuda().cpu())
    probe(model)
    probe(model(x.to(device)))
    with torch.no_grad():
        probe(model(x.to(device)))
    """
    default, moved, back, model, output, quiet = probed(source)
    assert default.device is Device.DEFAULT and isinstance(default.origin, cst.Call)
    assert moved.device is Device.ACCELERATOR and moved.origin is None
    assert back.device is Device.CPU
    assert (model.device, model.kind) == (Device.ACCELERATOR, "torch.nn.Linear")
    assert output.device is Device.ACCELERATOR and output.requires_grad
    assert not quiet.requires_grad


def test_branches_merge_and_loops_reach_a_fixed_point() -> None:
    source = """
    import torch
    def f(y: torch.Tensor, flag, items):
        if flag:
            y = y.cuda()
        else:
            y = y.to("cuda:1")
        probe(y)
        z = torch.zeros(3)
        for item in items:
            z = z.cuda()
        probe(z)
        w = torch.zeros(3)
        if flag:
            return w
        probe(w)
    """
    after_if, after_loop, after_return = probed(source)
    assert after_if.device is Device.ACCELERATOR
    assert after_loop.device is Device.CONDITIONAL  # zero iterations leave it on the default device
    assert after_return.device is Device.DEFAULT


def test_a_tensor_moved_under_a_test_is_placed_where_the_same_test_holds_again() -> None:
    source = """
    import torch
    def f(model, x, use_cuda):
        x = torch.from_numpy(x)
        if use_cuda:
            x = x.cuda()
        probe(x)
        y = model(x)
        probe(y)
        if use_cuda:
            probe(y)
        else:
            probe(y)
        probe(y if not use_cuda else y.cpu())
        if (use_cuda):
            y = y.cpu()
        probe(y)
    """
    moved, output, where_true, where_false, in_expression, moved_back = probed(source)
    assert moved.device is Device.CONDITIONAL and moved.placed_when == ("use_cuda", True)
    # A model parameter of unknown placement computes where its input is; its caller's grad mode is unknown.
    assert output.device is Device.CONDITIONAL and output.placed_when == ("use_cuda", True)
    assert not output.requires_grad
    assert where_true.device is Device.ACCELERATOR and where_false.device is Device.DEFAULT
    assert not in_expression.device.is_placed
    assert moved_back.device is not Device.CONDITIONAL


def test_nothing_is_on_a_gpu_where_cuda_is_not_available() -> None:
    source = """
    import torch
    class Loss(torch.nn.Module):
        def forward(self, scores):
            if torch.cuda.is_available():
                probe(scores)
            else:
                probe(scores)
    """
    available, absent = probed(source)
    assert available.device is Device.MODULE and absent.device is Device.DEFAULT


def test_module_attributes_buffers_and_submodule_outputs() -> None:
    source = """
    import torch
    import torch.nn as nn

    class Tagger(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lstm = nn.LSTM(8, 8)
            self.register_buffer("positions", torch.arange(n))
            self.mask = torch.triu(torch.ones(n, n), diagonal=1)
            self.scale = nn.Parameter(torch.ones(n))

        def forward(self, x):
            out, (h, c) = self.lstm(x)
            probe(out)
            probe(c)
            probe(self.positions)
            probe(self.mask)
            probe(self.scale)
    """
    out, cell, buffer, plain, parameter = probed(source)
    assert out.device is cell.device is buffer.device is Device.MODULE
    assert plain.device is Device.DEFAULT and plain.origin is not None
    assert parameter.device is Device.MODULE and parameter.requires_grad


def test_same_file_helpers_are_summarized_at_the_call() -> None:
    source = """
    import torch

    def causal_mask(n):
        return torch.triu(torch.ones(n, n))

    def f(n):
        probe(causal_mask(n))
    """
    mask = only(source)
    assert mask.device is Device.DEFAULT and mask.rank == 2
    assert isinstance(mask.origin, cst.Call) and mask.origin.func.value == "causal_mask"


def test_a_helper_chosen_through_a_name_is_summarized_at_the_call() -> None:
    source = """
    import torch

    def float64_steps(n):
        return torch.linspace(0, 1, n, dtype=torch.float64)

    def square_steps(n):
        return torch.linspace(0, 1, n, dtype=torch.float64) ** 2

    def half_steps(n):
        return torch.linspace(0, 1, n, dtype=torch.float16)

    def f(n, kind):
        make = float64_steps if kind == "linear" else square_steps
        probe(make(n))
        any_dtype = make if kind else half_steps
        probe(any_dtype(n))
        probe(kind(n))
    """
    chosen, mixed, unknown = probed(source)
    assert isinstance(chosen, TensorFacts) and chosen.dtype == "float64" and chosen.device is Device.DEFAULT
    assert isinstance(mixed, TensorFacts) and mixed.dtype is None
    assert unknown is UNKNOWN


def test_zero_dim_operands_keep_the_dtype_of_the_dimensioned_one() -> None:
    source = """
    import torch

    def f(n):
        steps = torch.linspace(0, 1, n, dtype=torch.float64)
        scale = torch.tensor(0.5)
        probe(1 - scale)
        probe(steps / (1 - scale))
        probe(steps * torch.ones(n))
    """
    zero_dim, promoted, mixed = probed(source)
    assert zero_dim.scalar is True
    assert promoted.dtype == "float64"
    assert mixed.dtype is None  # float64 with float32, both with dimensions: not followed


def test_dataloader_batches_and_parameters_are_tensors() -> None:
    source = """
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(data, batch_size=4)
    model = torch.nn.Linear(2, 2)
    for i, (x, y) in enumerate(loader):
        probe(x)
    for p in model.parameters():
        probe(p)
    """
    batch, parameter = probed(source)
    assert isinstance(batch, TensorFacts) and not batch.maybe
    assert parameter.requires_grad


def test_conflicts_are_recorded_against_the_factory() -> None:
    source = """
    import torch
    def f(x):
        x = x.cuda()
        mask = torch.ones(4, 4)
        probe(mask)
        return x.masked_fill(mask[:, None] == 0, 0.0)
    """
    conflicts = []

    def ask(ctx, call):
        conflicts.extend(ctx.tensors.conflicts(ctx.tensors.facts(call.args[0].value).origin))

    walk_with_probe(source, ask)
    assert [device for _, device in conflicts] == [Device.ACCELERATOR]


def test_in_place_ops_and_expand_as() -> None:
    source = """
    import torch
    def f(y: torch.Tensor):
        b, n = y.shape
        w = torch.zeros(3).requires_grad_()
        probe(w)
        probe(w.fill_(1.0))
        probe(torch.zeros(3).expand_as(y))
    """
    grad, filled, expanded = probed(source)
    assert grad.requires_grad and filled.requires_grad
    assert expanded.layout.ops[-1][0] == "expand"


def test_a_plain_class_keeps_its_attributes_where_they_were_made() -> None:
    source = """
    import torch.nn as nn
    class Agent:
        def __init__(self):
            self.policy = nn.Linear(4, 2)
        def act(self, state):
            probe(self.policy)
    """
    value = only(source)
    assert (value.device, value.kind) == (Device.DEFAULT, "torch.nn.Linear")


def test_match_cases_and_f_strings_are_interpreted() -> None:
    source = """
    import torch
    def f(x, command):
        x = x.cuda()
        match command:
            case "grow":
                y = torch.zeros(3)
            case _:
                y = torch.ones(3)
        probe(y)
        print(f"{probe(x + 1)}")
    """
    after_match, in_f_string = probed(source)
    assert after_match.device is Device.DEFAULT and after_match.origin is None
    assert in_f_string.device is Device.ACCELERATOR


# Activations: which activation's values a tensor holds ---------------------------------------

SCRIPT_WITH_A_MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, hidden)
        self.out = nn.Linear(hidden, 4)

    def forward(self, x):
        state = torch.zeros(1, len(x), hidden)
        output, _ = self.rnn(x, (state, state))
        probe(state)
        return F.softmax(self.out(output), dim=-1)

    def decode(self, x):
        probs = self.forward(x)
        return probs.argmax(-1), probs

if __name__ == "__main__":
    hidden = 16
    model = Tagger()
    x = torch.randn(3, 2, 8)
    tags, probs = model.decode(x)
    probe(model(x))
    probe(probs[0])
    probe(probs.log())
    probe(torch.log_softmax(x, -1).exp())
"""


def test_an_activation_travels_through_a_models_forward_a_method_and_indexing() -> None:
    _, model_output, indexed, logged, exp_of_log_softmax = probed(SCRIPT_WITH_A_MODEL)
    assert (model_output.activation, indexed.activation, exp_of_log_softmax.activation) == (
        "softmax", "softmax", "softmax")
    assert logged.activation is None


def test_a_method_asked_from_the_top_level_still_sees_the_modules_names() -> None:
    # `model.decode(x)` at the top level asks for `forward` before `hidden = 16` is known to the
    # file's interpretation: a second interpretation answers, and `forward` itself is interpreted
    # with the module's names, so its CPU state still meets the LSTM on the module's device.
    seen = []
    walk_with_probe(SCRIPT_WITH_A_MODEL, lambda ctx, call: seen.append((ctx, ctx.tensors.facts(call.args[0].value))))
    ctx, state = seen[0]
    assert state.layout.base_sizes == ("1", "len(x)", "hidden")
    assert [device for _, device in ctx.tensors.conflicts(state.origin)] == [Device.MODULE]


def test_an_eval_only_softmax_is_no_softmax_output() -> None:
    value = only("""
        import torch.nn as nn
        import torch.nn.functional as F

        class Gated(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                out = self.fc(x)
                if not self.training:
                    out = F.softmax(out, dim=-1)
                return out

        def train(x):
            probe(Gated()(x))
    """)
    assert value.activation is None


def test_a_layer_call_that_raises_gives_an_output_of_unknown_shape() -> None:
    """A Linear given 32 features in place of 8 raises: its output is not (..., 4), nor of the
    input's rank, so no later check reports a consequence of the same mistake."""
    source = """
    import torch
    import torch.nn as nn

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            probe(self.fc(x))
            probe(self.fc(torch.ones(2, 8)))

    Head()(torch.randn(2, 5, 32))
    """
    raised, fitted = probed(source)
    assert raised.layout is None
    assert fitted.layout == Layout(2, ("2", "4"), ())


def test_full_takes_its_sizes_as_a_tuple_and_long_is_int64() -> None:
    source = """
    import torch
    src = torch.randn(8, 15)
    probe(torch.full((src.size(0),), 1, dtype=torch.long))
    probe(torch.full([2, 3], 0.5, dtype=torch.double))
    """
    tokens, filled = probed(source)
    assert tokens.layout == Layout(1, ("8",), ()) and tokens.dtype == "int64"
    assert filled.layout == Layout(2, ("2", "3"), ()) and filled.dtype == "float64"


def test_einsum_outputs_and_written_lists_have_sizes() -> None:
    source = """
    import torch
    q = torch.randn(2, 4, 10, 8)
    k = torch.randn(2, 4, 12, 8)
    probe(torch.einsum("bhqd,bhkd->bhqk", q, k))
    probe(torch.einsum("B H Q D, B H K D -> B H Q K", q, k))
    probe(torch.tensor([[0, 1, 2], [1, 2, 3]]))
    probe(torch.tensor([[0, 1], [2]]))
    """
    scores, spaced, table, ragged = probed(source)
    assert scores.layout == Layout(4, ("2", "4", "10", "12"), ())
    assert spaced.layout == scores.layout and spaced.rank == 4
    assert table.layout == Layout(2, ("2", "3"), ())
    assert ragged.layout is None


def test_split_unflatten_and_outer_have_sizes() -> None:
    source = """
    import torch
    x = torch.randn(4, 96)
    q, k, v = x.split([32, 32, 32], dim=-1)
    a, b = x.split(64, dim=1)
    probe(v)
    probe(b)
    probe(x.unflatten(1, (8, -1)))
    probe(torch.outer(torch.randn(3), torch.randn(5)))
    probe(x.split([32, 32], dim=1))
    """
    last, rest, heads, table, short = probed(source)
    assert last.layout == Layout(2, ("4", "32"), ())
    assert rest.layout == Layout(2, ("4", "32"), ())
    assert heads.layout == Layout(3, ("4", "8", "12"), ())
    assert table.layout == Layout(2, ("3", "5"), ())
    assert not isinstance(short, Sequence) or all(item.layout is None or item.layout.base_sizes is None for item in short.items)


def test_a_short_time_fourier_transform_has_bins_and_frames() -> None:
    source = """
    import torch
    wave = torch.randn(4, 16000)
    probe(torch.stft(wave, 400, 160, window=torch.hann_window(400), return_complex=True))
    probe(wave.stft(512, hop_length=128, center=False, return_complex=True))
    probe(torch.stft(wave, 400, return_complex=False))
    """
    centered, uncentered, pairs = probed(source)
    assert centered.layout == Layout(3, ("4", "201", "101"), ())
    assert uncentered.layout == Layout(3, ("4", "257", "122"), ())
    assert pairs.layout == Layout(4, ("4", "201", "161", "2"), ())


def test_repeats_top_k_gathers_lookups_and_linear_maps_have_sizes() -> None:
    source = """
    import torch
    import torch.nn.functional as F
    x = torch.randn(4, 6, 8)
    w = torch.randn(5, 8)
    probe(x.repeat(2, 1, 1))
    probe(x.tile((2, 1)))
    probe(x.topk(3).values)
    probe(x.argsort(dim=-1))
    probe(torch.gather(x, 2, torch.zeros(4, 6, 1, dtype=torch.long)))
    probe(F.embedding(torch.randint(0, 5, (4, 6)), w))
    probe(F.linear(x, w))
    probe(w.view_as(torch.randn(8, 5)))
    """
    sizes = [value.layout.base_sizes for value in probed(source)]
    assert sizes == [("8", "6", "8"), ("4", "12", "8"), ("4", "6", "3"), ("4", "6", "8"), ("4", "6", "1"),
                     ("4", "6", "8"), ("4", "6", "5"), ("8", "5")]


def test_a_group_norm_keeps_its_input_and_checks_channels_with_its_weights() -> None:
    source = """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine = nn.GroupNorm(4, 8)
            self.plain = nn.GroupNorm(4, 8, affine=False)

        def forward(self, x):
            probe(self.affine(x))
            probe(self.plain(x))

    Block()(torch.randn(2, 16, 5, 5))
    """
    raised, kept = probed(source)
    assert raised.layout is None  # 16 channels against the 8 weights: it raises
    assert kept.layout == Layout(4, ("2", "16", "5", "5"), ())


def test_a_class_built_twice_is_read_once_per_construction() -> None:
    """The file's reading joins `Proj(4, 8)` and `Proj(8, 3)`: neither input nor width is known there. Each
    construction's reading knows its own, and the input its call gives it."""
    source = """
    import torch
    import torch.nn as nn

    class Proj(nn.Module):
        def __init__(self, d_in, d_out):
            super().__init__()
            self.fc = nn.Linear(d_in, d_out)

        def forward(self, x):
            probe(self.fc(x))
            return self.fc(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Proj(4, 8)
            self.b = Proj(8, 3)

        def forward(self, x):
            return self.b(self.a(x))

    Net()(torch.randn(5, 4))
    """
    readings = []

    def read(ctx, call) -> None:
        expr = call.args[0].value
        readings.append(("joined", ctx.tensors.facts(expr).layout))
        for made_at in ctx.tensors.construction_readings():
            readings.append((ctx.module.code_for_node(made_at), ctx.tensors.facts(expr).layout))

    walk_with_probe(source, read)
    assert readings == [
        ("joined", None),
        ("Proj(4, 8)", Layout(2, ("5", "8"), ())),
        ("Proj(8, 3)", Layout(2, ("5", "3"), ())),
    ]


def test_a_factory_given_a_whole_shape_has_its_sizes_not_one_dim() -> None:
    """`torch.zeros(x.size())` is shaped like `x`; of a tensor of unknown shape, its rank is unknown."""
    source = """
    import torch
    x = torch.randn(4, 5)
    shape = x.shape
    probe(torch.zeros(x.size()))
    probe(x.new_zeros(x.shape))
    probe(torch.full(x.shape, 2.0))
    probe(torch.ones(shape))
    probe(torch.zeros(x.size(0)))

    def smoothed(logits):
        probe(logits.new_zeros(logits.size()))
    """
    *whole, one, unknown = probed(source)
    assert [value.layout for value in whole] == [Layout(2, ("4", "5"), ())] * 4
    assert one.layout == Layout(1, ("4",), ())
    assert unknown.layout is None


def test_a_parameter_some_constructions_leave_to_its_default_is_not_what_the_others_pass() -> None:
    source = """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, channels, stride=1):
            super().__init__()
            probe(stride)
            probe(channels)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.keep = Block(8)
            self.down = Block(8, stride=2)

    torch.randn(2, 8)
    """
    stride, channels = probed(source)
    assert stride.code is None  # 1 for one construction, 2 for the other
    assert channels.code == "8"


def test_an_if_on_sizes_this_reading_knows_runs_one_branch() -> None:
    source = """
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, c_in, c_out, stride=1):
            super().__init__()
            self.shortcut = nn.Identity()
            if stride != 1 or c_in != c_out:
                self.shortcut = nn.Conv2d(c_in, c_out, 1, stride=stride)
            elif c_in > 4:
                self.shortcut = nn.ReLU()

        def forward(self, x):
            probe(self.shortcut)

    Block(8, 8)(torch.randn(2, 8, 4, 4))
    """
    assert only(source).kind == "torch.nn.ReLU"


def test_a_view_of_unknown_sizes_leaves_its_minus_one_unknown() -> None:
    """`ys.view(-1)` of a tensor of unknown sizes is 1-D of some size, which a message shows as
    `?`, not as the size `-1`."""
    source = """
    import torch

    def flatten(ys):
        probe(ys.view(-1).unsqueeze(1))
    """
    assert known_sizes(only(source)) == (None, "1")


def test_a_helper_named_for_the_device_answers_where_its_tensor_is() -> None:
    """asteroid's `get_device(wav)` is `wav.device`; `to_device(wav, d)` moves the tensor and
    returns it, no device."""
    source = """
    import numpy as np
    import torch
    from audiolib.utils import get_device, to_device

    def separate(wav: torch.Tensor, array: np.ndarray):
        probe(get_device(wav))
        probe(get_device(torch.from_numpy(array)))
        probe(to_device(wav, "cuda"))
    """
    asked, from_numpy, moved = probed(source)
    assert asked == DeviceValue(Device.INPUT) and from_numpy == DeviceValue(Device.DEFAULT)
    assert not isinstance(moved, DeviceValue)


def test_a_data_transform_module_takes_samples_on_no_known_device() -> None:
    # A Module in a folder of transforms runs on samples where the data pipeline has them.
    source = """
        import torch.nn as nn

        class ZoomBlur(nn.Module):
            def forward(self, img):
                probe(img)
                return img
    """
    found = []
    walk_with_probe(source, lambda ctx, call: found.append(ctx.tensors.facts(call.args[0].value)),
                    path="mylib/transforms/corruption.py")
    [in_transforms] = found
    assert not (isinstance(in_transforms, TensorFacts) and in_transforms.device is Device.MODULE)
    assert only(source).device is Device.MODULE
