"""Complex LU pivots as LAPACK's (and so PyTorch's): the row of largest ``|re| + |im|``."""

import numpy as np
import torch

import ember


def test_complex_lu_pivots_and_factors_match_torch():
    rng = np.random.default_rng(0)
    for case in range(120):
        m, n = (int(v) for v in rng.integers(1, 7, 2))
        a = rng.normal(size=(2, m, n)) + 1j * rng.normal(size=(2, m, n))
        if case % 2:
            a = a.astype(np.complex64)
        t, e = torch.linalg.lu_factor(torch.tensor(a)), ember.linalg.lu_factor(ember.tensor(a))
        np.testing.assert_array_equal(e.pivots.numpy(), t.pivots.numpy())
        tol = 1e-4 if case % 2 else 1e-12
        np.testing.assert_allclose(e.LU.numpy(), t.LU.numpy(), rtol=tol, atol=tol)


def test_pivot_where_modulus_and_lapack_size_disagree():
    # by modulus row 0 (4.2 > |3+1.3j| = 3.27); by |re| + |im| row 1 (4.3 > 4.2), as LAPACK
    a = np.array([[4.2 + 0j, 1], [3 + 1.3j, 2]])
    t, e = torch.linalg.lu_factor(torch.tensor(a)), ember.linalg.lu_factor(ember.tensor(a))
    assert e.pivots.tolist() == t.pivots.tolist() == [2, 2]
