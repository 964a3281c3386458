"""Pinned library wheels for the benchmarks that read real code (`pip download --no-deps`).

Downloading needs a package index. Nothing downloaded is kept in the repository: the wheels and
their unpacked sources live in a temporary or cache directory.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

PINNED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.!+_-]+")


def download(requirements: list[str], directory: Path) -> None:
    """Download the wheels of pinned `requirements` (no dependencies, no source builds)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
         "-d", str(directory), *requirements],
        check=True,
    )


def wheel_of(requirement: str, directory: Path) -> Path:
    """The downloaded wheel of `name==version` (wheel names spell `-` and `.` in a name as `_`)."""
    name, version = requirement.split("==")
    prefix = f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-"
    matches = [path for path in directory.glob("*.whl") if path.name.lower().startswith(prefix)]
    if len(matches) != 1:
        raise SystemExit(f"expected one wheel for {requirement} in {directory}, found {matches}")
    return matches[0]


def unpacked(requirement: str, cache: Path) -> Path:
    """The sources of a pinned wheel, downloaded and unpacked under `cache` on first use."""
    root = cache / requirement.replace("==", "-")
    if not root.is_dir():
        wheels = cache / "wheels"
        if not any(wheels.glob("*.whl")) or not _has_wheel(requirement, wheels):
            download([requirement], wheels)
        with zipfile.ZipFile(wheel_of(requirement, wheels)) as wheel:
            wheel.extractall(root)
    return root


def _has_wheel(requirement: str, directory: Path) -> bool:
    try:
        wheel_of(requirement, directory)
    except SystemExit:
        return False
    return True
