"""Precision of every rule on expert library code, from findings judged by reading them.

Usage: python benchmarks/precision.py [--cache DIR] [--judged FILE] [--per-rule N] [--library NAME==VERSION ...]
       python benchmarks/precision.py --held-out 1|...|30 [--cache DIR]

Downloads the pinned wheels (`pip download --no-deps`; needs a package index) into the cache
directory, unpacks them, and runs `torchlint check --select ALL` on each. From each rule's
findings it samples up to N (the ones whose key hashes lowest: a finding stays in the sample while
others come and go), and appends those not yet judged to the judged file with the verdict `?`.
Judge them by reading the code: `true` (a real problem an expert would fix), `false` (wrong in
this context) or `debatable` (true, but no expert would change the code), with a line of why.

It prints, per rule and overall, the findings (and how many of them are notes), the judged ones
still found, and precision = true / (true + false), with the debatable share beside it; the
last row counts the alarms alone (errors and warnings), leaving out the notes. Judged findings that the
current version no longer reports are counted as gone (a false one that went is a fixed false alarm).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from wheels import PINNED, unpacked

# The libraries the precision issue was measured on: the team never tuned on these.
LIBRARIES = (
    "accelerate==1.15.0", "fairseq2==0.8.1", "kornia==0.9.0", "peft==0.21.2", "speechbrain==1.1.2",
    "torch_geometric==2.8.1", "torchao==0.18.0", "torchaudio==2.11.0", "torchmetrics==1.9.0",
    "torchtune==0.6.1", "torchvision==0.29.1",
)
JUDGED = Path(__file__).with_name("precision_library_judgments.tsv")
# Held-out sets: each was judged once before any change was made for it (its first figures are
# the unseen ones), then kept to catch regressions. Their judgments share one file.
HELD_OUT = {
    "1": ("monai==1.6.1", "pyro-ppl==1.9.2", "ultralytics==8.4.190", "sentence-transformers==6.2.0"),
    "2": ("gpytorch==1.15.2", "pytorch-metric-learning==2.9.0", "torchrl==0.14.1", "mmengine==0.10.7"),
    "3": ("lightly==1.6.0", "torchgeo==0.8.1", "pytorch-forecasting==1.8.0", "flair==0.15.1"),
    "4": ("fastai==2.8.12", "botorch==0.18.1", "pytorch-ignite==0.5.5", "segmentation-models-pytorch==0.6.0"),
    "5": ("captum==0.9.0", "opacus==1.6.0", "open_clip_torch==3.3.0", "pykeen==1.11.1"),
    "6": ("skorch==1.4.0", "sbi==0.27.0", "pytorch-tabnet==4.1.0", "neuralforecast==3.3.0"),
    "7": ("pytorch-widedeep==1.7.0", "avalanche-lib==0.6.0", "e3nn==0.6.0", "piq==0.8.0"),
    "8": ("stable-baselines3==2.9.2", "pytorch-tabular==1.2.0", "asteroid==0.7.0", "pyannote.audio==4.0.7"),
    "9": ("trl==1.16.0", "gluonts==0.17.0", "demucs==4.1.0", "torchsde==0.2.6"),
    "10": ("schnetpack==2.1.1", "mace-torch==0.3.16", "torch-audiomentations==0.12.0", "segment-anything==1.0"),
    "11": ("catalyst==22.4", "poutyne==1.19.0", "tsai==1.0.1", "lightning-bolts==0.7.0"),
    "12": ("composer==0.32.1", "torchtnt==0.2.4", "pytorch-accelerated==0.1.61", "torchani==2.9.0"),
    "13": ("tianshou==2.0.1", "ogb==1.3.6", "openunmix==1.3.0", "rl-games==1.6.5"),
    "14": ("nnunetv2==2.8.1", "d3rlpy==2.8.1", "snntorch==1.0.0", "chemprop==2.3.1"),
    "15": ("k-diffusion==0.1.1.post1", "torch-pruning==1.6.1", "torchio==1.2.1", "zuko==1.6.0"),
    "16": ("torch-uncertainty==0.13.0", "pytorch-ood==0.4.0", "laplace-torch==0.3", "denoising-diffusion-pytorch==2.3.4"),
    "17": ("fair-esm==2.0.0", "spikingjelly==2.0.0", "torchdyn==1.0.6", "x-transformers==2.31.10"),
    "18": ("sb3-contrib==2.9.2", "imitation==1.0.1", "torchensemble==0.2.0", "recbole==1.2.1"),
    "19": ("yolov5==7.0.14", "libauc==2.0.1", "allennlp==2.10.1", "vector-quantize-pytorch==1.32.0"),
    "20": ("neuralprophet==0.9.0", "mmsegmentation==1.2.2", "lightautoml==0.4.2", "vocos==0.1.0"),
    "21": ("deepctr-torch==0.3.0", "torchattacks==3.5.1", "mmdet==3.3.0", "torchkge==0.17.7"),
    "22": ("espnet==202511", "torchtext==0.18.0", "torchxrayvision==1.5.7", "torchdiffeq==0.2.5"),
    "23": ("litgpt==0.5.13", "neuraloperator==2.0.0", "pytorch-pfn-extras==0.9.0", "escnn==1.0.11"),
    "24": ("mmpretrain==1.2.0", "pytorch-toolbelt==0.8.0", "torch-fidelity==0.4.0", "pykan==0.2.8"),
    "25": ("effdet==0.4.1", "geomloss==0.3.1", "torch-optimizer==0.3.0", "torchcde==0.2.5"),
    "26": ("torchrec==1.9.2", "tensordict==0.15.3", "llmcompressor==0.14.0.1", "optimum==2.3.0"),
    "27": ("stanza==1.15.0", "pfrl==0.1.0", "deepxde==1.15.0", "darts==0.48.1"),
    "28": ("super-gradients==3.7.1", "basicsr==1.3.3.3", "pytorch-adapt==0.0.83", "torchmd-net==2.4.10"),
    "29": ("nerfstudio==1.1.5", "skrl==2.1.1", "fairchem-core==2.24.0", "gliner==0.2.29"),
    "30": ("sample-factory==2.1.1", "unsloth==2026.10.9", "matgl==4.1.2", "chronos-forecasting==2.3.2"),
}
HELD_OUT_JUDGED = Path(__file__).with_name("precision_held_out_judgments.tsv")
HELD_OUT_PER_RULE = 6
VERDICTS = ("true", "false", "debatable")
HEADER = "# library\tpath:row\tcode\tverdict\twhy (message as reported, for findings still to judge)\n"


@dataclass(frozen=True)
class Finding:
    library: str
    place: str  # path:row inside the unpacked wheel
    code: str
    message: str
    severity: str = "warning"

    @property
    def key(self) -> tuple[str, str, str]:
        return self.library, self.place, self.code


def findings_of(library: str, root: Path) -> list[Finding]:
    completed = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--select", "ALL", "--no-cache", "--exit-zero",
         "--output-format", "json", "."],
        cwd=root, capture_output=True, text=True,
    )
    if completed.returncode != 0:
        raise SystemExit(f"torchlint failed on {library}: {completed.stderr.strip()[-500:]}")
    return [
        Finding(library, f"{Path(item['filename']).resolve().relative_to(root.resolve())}:{item['location']['row']}",
                item["code"], item["message"], item["severity"])
        for item in json.loads(completed.stdout)
    ]


def sample(findings: list[Finding], per_rule: int) -> list[Finding]:
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_rule[finding.code].append(finding)
    chosen = []
    for code in sorted(by_rule):
        ranked = sorted(by_rule[code], key=lambda f: hashlib.sha1("\t".join(f.key).encode()).hexdigest())
        chosen.extend(ranked[:per_rule])
    return chosen


def read_judged(path: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    judged = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#") or not line.strip():
                continue
            library, place, code, verdict, why = (line.split("\t") + [""] * 5)[:5]
            judged[(library, place, code)] = (verdict, why)
    return judged


def append_unjudged(path: Path, chosen: list[Finding], judged: dict) -> int:
    new = [finding for finding in chosen if finding.key not in judged]
    if new:
        with path.open("a", encoding="utf-8") as out:
            if path.stat().st_size == 0:
                out.write(HEADER)
            for finding in new:
                out.write("\t".join((*finding.key, "?", finding.message.replace("\t", " "))) + "\n")
    return len(new)


def report(findings: list[Finding], judged: dict) -> None:
    """Per rule, then for all findings and for the alarms alone (errors and warnings: notes are
    advice about working code, shown but never failing a run)."""
    found = Counter(finding.code for finding in findings)
    notes = Counter(finding.code for finding in findings if finding.severity == "note")
    severity = {finding.key: finding.severity for finding in findings}
    read = {finding.library for finding in findings}
    verdicts: dict[str, Counter] = defaultdict(Counter)
    alarms: Counter = Counter()
    gone: Counter = Counter()
    for key, (verdict, _) in judged.items():
        if key in severity:
            verdicts[key[2]][verdict] += 1
            if severity[key] != "note":
                alarms[verdict] += 1
        elif verdict in VERDICTS and key[0] in read:  # a judged file may hold other libraries' findings
            gone[f"{key[2]} {verdict}"] += 1
    print(f"{'code':7} {'found':>6} {'notes':>6} {'judged':>7} {'true':>5} {'false':>6} {'debat.':>7} {'precision':>10}")
    total: Counter = Counter()
    for code in sorted(found):
        counts = verdicts[code]
        total.update(counts)
        _row(code, found[code], notes[code], counts)
    _row("all", sum(found.values()), sum(notes.values()), total)
    _row("alarms", sum(found.values()) - sum(notes.values()), 0, alarms)
    if gone:
        print("judged findings no longer reported: " + ", ".join(f"{n} {k}" for k, n in sorted(gone.items())))


def _row(code: str, found: int, notes: int, counts: Counter) -> None:
    judged = sum(counts[v] for v in VERDICTS)
    decided = counts["true"] + counts["false"]
    precision = f"{counts['true'] / decided:.2f}" if decided else "-"
    debatable = f" ({counts['debatable'] / judged:.0%} debatable)" if judged else ""
    print(f"{code:7} {found:6} {notes:6} {judged:7} {counts['true']:5} {counts['false']:6} {counts['debatable']:7} "
          f"{precision:>10}{debatable}" + (f"  {counts['?']} to judge" if counts["?"] else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "torchlint-precision")
    parser.add_argument("--judged", type=Path)
    parser.add_argument("--per-rule", type=int, help="findings sampled per rule and library set (8; held out: 6)")
    parser.add_argument("--library", action="append", metavar="NAME==VERSION",
                        help="a pinned library to read, instead of the default ones")
    parser.add_argument("--held-out", choices=sorted(HELD_OUT), metavar="N",
                        help="read held-out set N (judged in precision_held_out_judgments.tsv) instead")
    args = parser.parse_args()
    held_out = HELD_OUT.get(args.held_out, ())
    args.judged = args.judged or (HELD_OUT_JUDGED if held_out else JUDGED)
    args.per_rule = args.per_rule or (HELD_OUT_PER_RULE if held_out else 8)
    libraries = args.library or list(held_out or LIBRARIES)
    if not all(PINNED.fullmatch(item) for item in libraries):
        parser.error("each --library must be pinned: NAME==VERSION")
    findings = []
    for library in libraries:
        findings.extend(findings_of(library, unpacked(library, args.cache)))
    judged = read_judged(args.judged)
    added = append_unjudged(args.judged, sample(findings, args.per_rule), judged)
    judged = read_judged(args.judged)
    report(findings, judged)
    if added:
        print(f"{added} sampled findings added to {args.judged} with verdict `?`: judge them and run again")


if __name__ == "__main__":
    main()
