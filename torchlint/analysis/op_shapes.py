"""The sizes some tensor ops give, from the sizes of their input and the integers their
arguments hold: what the tensor-facts model cannot read off a layout's reordering.

Sizes are code, as the tensor facts keep them (`"4"`, `"T"`; None unknown). A dim an op leaves
alone keeps its code, symbol or not; a dim an op computes is known only from integer literals.
Each function returns None where the result is not known.

    squeezed(("1", "4", "8"), None)        # ("4", "8")
    padded(("2", "3", "16"), (1, 2))       # ("2", "3", "19")
"""

from __future__ import annotations

import math

from torchlint.analysis.shape_checks import literal

Sizes = tuple[str | None, ...]


def squeezed(sizes: Sizes, dim: int | None) -> Sizes | None:
    """`x.squeeze()` (`dim` None: every dim of size 1, so every size must be a literal) or
    `x.squeeze(dim)` (that dim, if its size is 1)."""
    if dim is None:
        if any(literal(size) is None for size in sizes):
            return None  # a symbol (`B`) may be 1 at run time
        return tuple(size for size in sizes if size != "1")
    if not -len(sizes) <= dim < len(sizes):
        return None
    dim %= len(sizes)
    if literal(sizes[dim]) is None:
        return None
    return sizes[:dim] + sizes[dim + 1:] if sizes[dim] == "1" else sizes


def padded(sizes: Sizes, pads: tuple[int, ...]) -> Sizes | None:
    """`F.pad(x, (left, right, top, bottom, ...))`: pairs from the last dim backwards."""
    if len(pads) % 2 or len(pads) // 2 > len(sizes):
        return None
    result = list(sizes)
    for pair in range(len(pads) // 2):
        position = len(sizes) - 1 - pair
        size = literal(sizes[position])
        grown = size + pads[2 * pair] + pads[2 * pair + 1] if size is not None else None
        result[position] = str(grown) if grown is not None and grown >= 0 else None
    return tuple(result)


def interpolated(sizes: Sizes, size: tuple[int, ...] | None, scale: tuple[float, ...] | None) -> Sizes | None:
    """`F.interpolate(x, size=...)` or `scale_factor=...` of a (B, C, *spatial) input: each spatial
    size is the one given, or the input's times the factor, rounded down."""
    spatial = len(sizes) - 2
    if spatial < 1:
        return None
    if size is not None:
        given = size * spatial if len(size) == 1 else size
        return sizes[:2] + tuple(map(str, given)) if len(given) == spatial else None
    if scale is None:
        return None
    factors = scale * spatial if len(scale) == 1 else scale
    if len(factors) != spatial:
        return None
    scaled = [literal(old) for old in sizes[2:]]
    return sizes[:2] + tuple(
        None if old is None else str(math.floor(old * factor)) for old, factor in zip(scaled, factors))


def narrowed(sizes: Sizes, dim: int, length: str | None) -> Sizes | None:
    """`x.narrow(dim, start, length)`: that dim becomes `length`."""
    if not -len(sizes) <= dim < len(sizes):
        return None
    dim %= len(sizes)
    return sizes[:dim] + (length,) + sizes[dim + 1:]


def one_hot(sizes: Sizes, classes: str | None) -> Sizes | None:
    """`F.one_hot(labels, num_classes)`: one more dim, of the class count (without it, the
    width is the largest label plus one, which only the data knows)."""
    return (*sizes, classes) if classes is not None else None


def stft_sizes(sizes: Sizes, n_fft: int, hop: int | None, center: bool, complex_output: bool) -> Sizes | None:
    """`torch.stft(x, n_fft, hop_length, center=...)` of a (L,) or (B, L) signal: (*batch,
    n_fft // 2 + 1, frames), the frames 1 + L // hop with the signal padded at both ends
    (`center=True`, the default), else 1 + (L - n_fft) // hop; a last dim of 2 for real and
    imaginary parts when not complex."""
    if len(sizes) not in (1, 2) or n_fft <= 0:
        return None
    hop = hop if hop is not None else n_fft // 4
    length = literal(sizes[-1])
    if hop <= 0:
        return None
    frames = None if length is None else (1 + length // hop if center else 1 + (length - n_fft) // hop)
    shape = (*sizes[:-1], str(n_fft // 2 + 1), None if frames is None or frames <= 0 else str(frames))
    return shape if complex_output else (*shape, "2")


def repeated(sizes: Sizes, counts: tuple[int, ...]) -> Sizes | None:
    """`x.repeat(*counts)`: each size times its count, the counts beyond the rank adding leading dims."""
    if len(counts) < len(sizes) or any(count < 0 for count in counts):
        return None
    padded_sizes = ("1",) * (len(counts) - len(sizes)) + tuple(sizes)
    result = []
    for size, count in zip(padded_sizes, counts):
        known = literal(size)
        result.append(size if count == 1 else (str(known * count) if known is not None else None))
    return tuple(result)
