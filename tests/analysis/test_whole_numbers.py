"""Values that hold whole numbers whatever their dtype (`analysis/whole_numbers.py`), asked at
`probe(expr)` calls the way TL207 asks `ctx.kinds.holds_whole_numbers`."""

from __future__ import annotations

from tests.analysis.helpers import walk_with_probe


def whole(source: str) -> list[bool]:
    found = []
    walk_with_probe(source, lambda ctx, call: found.append(ctx.kinds.holds_whole_numbers(call.args[0].value)))
    return found


def test_counts_and_indices_a_call_returns_in_a_tuple() -> None:
    assert whole(
        """
        import torch

        def f(tokens, scores):
            values, counts = torch.unique(tokens, return_counts=True)
            best, position = scores.max(dim=1)
            probe(counts.float())
            probe(position)
            probe(values)
            probe(best)
        """
    ) == [True, True, False, False]


def test_a_list_filled_in_a_loop_and_a_helper_of_the_file() -> None:
    assert whole(
        """
        import torch

        def lengths_of(tokens, other):
            found = []
            for row in tokens:
                _, runs = torch.unique_consecutive(row, return_counts=True)
                found.append(runs)
            return other, torch.cat(found).float()

        def mixed(tokens, ratio):
            found = []
            found.append(torch.bincount(tokens))
            found.append(ratio)
            return torch.stack(found)

        def f(tokens, ratio):
            _, durations = lengths_of(tokens, ratio)
            first, _ = lengths_of(tokens, ratio)
            probe(durations)
            probe(first)
            probe(mixed(tokens, ratio))
        """
    ) == [True, False, False]


def test_integer_dtypes_masks_and_values_reassigned_from_themselves() -> None:
    assert whole(
        """
        import torch

        def f(x, mask_source, ratio):
            tallies = x.to(torch.int64)
            tallies = tallies.float()
            present = mask_source > 0
            if ratio > 1:
                picked = present.sum(-1)
            else:
                picked = ratio
            probe(tallies)
            probe(torch.zeros(3, dtype=torch.long) + present.sum())
            probe(picked)
            probe(x / 2)
        """
    ) == [True, True, False, False]
