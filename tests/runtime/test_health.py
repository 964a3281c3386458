"""TL603-TL606: silent training bugs planted in a real (tiny) training script, and a look-alike
with the same shapes that stays quiet."""

from conftest import line_of

from torchlint.runtime import run_script

MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.unused = nn.Linear(32, 32)
        self.head = nn.Linear(32, 4)
        self.eval_head = nn.Linear(32, 4)
        self.frozen = nn.Linear(32, 32)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        h = self.encoder(x){cut}
        h = self.frozen(h)
        if not self.training:
            return self.eval_head(h)
        return self.head(h)

model = Net()
{extra}
opt = torch.optim.SGD(model.parameters(), lr=0.01)
images = torch.randint(0, 256, (64, 16), dtype=torch.uint8)
labels = torch.randint(0, 4, (64,))
for step in range(8):
    x = images.float(){scale}
    opt.zero_grad()
    loss = F.cross_entropy({call}, labels)
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    print(model(images.float() / 255).shape)
{after}
"""


def _write(script, **parts):
    defaults = {"cut": "", "extra": "", "scale": " / 255", "call": "model(x)", "after": ""}
    return script(MODEL.format(**{**defaults, **parts}))


def test_planted_training_bugs_are_reported_at_their_lines(script):
    path = _write(
        script, cut=".detach()", scale="", extra="adapter = nn.Linear(4, 4)", call="adapter(model(x))",
        after="opt.zero_grad()\nopt.step()\n",
    )
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 0, report.exception
    found = {(d.code, d.location.row): d.runtime_detail for d in report.diagnostics}
    # The detached encoder, at the line that built it, named by its module path.
    encoder = found[("TL604", line_of(path, "self.encoder = Encoder()"))]
    assert "`encoder` (encoder.fc1.weight" in encoder and "gets no gradient in 8 optimizer steps" in encoder
    assert "never called" in found[("TL604", line_of(path, "self.unused = nn.Linear"))]
    # A layer that gets gradients but is in no optimizer.
    assert "no optimizer" in found[("TL604", line_of(path, "adapter = nn.Linear"))]
    assert "none of its" in found[("TL605", line_of(path, "opt.step()", occurrence=2))]
    assert "0 to 255" in found[("TL606", line_of(path, "adapter(model(x))"))]
    # Frozen on purpose and the eval-only head are not findings; nothing else is reported.
    assert len(found) == 5, found


def test_nan_from_a_too_large_learning_rate_is_reported_once_with_the_step(script):
    path = _write(script, scale="", after="").parent / "train.py"
    source = path.read_text().replace("lr=0.01", "lr=1e12")
    path.write_text(source)
    report = run_script(str(path), [], [], device="cpu")
    non_finite = [d for d in report.diagnostics if d.code == "TL603"]
    assert [(d.location.row, d.runtime) for d in non_finite] == [(line_of(path, "opt.step()"), "confirmed")]
    assert non_finite[0].runtime_detail.startswith("step ") and "first held NaN or Inf" in non_finite[0].runtime_detail


def test_healthy_look_alike_stays_quiet(script):
    # Same model: frozen layer, eval-only head, scaled pixels, every step with gradients; an
    # LBFGS step computes its gradients in the closure.
    path = _write(script, cut="", call="model(x)", after="""
lbfgs = torch.optim.LBFGS(model.head.parameters())
def closure():
    lbfgs.zero_grad()
    out = F.cross_entropy(model(images.float() / 255), labels)
    out.backward()
    return out
lbfgs.step(closure)
""")
    source = path.read_text().replace("        self.unused = nn.Linear(32, 32)\n", "")
    path.write_text(source)
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 0, report.exception
    assert report.diagnostics == []


def test_a_model_trained_by_an_optimizer_since_rebound_is_in_an_optimizer(script):
    # A notebook's cells, or a script that trains a second model: `optimizer` names a new one.
    path = script("""
        import torch
        import torch.nn as nn
        first = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(first.parameters(), lr=0.1)
        for _ in range(5):
            optimizer.zero_grad()
            first(torch.randn(3, 4)).sum().backward()
            optimizer.step()
        second = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(second.parameters(), lr=0.1)
        stray = nn.Linear(2, 1)
        for _ in range(5):
            optimizer.zero_grad()
            stray(second(torch.randn(3, 4))).sum().backward()
            optimizer.step()
    """)
    report = run_script(str(path), [], [], device="cpu")
    assert report.exit_status == 0, report.exception
    assert [(d.code, d.location.row) for d in report.diagnostics] == [("TL604", line_of(path, "stray = nn.Linear"))]


def test_a_gan_with_two_optimizers_finds_the_critic_layer_never_used(script):
    """Two models, two optimizers, and the generator's step backpropagating through the critic:
    the critic's layer that forward() never calls is found, and nothing else is."""
    path = script("""
        import torch
        import torch.nn as nn

        class Critic(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
                self.aux = nn.Linear(16, 4)

            def forward(self, x):
                return self.body(x)

        torch.manual_seed(0)
        generator = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        critic = Critic()
        opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3)
        opt_d = torch.optim.Adam(critic.parameters(), lr=1e-3)
        bce = nn.BCEWithLogitsLoss()
        for step in range(30):
            fake = generator(torch.randn(32, 8))
            opt_d.zero_grad()
            loss_d = bce(critic(torch.randn(32, 2)), torch.ones(32, 1)) + bce(critic(fake.detach()), torch.zeros(32, 1))
            loss_d.backward()
            opt_d.step()
            opt_g.zero_grad()
            bce(critic(fake), torch.ones(32, 1)).backward()
            opt_g.step()
    """)
    for device in ("cpu", "logical:cuda"):
        report = run_script(str(path), [], [], device=device)
        assert report.exit_status == 0, report.exception
        assert [(d.code, d.location.row) for d in report.diagnostics] == [("TL604", line_of(path, "self.aux = nn.Linear"))]
