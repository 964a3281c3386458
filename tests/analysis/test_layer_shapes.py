"""The shape a `torch.nn` layer gives and the input sizes it insists on (`analysis/layer_shapes.py`),
and the example calls that seed `__init__` and `forward` (`tensor_facts/example_calls.py`)."""

from __future__ import annotations

import libcst as cst
import pytest

from torchlint.analysis.layer_shapes import LayerConfig, output
from torchlint.analysis.shape_checks import known_sizes
from tests.analysis.helpers import walk_with_probe


def config(code: str, **sizes: str) -> LayerConfig:
    call = cst.parse_expression(code)
    return LayerConfig(code.split("(")[0].removeprefix("nn."), tuple(sizes.items()), call)


@pytest.mark.parametrize(
    ("layer", "shape", "expected"),
    [
        (config("nn.Linear(32, 64)", in_features="32", out_features="64"), ("B", "10", "32"), ("B", "10", "64")),
        (config("nn.Embedding(100, 16)", num_embeddings="100", embedding_dim="16"), ("4", "7"), ("4", "7", "16")),
        (config("nn.Conv2d(3, 16, 3, padding=1)", in_channels="3", out_channels="16"), ("8", "3", "28", "28"),
         ("8", "16", "28", "28")),
        (config("nn.MaxPool2d(2)"), ("8", "16", "28", "28"), ("8", "16", "14", "14")),
        (config("nn.AdaptiveAvgPool2d(1)", output_size="1"), ("8", "64", "7", "7"), ("8", "64", "1", "1")),
        (config("nn.Flatten()"), ("8", "64", "7", "7"), ("8", "3136")),
        (config("nn.BatchNorm1d(128)", num_features="128"), ("8", "128", "50"), ("8", "128", "50")),
        (config("nn.TransformerEncoderLayer(32, 4)", d_model="32", nhead="4"), ("2", "14", "32"), ("2", "14", "32")),
    ],
)
def test_output_shapes(layer: LayerConfig, shape: tuple, expected: tuple) -> None:
    result = output(layer, shape)
    assert result.shape == expected and result.contradiction is None


def test_a_recurrent_layer_is_time_major_unless_batch_first() -> None:
    time_major = config("nn.LSTM(16, 32)", input_size="16", hidden_size="32")
    assert output(time_major, ("8", "20", "16")).hidden == ("1", "20", "32")  # batch read from dim 1
    batch_first = config("nn.LSTM(16, 32, batch_first=True)", input_size="16", hidden_size="32", batch_first="True")
    assert output(batch_first, ("8", "20", "16")).hidden == ("1", "8", "32")
    both_ways = config("nn.GRU(16, 32, 2, bidirectional=True)", input_size="16", hidden_size="32", num_layers="2",
                       bidirectional="True")
    result = output(both_ways, ("20", "8", "16"))
    assert result.shape == ("20", "8", "64") and result.hidden == ("4", "8", "32")


@pytest.mark.parametrize(
    ("layer", "shape", "dim", "expected", "given"),
    [
        (config("nn.Linear(32, 64)", in_features="32", out_features="64"), ("4", "30"), 1, "32", "30"),
        (config("nn.MultiheadAttention(256, 8)", embed_dim="256", num_heads="8"), ("2", "16", "128"), 2, "256", "128"),
        (config("nn.Conv1d(64, 32, 3)", in_channels="64", out_channels="32"), ("2", "16", "64"), 1, "64", "16"),
        (config("nn.BatchNorm1d(128)", num_features="128"), ("8", "64"), 1, "128", "64"),
    ],
)
def test_contradictions(layer: LayerConfig, shape: tuple, dim: int, expected: str, given: str) -> None:
    contradiction = output(layer, shape).contradiction
    assert (contradiction.dim, contradiction.expected, contradiction.given) == (dim, expected, given)


def test_a_sequential_is_followed_layer_by_layer_and_names_the_layer_that_cannot_fit() -> None:
    first = config("nn.Linear(8, 16)", in_features="8", out_features="16")
    second = config("nn.Linear(32, 1)", in_features="32", out_features="1")
    fitting = LayerConfig("Sequential", (), None, (first, config("nn.ReLU()"), config("nn.Linear(16, 1)",
                                                                                      in_features="16", out_features="1")))
    assert output(fitting, ("4", "8")).shape == ("4", "1")
    result = output(LayerConfig("Sequential", (), None, (first, second)), ("4", "8"))
    assert result.shape is None
    assert (result.contradiction.layer, result.contradiction.sizes, result.contradiction.given) == (second, ("4", "16"), "16")


def test_symbols_never_contradict() -> None:
    linear = config("nn.Linear(d, 64)", in_features="d", out_features="64")
    assert output(linear, ("B", "T", "C")).contradiction is None


def probed_sizes(source: str) -> list:
    found = []
    walk_with_probe(source, lambda ctx, call: found.append(known_sizes(ctx.tensors.facts(call.args[0].value))))
    return found


def test_forward_is_seeded_from_the_example_input_through_a_parent_module() -> None:
    source = """
    import torch
    import torch.nn as nn

    WIDTH = 32

    class Block(nn.Module):
        def __init__(self, width, hidden):
            super().__init__()
            self.up = nn.Linear(width, hidden)

        def forward(self, x):
            probe(x)
            probe(self.up(x))
            return x

    class Net(nn.Module):
        def __init__(self, width, vocab=100):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.block = Block(width, 4 * width)

        def forward(self, tokens):
            return self.block(self.embed(tokens))

    if __name__ == "__main__":
        Net(WIDTH)(torch.randint(0, 100, (2, 7)))
    """
    assert probed_sizes(source) == [("2", "7", "32"), ("2", "7", "128")]


def test_loader_batches_have_the_dataset_rows_and_the_batch_size() -> None:
    source = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    def make_loader(n, batch_size):
        data = TensorDataset(torch.randn(n, 25, 6), torch.randint(0, 4, (n,)))
        return DataLoader(data, batch_size=batch_size)

    for windows, labels in make_loader(64, batch_size=8):
        probe(windows)
        probe(labels)
    """
    assert probed_sizes(source) == [("8", "25", "6"), ("8",)]


def test_two_different_example_shapes_seed_nothing_and_an_annotation_wins() -> None:
    source = """
    import torch
    from jaxtyping import Float
    from torch import Tensor

    def norm(x):
        probe(x)
        return x

    def annotated(x: Float[Tensor, "b 3"]):
        probe(x)
        return x

    norm(torch.randn(4, 3))
    norm(torch.randn(5, 3))
    annotated(torch.randn(4, 3))
    """
    assert probed_sizes(source) == [None, ("b", "3")]


def test_a_model_and_a_loader_passed_to_a_training_function() -> None:
    source = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    FEATURES = ["rooms", "area", "age"]

    class Regressor(nn.Module):
        def __init__(self, n_features, hidden=16):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, x):
            probe(x)
            probe(self.net(x))
            return self.net(x)

    def fit(model, loader):
        for x, y in loader:
            probe(y)
            model(x)

    model = Regressor(len(FEATURES))
    fit(model, DataLoader(TensorDataset(torch.randn(40, 3), torch.randn(40)), batch_size=20))
    """
    assert probed_sizes(source) == [("20", "3"), ("20", "1"), ("20",)]


def test_lightning_example_input_array_seeds_forward() -> None:
    source = """
    import torch
    import torch.nn as nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(28 * 28, 10)
            self.example_input_array = torch.randn(16, 28 * 28)

        def forward(self, x):
            probe(self.fc(x))
            return self.fc(x)
    """
    assert probed_sizes(source) == [("16", "10")]
