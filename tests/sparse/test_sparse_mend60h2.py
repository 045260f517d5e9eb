"""mend60h2: fixes of rm60h's findings on mend60h's sparse commits."""

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


@pytest.mark.parametrize("make", [lambda lib: lib.zeros(2, 2),
                                  lambda lib: lib.zeros(2, 2).to_sparse()])
@pytest.mark.parametrize("other", [3, [1, 2], None])
def test_is_same_size_of_a_non_tensor_is_a_type_error_dense_and_sparse(make, other):
    # (the dense method raised AttributeError "'int' object has no attribute 'shape'")
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
