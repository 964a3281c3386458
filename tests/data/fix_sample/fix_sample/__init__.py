"""fix_sample: a small image classification package (a hybrid conv/attention network).

Written for torchlint's tests: it holds ordinary PyTorch code with a handful of known pitfalls
that `torchlint check --fix --unsafe-fixes` rewrites.
"""

from fix_sample.models import HybridNet, build_model

__all__ = ["HybridNet", "build_model"]
__version__ = "0.3.1"
