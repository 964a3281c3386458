from torchlint.analysis.cpu_fallback import cpu_fallback_row

_EXAMPLE = '''import torch


class KAN(torch.nn.Module):
    """Example:
        >>> device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        >>> model = KAN(device=device)
    """
'''


def test_a_docstring_example_is_no_fallback() -> None:
    assert cpu_fallback_row(_EXAMPLE) is None


def test_the_fallback_the_file_runs_is_found_after_an_example() -> None:
    source = _EXAMPLE + '\n\nDEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    assert cpu_fallback_row(source) == source.splitlines().index(
        'DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")') + 1
