"""torchlint: a static linter (and runtime checker) for PyTorch pitfalls."""

__version__ = "0.1.0"
