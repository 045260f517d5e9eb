"""check_sparse_tensor_invariants and the constructors' check_invariants=, against PyTorch's
errors."""

import warnings

import pytest
import torch

import ember
from ember.errors import IndexOutOfRange

warnings.filterwarnings("ignore", message="Sparse")

BAD_COMPRESSED = [  # (crow_indices, col_indices, size), each breaking one of PyTorch's checks
    ([1, 2, 2], [1, 0], (2, 3)),
    ([0, 1, 1], [1, 0], (2, 3)),
    ([0, 1, 2], [0, 5], (2, 3)),
]
UNSORTED = [([0, 2, 2], [1, 0], (2, 3)), ([0, 2, 2], [1, 1], (2, 3))]


def torch_message(fn, *args):
    with pytest.raises(RuntimeError) as info:
        fn(*args, check_invariants=True)
    return str(info.value).rstrip(".")


@pytest.mark.parametrize("crow,col,size", BAD_COMPRESSED)
def test_compressed_errors_quote_torch(crow, col, size):
    expected = torch_message(torch.sparse_csr_tensor, crow, col, [1.0, 2.0], size)
    with pytest.raises(RuntimeError) as info:  # (checked always in Ember)
        ember.sparse_csr_tensor(crow, col, [1.0, 2.0], size)
    assert expected in str(info.value)


def test_sorting_is_checked_with_the_flag_or_the_context_manager():
    for crow, col, size in UNSORTED:
        expected = torch_message(torch.sparse_csr_tensor, crow, col, [1.0, 2.0], size)
        ember.sparse_csr_tensor(crow, col, [1.0, 2.0], size)  # not checked by default
        with pytest.raises(RuntimeError) as info:
            ember.sparse_csr_tensor(crow, col, [1.0, 2.0], size, check_invariants=True)
        assert expected in str(info.value)
        with ember.sparse.check_sparse_tensor_invariants():
            assert ember.sparse.check_sparse_tensor_invariants.is_enabled()
            with pytest.raises(RuntimeError, match="sorted and distinct"):
                ember.sparse_csr_tensor(crow, col, [1.0, 2.0], size)
            ember.sparse_csr_tensor(crow, col, [1.0, 2.0], size, check_invariants=False)
        assert not ember.sparse.check_sparse_tensor_invariants.is_enabled()

    @ember.sparse.check_sparse_tensor_invariants()
    def checked():
        return ember.sparse.check_sparse_tensor_invariants.is_enabled()
    assert checked() and not ember.sparse.check_sparse_tensor_invariants.is_enabled()
    ember.sparse.check_sparse_tensor_invariants.enable()
    try:
        with pytest.raises(RuntimeError, match="sorted and distinct"):
            ember.sparse_csc_tensor([0, 2, 2], [1, 0], [1.0, 2.0], (3, 2))
    finally:
        ember.sparse.check_sparse_tensor_invariants.disable()
    manager = ember.sparse.check_sparse_tensor_invariants()
    with manager, pytest.raises(RuntimeError, match="already active"), manager:
        pass


def test_coo_errors_quote_torch():
    for index in ([[0, 5]], [[0, -1]]):
        expected = torch_message(torch.sparse_coo_tensor, index, [1.0, 2.0], (3,))
        with pytest.raises(IndexOutOfRange) as info:  # (also a RuntimeError, as PyTorch's)
            ember.sparse_coo_tensor(index, [1.0, 2.0], (3,))
        assert expected in str(info.value) and isinstance(info.value, RuntimeError)
