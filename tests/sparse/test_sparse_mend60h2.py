"""mend60h2: fixes of rm60h's findings on mend60h's sparse commits."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("make", [lambda: ember.eye(2).to_sparse(),
                                  lambda: ember.eye(2).to_sparse_csr(),
                                  lambda: ember.eye(4).to_sparse_bsr((2, 2))])
@pytest.mark.parametrize("size", [(-1, 3), (-2, 4), (2, -2)])
def test_new_zeros_refuses_negative_sizes_as_torch(make, size):
    with pytest.raises(RuntimeError):  # (torch: "negative dimension" / "overflow")
        torch.eye(2).to_sparse().new_zeros(*size)
    with pytest.raises(ember.errors.ShapeError, match=r"new_zeros: .*non-negative.*-"):
        make().new_zeros(*size)


@pytest.mark.parametrize("size", [3, 2.0])
def test_new_zeros_size_keyword_must_be_a_sequence_as_torch(size):
    # (size=3 gave shape (3,), where torch raises TypeError)
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="new_zeros.*size.*tuple of ints"):
            lib.eye(2).to_sparse().new_zeros(size=size)
    assert tuple(ember.eye(2).to_sparse().new_zeros(size=[3, 2]).shape) == (3, 2)


@pytest.mark.parametrize("make", [lambda lib: lib.zeros(2, 2),
                                  lambda lib: lib.zeros(2, 2).to_sparse()])
@pytest.mark.parametrize("other", [3, [1, 2], None, np.zeros((2, 2))])
def test_is_same_size_of_a_non_tensor_is_a_type_error_dense_and_sparse(make, other):
    # (the dense method raised AttributeError "'int' object has no attribute 'shape'", and
    # answered True for an array of the same shape)
    with pytest.raises(TypeError, match="is_same_size.*other"):
        make(torch).is_same_size(other)
    with pytest.raises(TypeError, match="is_same_size.*other"):
        make(ember).is_same_size(other)


def test_new_zeros_keywords_as_torch():
    s, t = ember.eye(2).to_sparse(), torch.eye(2).to_sparse()
    made, want = s.new_zeros(size=(2, 3)), t.new_zeros(size=(2, 3))
    assert (tuple(made.shape), made._nnz()) == (tuple(want.shape), want._nnz())  # (TypeError)
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        t.new_zeros(2, size=(2, 3))
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        s.new_zeros(2, size=(2, 3))
    with pytest.raises(RuntimeError, match="Only dense CPU tensors can be pinned"):
        t.new_zeros(2, 3, pin_memory=True)
    for layout in ("to_sparse", "to_sparse_csr"):  # (before: accepted and ignored)
        with pytest.raises(ember.errors.ArgumentError, match="new_zeros: only dense.*pinned"):
            getattr(ember.eye(2), layout)().new_zeros(2, 3, pin_memory=True)
    with pytest.raises(TypeError, match=r"(^|\.)new_zeros\(\) got an unexpected keyword"):
        s.new_zeros(2, foo=1)  # (before: named _new_zeros())


def test_bmm_of_an_empty_batch_keeps_the_graph_as_torch():
    results = []
    for lib in (ember, torch):
        d = lib.zeros(0, 4, 2, dtype=lib.float64, requires_grad=True)
        out = lib.bmm(lib.zeros(0, 3, 4, dtype=lib.float64).to_sparse(), d)
        results.append((tuple(out.shape), out.requires_grad))  # (before: False, no graph)
        out.sum().backward()
        assert tuple(d.grad.shape) == (0, 4, 2)
    assert results[0] == results[1] == ((0, 3, 2), True)


def test_bmm_leaf_grad_is_torch_grad_masked_as_documented():
    grads = []
    for lib in (ember, torch):
        s = lib.sparse_coo_tensor([[0, 1, 1], [0, 2, 1], [1, 0, 3]], [1.0, 2.0, 3.0],
                                  (2, 3, 4)).requires_grad_()
        (lib.bmm(s, lib.arange(16.0).reshape(2, 4, 2)) ** 2).sum().backward()
        grads.append(s.grad)
    assert grads[0].layout is ember.sparse_coo and grads[1].layout is torch.strided
    mask = torch.zeros(2, 3, 4)
    mask[[0, 1, 1], [0, 2, 1], [1, 0, 3]] = 1
    torch.testing.assert_close(torch.from_numpy(grads[0].to_dense().numpy()), grads[1] * mask)
