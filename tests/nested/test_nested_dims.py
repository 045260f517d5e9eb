"""permute, movedim, select and indexing of nested tensors (src/ember/nested/dims.py), and
is_contiguous/contiguous after a transpose: values and float64 gradients against
torch.nested (jagged) and by finite differences."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, IndexOutOfRange, ShapeError
from ember.nested import UnsupportedOpError
from tests.nested.helpers import assert_close, pair

INNER = (2, 3)

# (name, fn(lib, x)): the same code on Ember and PyTorch, x of shape (3, j, 2, 3)
CASES = [
    ("permute", lambda lib, x: x.permute(0, 2, 1, 3)),
    ("permute_tuple", lambda lib, x: x.permute((0, 3, 2, 1))),
    ("permute_negative", lambda lib, x: lib.permute(x, (0, -1, 1, 2))),
    ("movedim", lambda lib, x: x.movedim(1, 2)),
    ("movedim_several", lambda lib, x: x.movedim((1, 2), (3, 1))),
    ("select_last", lambda lib, x: x.select(-1, 1)),
    ("select_before_ragged", lambda lib, x: x.transpose(1, 2).select(1, 0)),
    ("select_function", lambda lib, x: lib.select(x, 2, -1)),
    ("select_batch", lambda lib, x: x.select(0, 2)),
    ("index_sequence_row", lambda lib, x: x[0, 1]),
    ("index_sequence_slice", lambda lib, x: x[2, 1:, :, 0]),
    ("index_ellipsis_int", lambda lib, x: x[..., 0]),
    ("index_ellipsis_slice", lambda lib, x: x[..., 1:]),
    ("index_ellipsis_two", lambda lib, x: x[..., 1, ::2]),
    ("expand", lambda lib, x: x.unsqueeze(-1).expand(3, -1, 2, 3, 4)),
    ("expand_ragged_size", lambda lib, x: x[..., :1].expand((3, x.shape[1], 2, 3))),
]


# torch 2.13's jagged layout has no working select or slice backward ("expected grad_output to
# be a tensor", "aten.slice_backward"): those gradients are checked by finite differences only
NO_TORCH_GRAD = {"select_last", "select_before_ragged", "select_function", "index_ellipsis_int",
                 "index_ellipsis_slice", "index_ellipsis_two", "expand_ragged_size"}


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, fn):
    nt, tnt = pair(INNER, requires_grad=True)
    got, want = fn(ember, nt), fn(torch, tnt)
    assert tuple(got.shape)[0] == tuple(want.shape)[0] and got.dim() == want.dim()
    if want.is_nested:
        assert got._ragged_idx == want._ragged_idx
        for g, w in zip(got.unbind(), want.unbind()):
            assert_close(g, w)
        got, want = got.values(), want.values()
    else:
        assert_close(got, want)
    if name in NO_TORCH_GRAD:
        return
    grad = np.random.default_rng(1).standard_normal(tuple(want.shape))
    got.backward(ember.tensor(grad))
    want.backward(torch.tensor(grad))
    assert_close(nt.grad, tnt.grad)


@pytest.mark.parametrize("fn", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_gradcheck(fn):
    nt, _ = pair(INNER)
    offsets = nt.offsets()

    def f(values):
        out = fn(ember, ember.nested.nested_tensor_from_jagged(values, offsets))
        return out.values() if isinstance(out, ember.nested.NestedTensor) else out
    assert ember.autograd.gradcheck(f, (nt.values().detach().requires_grad_(),))


def test_transposed_is_not_contiguous_as_in_torch():
    nt, tnt = pair(INNER)
    for a, b in ((nt, tnt), (nt.transpose(1, 2), tnt.transpose(1, 2))):
        assert a.is_contiguous() == b.is_contiguous()
        assert a.contiguous().is_contiguous() and b.contiguous().is_contiguous()
        for g, w in zip(a.contiguous().unbind(), b.contiguous().unbind()):
            assert_close(g, w)
    assert "contiguous=False" in repr(nt.transpose(1, 2))


@pytest.mark.parametrize("fn, error", [
    (lambda x: x.permute(1, 0, 2, 3), ArgumentError),  # moves the batch dim (torch refuses)
    (lambda x: x.permute(0, 1, 2), ArgumentError),
    (lambda x: x.permute(0, 1, 1, 2), ArgumentError),
    (lambda x: x.movedim(0, 1), ArgumentError),
    (lambda x: x.movedim((1, 2), 3), ArgumentError),
    (lambda x: x.select(1, 0), ArgumentError),  # the ragged dim (torch refuses)
    (lambda x: x.select(0, 3), IndexOutOfRange),
    (lambda x: x[5, 0], IndexOutOfRange),
    (lambda x: x[:, 0], UnsupportedOpError),  # slicing the batch (torch refuses)
    (lambda x: x[..., 0, 0, 0], UnsupportedOpError),  # reaches the ragged dim
    (lambda x: x.unsqueeze(-1).expand(4, -1, 2, 3, 4), ShapeError),  # the batch size
    (lambda x: x.unsqueeze(-1).expand(3, 5, 2, 3, 4), ShapeError),  # the ragged size
    (lambda x: x.expand(3, -1, 2, 3, 4), ShapeError),  # a new dim
])
def test_refusals_name_the_op(fn, error):
    nt, _ = pair(INNER)
    with pytest.raises(error):
        fn(nt)


def test_matrix_transpose_same_size_as_forms_and_type_match_torch():
    nt, tnt = pair()
    cases = [lambda lib, x: x.mT, lambda lib, x: x.mH, lambda lib, x: x.adjoint(),
             lambda lib, x: x[..., None], lambda lib, x: x[..., 1:3, None],
             lambda lib, x: x[..., None, :], lambda lib, x: x.view_as(x * 2),
             lambda lib, x: x.reshape_as(x), lambda lib, x: x.expand_as(x),
             lambda lib, x: x.type(lib.float32)]
    for case in cases:
        got, want = case(ember, nt), case(torch, tnt)
        assert len(got.shape) == len(want.shape) and got.dtype.itemsize == want.dtype.itemsize
        for a, b in zip(got.unbind(), want.unbind()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    other, tother = pair(seed=1)
    assert nt.is_same_size(nt * 2) and tnt.is_same_size(tnt * 2)
    assert not nt.is_same_size(other) and not tnt.is_same_size(tother)
    with pytest.raises(TypeError, match="is_same_size: expected a nested tensor"):
        nt.is_same_size(ember.ones(3, 2, 4))


@pytest.mark.parametrize("size", [(3,), (2, 3), (1, 3), (2, 1), (1,), (1, 1, 3)])
def test_sum_to_size_as_torch(size):
    nt, tnt = pair((2, 3))
    assert_close(nt.sum_to_size(*size), tnt.sum_to_size(*size))


@pytest.mark.parametrize("size", [(3, 1, 2, 3), (1, 1, 2, 3), (1, 1, 1, 3), (1, 1, 1, 1)])
def test_sum_to_size_with_the_batch_dim_as_torch(size):  # (per sequence or in all)
    nt, tnt = pair((2, 3))
    assert_close(nt.sum_to_size(size), tnt.sum_to_size(size))


def test_sum_to_size_with_the_batch_dim_gradient():  # (torch 2.13: no nested sum backward)
    nt, _ = pair((2, 3), requires_grad=True)
    (nt.sum_to_size(3, 1, 1, 3) * ember.arange(9.0).reshape(3, 1, 1, 3)).sum().backward()
    want = np.repeat(np.arange(9.0).reshape(3, 3), [2, 1, 3], axis=0)[:, None, :]
    np.testing.assert_array_equal(nt.grad.values().numpy(), np.broadcast_to(want, (6, 2, 3)))


def test_sum_to_size_refuses_a_ragged_size_other_than_1():
    nt, _ = pair((2, 3))
    with pytest.raises(ShapeError, match="sum_to_size: .* 1 on the ragged dim"):
        nt.sum_to_size(3, 2, 2, 3)
