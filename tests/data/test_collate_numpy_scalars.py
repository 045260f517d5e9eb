"""default_collate of NumPy scalars: one dtype stays that dtype; mixed with other NumPy or
Python scalars, the batch's dtype is PyTorch's promotion (NumPy's would make float32 with an
int32 or a Python float float64)."""

import numpy as np
import pytest
import torch.utils.data as tdata

import ember.utils.data as edata

BATCHES = [
    [np.float32(1), 2], [np.float32(1), 2.5], [np.float16(1), 2], [np.uint8(1), 2.5],
    [np.int32(1), np.float32(2)], [np.complex64(1), 2.0], [np.int32(1), np.int64(2)],
    [np.int8(1), 300], [np.float32(1), np.float32(2)], [np.uint16(3)] * 2, [np.bool_(1)] * 2,
]


@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: ",".join(type(x).__name__ for x in b))
def test_dtype_and_values_match_torch(batch):
    got, want = edata.default_collate(batch), tdata.default_collate(batch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()
