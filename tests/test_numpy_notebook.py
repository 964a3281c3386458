"""TL303 in notebooks: cells run top to bottom like a script, so a model's output is followed."""

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule

SOURCE = """import torch
import torch.nn as nn
device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 2).to(device)
with torch.no_grad():
    out = model(torch.randn(3, 4).to(device))
out.numpy()
out.cpu().numpy()
"""


def test_model_output_on_the_device_is_reported_in_a_notebook() -> None:
    settings = Settings(rules=(get_rule("TL303"),))
    diagnostics = check_source(SOURCE, "explore.ipynb", settings)
    assert [(d.location.row, "on the accelerator" in d.message) for d in diagnostics] == [(7, True)]
