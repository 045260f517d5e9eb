"""Matrix products with nested tensors that torch.nested (jagged) computes and Ember refused:
a dense matrix or (B, …) batch on the left, a (B, …) batch of one matrix per sequence on the
right of a 4-d nested tensor, a nested (B, n, j) times a nested (B, j, m) (a dense result);
and a dense operand in the padded shape of an elementwise op. Values and float64 gradients
against torch 2.13 (where its backward runs), gradcheck."""

import numpy as np
import pytest
import torch

import ember
from tests.nested.helpers import LENGTHS, assert_close, pair

LONGEST = max(LENGTHS)
# torch 2.13's backward fails for these (bmm of a transposed nested tensor refuses grad-mode
# inputs, the padded products and padded operands give gradients of the wrong kind)
NO_TORCH_GRAD = {"bmm_nested_t_nested", "matrix_at_nested_4d", "heads_at_batch", "padded_mul",
                 "padded_add_broadcast", "padded_sub_transposed"}

# (name, inner dims of x, dense operand's shape or None, fn(lib, x, d))
CASES = [
    ("nested_t_at_nested", (4,), None, lambda lib, x, d: x.transpose(1, 2) @ x),
    ("bmm_nested_t_nested", (4,), None, lambda lib, x, d: lib.bmm(x.transpose(1, 2), x)),
    ("matrix_at_nested", (4,), (5, 4), lambda lib, x, d: d @ x.transpose(1, 2)),
    ("matrix_at_nested_4d", (2, 4), (5, 2), lambda lib, x, d: d @ x.permute(0, 3, 2, 1)),
    ("batch_at_nested", (4,), (3, 5, 4), lambda lib, x, d: lib.matmul(d, x.transpose(1, 2))),
    ("batch_of_one_at_nested", (4,), (1, 5, 4), lambda lib, x, d: d @ x.transpose(1, 2)),
    ("nested_4d_at_batch", (2, 4), (3, 1, 4, 5), lambda lib, x, d: x @ d),
    ("heads_at_batch", (2, 4), (3, 2, 4, 5), lambda lib, x, d: x.transpose(1, 2) @ d),
    ("padded_mul", (2, 4), (3, LONGEST, 2, 4), lambda lib, x, d: x * d),
    ("padded_add_broadcast", (2, 4), (3, LONGEST, 1, 4), lambda lib, x, d: d + x),
    ("padded_sub_transposed", (2, 4), (3, 2, LONGEST, 4),
     lambda lib, x, d: x.transpose(1, 2) - d),
]


def _operands(inner, shape, requires_grad=False):
    nt, tnt = pair(inner, requires_grad=requires_grad)
    if shape is None:
        return nt, tnt, None, None
    dense = np.random.default_rng(3).standard_normal(shape)
    d = ember.tensor(dense, requires_grad=requires_grad)
    td = torch.tensor(dense, requires_grad=requires_grad)
    return nt, tnt, d, td


@pytest.mark.parametrize("name,inner,shape,fn", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, inner, shape, fn):
    grads = name not in NO_TORCH_GRAD
    nt, tnt, d, td = _operands(inner, shape, requires_grad=grads)
    got, want = fn(ember, nt, d), fn(torch, tnt, td)
    assert got.is_nested == want.is_nested
    assert_close(got, want)
    if not grads:
        return
    out = got.values() if got.is_nested else got
    grad = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(ember.tensor(grad))
    (want.values() if want.is_nested else want).backward(torch.tensor(grad))
    assert_close(nt.grad, tnt.grad)
    if d is not None:
        assert_close(d.grad, td.grad)


@pytest.mark.parametrize("inner,shape,fn", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gradcheck(inner, shape, fn):
    nt, _, d, _ = _operands(inner, shape)
    offsets = nt.offsets()

    def f(values, *dense):
        out = fn(ember, ember.nested.nested_tensor_from_jagged(values, offsets), *dense or (None,))
        return out.values() if out.is_nested else out
    inputs = (nt.values().detach().requires_grad_(),) + \
        (() if d is None else (d.detach().requires_grad_(),))
    assert ember.autograd.gradcheck(f, inputs)


F64 = {"dtype": ember.float64}


@pytest.mark.parametrize("call,message", [
    (lambda nt, other: nt.transpose(1, 2) @ other, "different structures"),
    (lambda nt, other: ember.ones(2, 5, 4, dtype=ember.float64) @ nt.transpose(1, 2),
     r"\(2, 5, 4\).*3 or 1 first"),
    (lambda nt, other: nt.unsqueeze(2) @ ember.ones(3, 2, 4, 5, dtype=ember.float64),
     r"1 at the ragged dimension 1"),
    (lambda nt, other: nt * ember.ones(3, LONGEST + 1, 4, dtype=ember.float64),
     r"padded length 3"),
    # (these showed the packed values' shape, (6, 4), and bmm's said 'bmm: matmul: …')
    (lambda nt, other: nt @ ember.tensor(2.0, **F64), r"^matmul: \(3, j\d+, 4\) @ \(\): both"),
    (lambda nt, other: nt @ ember.ones(3, 5, **F64), r"^matmul: \(3, j\d+, 4\) @ \(3, 5\): inner"),
    (lambda nt, other: nt @ ember.ones(3, **F64), r"^matmul: \(3, j\d+, 4\) @ \(3,\): inner"),
    (lambda nt, other: ember.bmm(nt, ember.ones(3, 2, 5, **F64)),
     r"^bmm: \(3, j\d+, 4\) @ \(3, 2, 5\): inner sizes 4 and 2"),
    (lambda nt, other: ember.bmm(nt.transpose(1, 2), other), r"^bmm: nested tensors of shapes"),
    (lambda nt, other: ember.nn.functional.linear(nt, ember.ones(5, 3, **F64)),
     r"^linear: input of shape \(3, j\d+, 4\) has 4 features"),
])
def test_mismatches_raise_shape_errors(call, message):
    nt, _ = pair()
    other, _ = pair()
    with pytest.raises(ember.errors.ShapeError, match=message):
        call(nt, other)


def test_a_dense_matrix_cannot_sum_over_the_ragged_dimension():
    nt, _ = pair()
    with pytest.raises(NotImplementedError, match=r"matmul: \(5, 2\) @ \(3, j\d+, 4\)"):
        ember.ones(5, 2, dtype=ember.float64) @ nt

