"""Fixes from the second differential sweep against torch.sparse (/work/fuzz/sparse45):
transposing a dimension with itself keeps the coalesced flag."""

import warnings

import numpy as np
import pytest
import torch

import ember

warnings.filterwarnings("ignore", message="Sparse")


@pytest.mark.parametrize("dims", [(0, 0), (1, 1), (-1, 1)])
def test_transpose_of_a_dim_with_itself_keeps_the_coalesced_flag(dims):
    index, values = [[0, 0, 1], [1, 1, 0]], [1.0, -3.0, 2.0]  # element (0, 1) is -2
    for coalesce in (False, True):
        out = []
        for lib in (ember, torch):
            s = lib.sparse_coo_tensor(lib.tensor(index), lib.tensor(values), (2, 2))
            t = (s.coalesce() if coalesce else s).transpose(*dims)
            out.append((t.is_coalesced(), t._nnz(), t.abs().to_dense().numpy()))
        (e_flag, e_nnz, e_abs), (t_flag, t_nnz, t_abs) = out
        assert (e_flag, e_nnz) == (t_flag, t_nnz)
        np.testing.assert_allclose(e_abs, t_abs)  # |1 - 3| = 2, not 1 + 3
