"""A tuned matrix stored as int8 row changes from its source: rebuilt to within half a
step of each row's int8 grid, unmoved rows left at the source, shapes checked."""

from __future__ import annotations

import pytest
import torch

from treeattn.parsing import deltas


def test_a_packed_matrix_is_rebuilt_to_within_half_a_step_per_row() -> None:
    torch.manual_seed(0)
    source = torch.randn(6, 5)
    trained = source + 0.05 * torch.randn(6, 5)
    trained[3] = source[3] * (1 - 0.002)  # decay alone: a multiple of the source row
    packed = deltas.pack("w", trained, source)
    assert packed["w::rows"].tolist() == [0, 1, 2, 4, 5]
    assert packed["w::delta"].dtype == torch.int8 and packed["w::delta"].shape == (5, 5)
    rebuilt = deltas.unpack({**packed, "b": torch.ones(2)}, {"w": source})["w"]
    step = (trained - source).abs().amax(dim=1) / 127
    for row in (0, 1, 2, 4, 5):
        assert float((rebuilt[row] - trained[row]).abs().max()) <= float(step[row]) / 2 + 1e-7
        assert float((rebuilt[row] - source[row]).abs().max()) > 0.01
    assert torch.equal(rebuilt[3], source[3])


def test_an_unmoved_matrix_packs_to_no_rows_and_unpacks_to_its_source() -> None:
    source = torch.randn(4, 3)
    packed = deltas.pack("w", source.clone(), source)
    assert packed["w::delta"].shape == (0, 3)
    assert torch.equal(deltas.unpack(packed, {"w": source})["w"], source)


def test_a_change_that_does_not_fit_its_source_is_refused() -> None:
    packed = deltas.pack("w", torch.randn(4, 3), torch.randn(4, 3))
    with pytest.raises(ValueError, match="does not fit"):
        deltas.unpack(packed, {"w": torch.zeros(2, 3)})
    with pytest.raises(ValueError, match="two matrices of one shape"):
        deltas.pack("w", torch.ones(4, 3), torch.ones(3, 3))
