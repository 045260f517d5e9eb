"""mend62a: ember.tensor infers a list's dtype as torch when NumPy promotes its scalars."""

import itertools

import numpy as np
import pytest
import torch
from torch.utils import data as torch_data

import ember
from ember.utils import data as ember_data

LEAVES = [np.int8(1), np.uint8(2), np.int16(3), np.int32(4), np.int64(5), np.float16(1.5),
          np.float32(2.5), np.float64(3.5), np.complex64(1 + 1j), np.complex128(2j), 1, 2.5,
          True, 1j]


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations(LEAVES, 2)))
def test_tensor_of_a_mix_of_numpy_scalars_and_numbers_has_torchs_dtype(a, b):
    # [np.int16(3), np.float16(1)] gave float32 (NumPy's promotion); torch float16.
    for data in ([a, b], [[a], [b]], (a, b, 1)):
        assert str(ember.tensor(data).dtype) == str(torch.tensor(data).dtype).replace(
            "torch", "ember")


def test_default_collate_of_int16_and_float16_scalars_is_float16_as_torch():
    batch = [np.int16(3), np.float16(1)]
    assert ember_data.default_collate(batch).dtype is ember.float16
    assert torch_data.default_collate(batch).dtype is torch.float16
