"""mend50misc: sparse sizes past int64's count refused (they merged distinct entries), and
``None`` in a sparse key (``S[None]``, ``S[0, None]``), against PyTorch 2.13."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck
from ember.errors import ShapeError

warnings.filterwarnings("ignore", message="Sparse")
X = [[0.0, 2.0, 0.0], [3.0, 0.0, 4.0], [5.0, 6.0, 0.0]]
ONE = [[0], [0]]


@pytest.mark.parametrize("make", [
    lambda lib: lib.sparse_coo_tensor(lib.tensor([[0, 2**23], [0, 0]]), lib.tensor([1.0, 2.0]),
                                      (2**24, 2**41)),
    lambda lib: lib.sparse_coo_tensor(lib.tensor([[2**40], [2**40]]), lib.tensor([1.0])),
    lambda lib: lib.sparse_coo_tensor(lib.tensor([[0]]), lib.ones(1, 2), (2**62, 2)),
    lambda lib: lib.sparse.mm(lib.sparse_coo_tensor(lib.tensor(ONE), lib.ones(1), (2**40, 1)),
                              lib.sparse_coo_tensor(lib.tensor(ONE), lib.ones(1), (1, 2**40))),
])
def test_a_size_of_more_elements_than_int64_counts_is_refused_as_torch(make):
    # (Ember built it, and coalesce merged (0, 0) and (2**23, 0): int64 positions wrapped)
    with pytest.raises(RuntimeError, match="integer multiplication overflow"):
        make(torch)
    with pytest.raises(ShapeError, match=r"more than an int64 counts"):
        make(ember)


def test_compressed_and_diagonal_sizes_past_int64_are_refused():
    with pytest.raises(ShapeError, match=r"sparse_csr_tensor: size \(1, 9223372036854775808\)"):
        ember.sparse_csr_tensor([0, 1], [0], [1.0], (1, 2**63))
    with pytest.raises(ShapeError, match="spdiags: size"):
        ember.sparse.spdiags(ember.tensor([[1.0]]), ember.tensor([0]), (2**40, 2**40))


@pytest.mark.parametrize("size", [(2**62, 1), (2**31, 2**32 - 1), (2**63 - 1,)])
def test_sizes_up_to_int64s_count_coalesce_distinct_entries(size):
    index = [[0, size[0] - 1, 0], [0, 0, 0]][:len(size)]
    s = ember.sparse_coo_tensor(ember.tensor(index), ember.tensor([1.0, 2.0, 4.0]), size)
    t = torch.sparse_coo_tensor(torch.tensor(index), torch.tensor([1.0, 2.0, 4.0]), size)
    c, tc = s.coalesce(), t.coalesce()
    np.testing.assert_array_equal(c._indices().numpy(), tc._indices().numpy())
    np.testing.assert_array_equal(c._values().numpy(), tc._values().numpy())


def _sparse(lib, kind):
    if kind == "coo":
        return lib.tensor(X).to_sparse()
    if kind == "hybrid":
        return lib.tensor(X).to_sparse(1)
    if kind == "one entry":
        return lib.sparse_coo_tensor(lib.tensor([[1], [2]]), lib.tensor([7.0]), (3, 3))
    index, values = [[1, 0, 1], [2, 1, 2]], [1.0, 2.0, 3.0]  # (repeated entries)
    return lib.sparse_coo_tensor(lib.tensor(index), lib.tensor(values), (3, 3))


@pytest.mark.parametrize("kind", ["coo", "hybrid", "one entry", "uncoalesced"])
@pytest.mark.parametrize("key", [None, (None,), (0, None), (None, 1), (slice(None), None),
                                 (None, ...), (..., None), (None, None), (None, 0, None),
                                 (slice(None), None, 1), (1, slice(None), None),
                                 (None, None, 0, 0), (None, ..., -1)])
def test_none_in_a_key_inserts_a_dimension_as_torch(kind, key):
    # (Ember refused None as "not supported", which docs/sparse.md called PyTorch's behaviour)
    got, want = _sparse(ember, kind)[key], _sparse(torch, kind)[key]
    assert tuple(got.shape) == tuple(want.shape)
    if want.layout == torch.strided:
        assert isinstance(got, ember.Tensor)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        return
    assert got.sparse_dim() == want.sparse_dim()
    np.testing.assert_array_equal(got._indices().numpy(), want._indices().numpy())
    np.testing.assert_array_equal(got._values().numpy(), want._values().numpy())
    assert got.is_coalesced() == want.is_coalesced()


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("kind", ["one entry", "coo"])
def test_unsqueeze_flags_coalesced_as_torch(kind, dim):
    # (Ember flagged every unsqueeze uncoalesced; PyTorch's is coalesced with at most one entry)
    for coalesce in (False, True):
        s, t = _sparse(ember, kind), _sparse(torch, kind)
        if coalesce:
            s, t = s.coalesce(), t.coalesce()
        assert s.unsqueeze(dim).is_coalesced() == t.unsqueeze(dim).is_coalesced()


def test_none_in_a_key_of_a_compressed_tensor_needs_an_integer_first():
    # (PyTorch: "Sparse CSR tensors do not have strides" unless a select made it COO first)
    s, t = ember.tensor(X).to_sparse_csr(), torch.tensor(X).to_sparse_csr()
    with pytest.raises(NotImplementedError, match="COO tensors only"):
        s[None]
    with pytest.raises(RuntimeError):
        t[None]
    got, want = s[1, :, None], t[1, :, None]
    np.testing.assert_array_equal(got._indices().numpy(), want._indices().numpy())
    np.testing.assert_array_equal(got._values().numpy(), want._values().numpy())


def test_none_in_a_key_gradients_float64():
    values = ember.tensor([2.0, 3.0, 4.0], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: ember.sparse_coo_tensor(
        [[0, 1, 1], [1, 0, 2]], v, (2, 3))[None, 1].to_dense() ** 2, (values,))
    assert gradcheck(lambda v: ember.sparse_coo_tensor(
        [[0, 1, 1], [1, 0, 0]], v, (2, 3))[1, None, 0].to_dense() ** 2, (values,))
