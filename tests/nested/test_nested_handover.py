"""Functional ops that hand a nested tensor over to ``ember.nested`` (``isclose``, the random
``*_like`` ones, ``bmm`` with a batch-1 matrix) against torch.nested (jagged), and the cost of
``nt @ (B, n, m)``."""

import tracemalloc

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from tests.nested.helpers import assert_close, pair


@pytest.mark.parametrize("other", ["nested", "dense"])
def test_isclose_matches_torch(other):
    nt, tnt = pair()
    row = [0.5, 0.0, 1e-9, 2.0]
    near = {"nested": (nt + 1e-9, tnt + 1e-9),
            "dense": (ember.tensor(row, dtype=ember.float64), torch.tensor(row).double())}[other]
    got, want = ember.isclose(nt, near[0], atol=0.5), torch.isclose(tnt, near[1], atol=0.5)
    assert got.is_nested and got.dtype is ember.bool_
    assert_close(got, want)
    if other == "dense":  # the dense operand first
        assert_close(ember.isclose(near[0], nt), torch.isclose(near[1], tnt))
    assert_close(nt.isclose(nt), tnt.isclose(tnt))


def test_isclose_equal_nan():
    nt, tnt = pair()
    nt, tnt = nt * float("nan"), tnt * float("nan")
    assert_close(ember.isclose(nt, nt, equal_nan=True), torch.isclose(tnt, tnt, equal_nan=True))
    assert_close(ember.isclose(nt, nt), torch.isclose(tnt, tnt))


@pytest.mark.parametrize("op,args", [("rand_like", ()), ("randn_like", ()),
                                     ("randint_like", (3, 7))])
def test_random_like_keeps_the_structure(op, args):
    nt, tnt = pair()
    got = getattr(ember, op)(nt, *args, dtype=ember.float32)
    want = getattr(torch, op)(tnt, *args, dtype=torch.float32)
    assert got.is_nested and got.offsets() is nt.offsets() and got.dtype is ember.float32
    assert tuple(got.values().shape) == tuple(want.values().shape)
    again = getattr(ember, op)(nt, *args, generator=ember.Generator().manual_seed(3))
    same = getattr(ember, op)(nt, *args, generator=ember.Generator().manual_seed(3))
    assert again.dtype is ember.float64 and ember.equal(again.values(), same.values())
    if op == "randint_like":
        assert 3 <= float(got.values().min()) and float(got.values().max()) < 7


def test_rand_like_requires_grad():
    nt, _ = pair()
    assert ember.rand_like(nt, requires_grad=True).requires_grad


def test_rms_norm_over_the_ragged_dim_is_refused_as_in_torch():
    nt, tnt = pair()
    with pytest.raises(ValueError, match="ragged"):
        torch.nn.functional.rms_norm(tnt, (3, 4))
    with pytest.raises(ember.errors.ShapeError, match="rms_norm: normalized_shape"):
        F.rms_norm(nt, (3, 4))


def test_movedim_of_the_batch_dim_is_refused():
    nt, _ = pair()
    with pytest.raises(ember.errors.ArgumentError, match="movedim: .*batch"):
        ember.movedim(nt, 0, 1)


def test_bmm_with_a_mismatched_batch_is_refused():
    nt, _ = pair()
    with pytest.raises(ember.errors.ShapeError, match=r"\(2, 4, 2\).*3 or 1 first"):
        ember.bmm(nt, ember.ones(2, 4, 2, dtype=ember.float64))


def test_matmul_per_sequence_does_not_copy_a_matrix_per_row():
    """(B, j, n) @ (B, n, m): one product per sequence, not rows × n × m numbers."""
    rng = np.random.default_rng(0)
    parts = [ember.tensor(rng.standard_normal((n, 64)).astype(np.float32))
             for n in (200, 0, 300, 100)]
    nt = ember.nested.nested_tensor(parts)
    mats = ember.tensor(rng.standard_normal((4, 64, 64)).astype(np.float32))
    tracemalloc.start()
    try:
        out = nt @ mats
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * out.values().numel() * 4  # (a copy per row: 600 × 64 × 64 × 4 bytes)
    for got, part, mat in zip(out.unbind(), parts, mats.unbind()):
        np.testing.assert_allclose(got.numpy(), (part @ mat).numpy(), rtol=1e-6)


def test_matmul_per_sequence_with_an_empty_sequence_matches_torch():
    nt, tnt = pair(lengths=(2, 0, 3), requires_grad=True)
    mats = np.random.default_rng(4).standard_normal((3, 4, 2))
    got, want = nt @ ember.tensor(mats), tnt @ torch.tensor(mats)
    assert_close(got, want)
    weights = np.random.default_rng(5).standard_normal((5, 2))
    (got.values() * ember.tensor(weights)).sum().backward()
    (want.values() * torch.tensor(weights)).sum().backward()
    assert_close(nt.grad, tnt.grad)
    offsets = nt.offsets()

    def f(values, m):
        return (ember.nested.nested_tensor_from_jagged(values, offsets) @ m).values()
    values = nt.values().detach().requires_grad_()
    assert ember.autograd.gradcheck(f, (values, ember.tensor(mats, requires_grad=True)))


def test_binary_functions_are_registered_by_identity_not_by_name():
    from ember.nested.nested_tensor import UnsupportedOpError
    from ember.ops.overrides import handle
    nt, tnt = pair()

    def hypot(a, b):  # (another function of the name: a name string matched it)
        return a

    with pytest.raises(UnsupportedOpError, match="hypot: not supported for nested tensors"):
        handle(hypot, (ember.ones(4), nt), {})
    assert_close(ember.hypot(ember.ones(4, dtype=ember.float64), nt),
                 torch.hypot(torch.ones(4, dtype=torch.float64), tnt))
