"""Complex gradients through sparse products, the coalesced flag of transposes, and integer
``beta``/``alpha`` in the addmm family, against PyTorch."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("seed", range(4))
def test_complex_gradients_through_sparse_mm_match_torch(seed):
    rng = np.random.default_rng(seed)
    a = (rng.normal(size=(4, 3)) + 1j * rng.normal(size=(4, 3))) * (rng.random((4, 3)) < 0.6)
    b = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    g = rng.normal(size=(4, 2)) + 1j * rng.normal(size=(4, 2))
    grads = []
    for lib in (torch, ember):
        s, d = lib.tensor(a).to_sparse().requires_grad_(), lib.tensor(b, requires_grad=True)
        lib.sparse.mm(s, d).backward(lib.tensor(g))
        grads.append((s.grad.to_dense().numpy(), d.grad.numpy()))
    for ours, theirs in zip(grads[1], grads[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_complex_sparse_mm_gradcheck():
    s = ember.tensor(np.array([[1 + 1j, 0], [0, 2j], [0.5, 0]])).to_sparse()
    d = ember.tensor(np.array([[1 + 0.5j, 2], [1j, -1]]), requires_grad=True)
    values = s._values().clone().requires_grad_()
    assert ember.autograd.gradcheck(lambda d: ember.sparse.mm(s, d), (d,))
    assert ember.autograd.gradcheck(lambda v: ember.sparse.mm(
        ember.sparse_coo_tensor(s._indices(), v, (3, 2)), d.detach()), (values,))


@pytest.mark.parametrize("nnz", [0, 1, 2])
def test_transpose_coalesced_flag_like_torch(nnz):
    flags = []
    for lib in (torch, ember):
        x = lib.sparse_coo_tensor(lib.tensor([[0, 1], [2, 0]])[:, :nnz], lib.ones(nnz),
                                  (3, 3)).coalesce()
        flags.append((x.t().is_coalesced(), x.transpose(0, 1).is_coalesced(),
                      x.transpose(1, 1).is_coalesced()))
    assert flags[1] == flags[0]


@pytest.mark.parametrize("name", ["addmm", "addmv", "addr", "baddbmm", "addbmm"])
def test_integer_beta_alpha_in_the_addmm_family(name):
    shapes = {"addmm": ((2, 2), (2, 2), (2, 2)), "addmv": ((2,), (2, 2), (2,)),
              "addr": ((2, 2), (2,), (2,)), "baddbmm": ((1, 2, 2), (1, 2, 2), (1, 2, 2)),
              "addbmm": ((2, 2), (1, 2, 2), (1, 2, 2))}[name]
    args = [ember.ones(*s, dtype=ember.int64) + i for i, s in enumerate(shapes)]
    targs = [torch.ones(*s, dtype=torch.int64) + i for i, s in enumerate(shapes)]
    out = getattr(ember, name)(*args, beta=2, alpha=3)
    assert out.dtype is ember.int64
    np.testing.assert_array_equal(out.numpy(), getattr(torch, name)(*targs, beta=2,
                                                                      alpha=3).numpy())
    assert getattr(ember, name)(*args, beta=1.0, alpha=2.0).dtype is ember.int64
    with pytest.raises(ValueError, match=f"{name}: for integer tensors .* beta=0.5"):
        getattr(ember, name)(*args, beta=0.5)
    with pytest.raises(ValueError, match="alpha must be a whole number, got alpha=1.5"):
        getattr(ember, name)(*args, alpha=1.5)


def test_sparse_addmm_refuses_fractional_beta_for_integers():
    s = ember.eye(2, dtype=ember.int64).to_sparse()
    with pytest.raises(ValueError, match="sparse.addmm: for integer tensors"):
        ember.sparse.addmm(ember.ones(2, 2, dtype=ember.int64), s,
                           ember.ones(2, 2, dtype=ember.int64), beta=0.5)
