"""A convolution with a bias in bfloat16/float16 (under autocast or not) rounds once, as
PyTorch's: the product and the bias are summed in the GEMM's float32 and the sum is rounded,
not the product rounded and the bias added in half precision (1-ulp differences in about a
third of the outputs before). A sum that lies within float32 summation-order noise of a
half-precision rounding boundary may still round the other way (one element in 128 of plain
float16 ``conv2d`` here, where PyTorch's float16 kernel sums in another order)."""

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(54)

SHAPES = {  # name: (input shape, weight shape)
    "conv1d": ((2, 8, 9), (4, 8, 3)),
    "conv2d": ((2, 8, 6, 6), (4, 8, 3, 3)),
    "conv2d_pointwise": ((2, 8, 6, 6), (4, 8, 1, 1)),
    "conv2d_one_sample": ((1, 8, 6, 6), (4, 8, 3, 3)),
    "conv3d": ((2, 3, 4, 4, 4), (4, 3, 2, 2, 2)),
}


def _conv(lib, x, w, b):
    return getattr(lib.nn.functional, f"conv{x.ndim - 2}d")(x, w, b)


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("autocast", [True, False])
def test_conv_bias_is_added_before_the_one_rounding(name, dtype, autocast):
    xs, ws = SHAPES[name]
    arrays = [R.standard_normal(s).astype(np.float32) for s in (xs, ws, ws[:1])]
    results = []
    for lib in (torch, ember):
        low = getattr(lib, dtype)
        if autocast:
            with lib.autocast("cpu", dtype=low):
                y = _conv(lib, *(lib.tensor(a) for a in arrays))
        else:
            y = _conv(lib, *(lib.tensor(a).to(low) for a in arrays))
        assert str(y.dtype).split(".")[-1] == dtype
        results.append(y.float().numpy())
    differ = results[1] != results[0]
    assert differ.sum() <= 1, f"{differ.sum()} of {differ.size} outputs differ from torch's"
