"""ember.export sizes that floor-divide a dynamic dim (a pooling's window count, ``T // 2 *
2``): followed when exactly one ``coeff * ((dims + inner) // div) + offset`` gives every
traced size (they were a ConstraintViolationError), refused when the traces cannot tell two
apart. Checked against eager Ember and torch at every size of the range."""

import io

import numpy as np
import pytest
import torch

import ember
from ember.export import ConstraintViolationError, Dim
from ember.export.symbolic import SizeExpr, fit


class Pool(ember.nn.Module):
    def __init__(self, *window):
        super().__init__()
        self.window = window

    def forward(self, x):
        return ember.nn.functional.max_pool1d(x, *self.window)


class EvenPrefix(ember.nn.Module):
    def forward(self, x):
        return x[:, : x.shape[1] // 2 * 2].reshape(x.shape[0], -1, 2).sum(-1)


@pytest.mark.parametrize("model, window, example", [(Pool(2), (2,), 8),
                                                    (Pool(3, 2, 1), (3, 2, 1), 9)])
def test_pooling_with_a_dynamic_length_matches_torch_at_every_length(model, window, example):
    rs = np.random.RandomState(0)
    ep = ember.export.export(model, (ember.randn(2, 3, example),),
                             dynamic_shapes=({2: Dim("t", min=3, max=40)},))
    ep.validate()
    f = io.BytesIO()
    ember.export.save(ep, f)
    f.seek(0)
    loaded = ember.export.load(f)
    for t in range(3, 41):
        x = rs.randn(2, 3, t).astype(np.float32)
        want = torch.nn.functional.max_pool1d(torch.tensor(x), *window).numpy()
        for program in (ep, loaded):
            np.testing.assert_array_equal(program.module()(ember.tensor(x)).numpy(), want)


def test_an_even_prefix_follows_the_length():
    ep = ember.export.export(EvenPrefix(), (ember.randn(2, 8),),
                             dynamic_shapes=({1: Dim("t", min=2, max=30)},))
    for t in range(2, 31):
        x = ember.randn(2, t)
        np.testing.assert_allclose(ep.module()(x).numpy(), EvenPrefix()(x).numpy(), rtol=1e-6)


def test_floor_fits_only_when_the_traces_tell_one():
    envs = [{"t": t} for t in (8, 9, 2, 64)]
    assert fit([t // 2 for t in (8, 9, 2, 64)], envs) == SizeExpr(1, ("t",), 0, 2, 0)
    assert str(SizeExpr(3, ("t",), 1, 2, 1)) == "3*((t + 1) // 2) + 1"
    even = [{"t": t} for t in (8, 10, 2, 64)]  # (t // 2 and (t + 1) // 2 agree on them)
    assert fit([t // 2 for t in (8, 10, 2, 64)], even) is None


def test_a_window_count_the_traces_cannot_pin_is_still_refused():
    with pytest.raises(ConstraintViolationError, match="max_pool"):
        ember.export.export(Pool(3), (ember.randn(2, 3, 9),),
                            dynamic_shapes=({2: Dim("t", min=3, max=64)},))


class Pool2d(ember.nn.Module):
    def forward(self, x):
        return ember.nn.functional.max_pool2d(x, 2).amax((2, 3))


def test_pooling_over_dynamic_height_and_width_matches_torch():
    # (the first resized trace grows each dim by an odd amount, so that every dim's parity
    # changes and the traces tell h // 2 from (h + 1) // 2)
    rs = np.random.RandomState(0)
    ep = ember.export.export(Pool2d(), (ember.randn(2, 3, 8, 8),), dynamic_shapes=(
        {0: Dim("b", max=16), 2: Dim("h", min=2, max=40), 3: Dim("w", min=2, max=40)},))
    for b, h, w in [(1, 2, 2), (3, 5, 7), (2, 9, 8), (4, 16, 17), (16, 40, 3)]:
        x = rs.randn(b, 3, h, w).astype(np.float32)
        want = torch.nn.functional.max_pool2d(torch.tensor(x), 2).amax((2, 3)).numpy()
        np.testing.assert_array_equal(ep.module()(ember.tensor(x)).numpy(), want)
