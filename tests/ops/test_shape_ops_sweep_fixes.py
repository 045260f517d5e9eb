"""Fixes from the differential sweep of the ops that combine, split, rearrange and pair
tensors against PyTorch: each case failed before (a silent wrong answer, or a leaked error)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import IndexOutOfRange, ShapeError
from tests.ops.optable import assert_same, raises_like_torch


def _pair(data, dtype, grad=True):
    t = torch.tensor(data, dtype=getattr(torch, dtype), requires_grad=grad)
    e = ember.tensor(data, dtype=getattr(ember, dtype), requires_grad=grad)
    return t, e


@pytest.mark.parametrize("eps", [1e-8, 0.5])
@pytest.mark.parametrize("dim", [0, 1])
def test_cosine_similarity_gradient_where_a_norm_is_clamped(eps, dim):
    # the clamp at eps entered the gradient (PyTorch clamps the norms without grad): rows
    # with a norm under eps, and a (1, 3) operand broadcast, got other gradients
    rng = np.random.RandomState(0)
    a, b = rng.randn(1, 3) * 0.2, rng.randn(4, 3)
    a[0, 1] = 0.0
    (ta, ea), (tb, eb) = _pair(a, "float64"), _pair(b, "float64")
    want, got = torch.cosine_similarity(ta, tb, dim, eps), ember.cosine_similarity(ea, eb, dim, eps)
    assert_same(got, want, rtol=1e-12)
    w = np.cos(np.arange(want.numel())).reshape(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * ember.tensor(w)).sum().backward()
    assert_same(ea.grad, ta.grad, rtol=1e-10, atol=1e-12)
    assert_same(eb.grad, tb.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtypes", [("float16", "float64"), ("float32", "float64"),
                                    ("int64", "float64"), ("float32", "int32")])
def test_cosine_similarity_of_mixed_dtypes(dtypes):
    # float16 with float64 was 2e-4 off (the dot product was taken after promotion, PyTorch
    # divides each by its own norm first); an integer operand raised
    rng = np.random.RandomState(1)
    a, b = rng.randint(-3, 4, (2, 5)), rng.randn(2, 5)
    (ta, ea), (tb, eb) = _pair(a, dtypes[0], False), _pair(b, dtypes[1], False)
    assert_same(ember.cosine_similarity(ea, eb), torch.cosine_similarity(ta, tb), rtol=1e-12)


def test_cosine_similarity_of_empty_vectors_and_overflowing_norms():
    # float16 empty vectors gave NaN (eps² underflowed), not 0; a norm overflowing to inf
    # gave NaN, not 0
    x = torch.zeros(3, 0, dtype=torch.float16)
    assert_same(ember.cosine_similarity(ember.zeros(3, 0, dtype=ember.float16),
                                        ember.zeros(3, 0, dtype=ember.float16)),
                torch.cosine_similarity(x, x))
    big = [[1e30, 1.0], [2.0, 3.0]]
    assert_same(ember.cosine_similarity(ember.tensor(big), ember.ones(2, 2)),
                torch.cosine_similarity(torch.tensor(big), torch.ones(2, 2)), rtol=1e-6)


def test_pairwise_distance_of_integer_inputs():
    # integer inputs raised; PyTorch's ``x1 - x2 + eps`` turns them floating
    a, b = [[1, 2, 3], [4, 5, 6]], [[0, 0, 0], [1, 1, 1]]
    for p in (2, 1, 0):
        assert_same(ember.pairwise_distance(ember.tensor(a), ember.tensor(b), p),
                    torch.pairwise_distance(torch.tensor(a), torch.tensor(b), p), rtol=1e-6)
    assert_same(ember.pairwise_distance(ember.tensor(a), ember.tensor(b, dtype=ember.float64)),
                torch.pairwise_distance(torch.tensor(a), torch.tensor(b, dtype=torch.float64)),
                rtol=1e-12)


@pytest.mark.parametrize("fn", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_nd_of_a_tuple_of_one_gives_a_tuple(fn):
    # atleast_3d((x,)) iterated over the result (a (2, 1) tensor for x of shape (2,)),
    # atleast_1d/2d((x,)) gave a tensor, not a 1-tuple
    want = getattr(torch, fn)((torch.arange(2.0),))
    got = getattr(ember, fn)((ember.arange(2.0),))
    assert isinstance(got, tuple)
    assert_same(got, want)
    assert_same(getattr(ember, fn)([ember.tensor(1.0), ember.zeros(3)]),
                getattr(torch, fn)([torch.tensor(1.0), torch.zeros(3)]))
    assert_same(getattr(ember, fn)(ember.zeros(3)), getattr(torch, fn)(torch.zeros(3)))


@pytest.mark.parametrize("call", [
    lambda m, x: m.split(x, 1), lambda m, x: m.unbind(x), lambda m, x: m.chunk(x, 2),
    lambda m, x: m.trapezoid(x), lambda m, x: m.cumulative_trapezoid(x, dx=2)])
def test_cutting_a_0d_tensor_names_the_op(call):
    # these leaked 'tuple index out of range' from Size.__getitem__
    with pytest.raises((IndexError, RuntimeError)):
        call(torch, torch.tensor(1.0))
    with pytest.raises(IndexOutOfRange, match="0-d tensor"):
        call(ember, ember.tensor(1.0))


def test_movedim_of_a_0d_tensor():
    # movedim(0-d, 0, 0) leaked 'list assignment index out of range'
    for src, dst in ((0, 0), (-1, 0), ((0,), (-1,))):
        assert_same(ember.movedim(ember.tensor(3.0), src, dst),
                    torch.movedim(torch.tensor(3.0), src, dst))


def test_tensordot_dims_given_as_a_tensor():
    # dims=tensor(1) raised 'iteration over a 0-d tensor'
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
    for dims in (1, [[1], [0]], [[0, 1], [1, 0]]):
        want = torch.tensordot(torch.tensor(a), torch.tensor(b), dims=torch.tensor(dims))
        got = ember.tensordot(ember.tensor(a), ember.tensor(b), dims=ember.tensor(dims))
        assert_same(got, want)


def test_tensordot_refuses_a_repeated_dim():
    # dims=([0, 0], [0, 1]) silently contracted the diagonal
    raises_like_torch(lambda m: m.tensordot(m.ones(2, 2), m.ones(2, 2), dims=([0, 0], [0, 1])),
                      ShapeError, "more than once")


@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8", "int64", "float32"])
def test_tensordot_broadcasting_a_size_1_dim_keeps_the_dtype(dtype):
    # int32 (1, 1, 1) x (2, 1, 2) over ([0, 1], [2, 0]) raised 'einsum: operands have dtypes
    # int32 and int64': the partner of the size-1 dim was summed into int64 (opdb51b)
    a = np.arange(1, 2).reshape(1, 1, 1)
    b = np.arange(1, 5).reshape(2, 1, 2)
    for dims in (([0, 1], [2, 0]), ([2], [0])):
        want = torch.tensordot(torch.tensor(a, dtype=getattr(torch, dtype)),
                               torch.tensor(b, dtype=getattr(torch, dtype)), dims=dims)
        got = ember.tensordot(ember.tensor(a, dtype=getattr(ember, dtype)),
                              ember.tensor(b, dtype=getattr(ember, dtype)), dims=dims)
        assert_same(got, want)


def test_repeat_interleave_of_int32_counts_keeps_their_dtype():
    # repeat_interleave(counts) gave int64 indices for int32 counts
    for dtype in ("int32", "int64"):
        counts = [1, 0, 2]
        assert_same(ember.repeat_interleave(ember.tensor(counts, dtype=getattr(ember, dtype))),
                    torch.repeat_interleave(torch.tensor(counts, dtype=getattr(torch, dtype))))


def test_einsum_names_a_broadcast_clash_under_the_ellipsis():
    # the error named 'a', a letter the user never wrote, for clashing '...' dimensions
    raises_like_torch(lambda m: m.einsum("...i,...i->...", m.ones(2, 3), m.ones(4, 3)),
                      ShapeError, r"dimension under '\.\.\.' has size 2")


def test_concatenate_takes_axis():
    # torch.concatenate's dimension is called axis; Ember's raised TypeError for it
    for kw in ({"axis": 1}, {"dim": 1}, {}):
        n = ember.concatenate([ember.zeros(2, 1), ember.ones(2, 1)], **kw).shape
        assert n == torch.concatenate([torch.zeros(2, 1), torch.ones(2, 1)], **kw).shape


def test_cdist_and_pdist_p0_propagate_nan():
    # p = 0 counted a NaN difference as 1 (2 instead of NaN, as PyTorch gives)
    x = [[float("nan"), 1.0], [2.0, 3.0], [float("inf"), 0.0], [2.0, 0.0]]
    t, e = torch.tensor(x), ember.tensor(x)
    assert_same(ember.cdist(e, e, 0), torch.cdist(t, t, 0))
    assert_same(ember.pdist(e, 0), torch.pdist(t, 0))


@pytest.mark.parametrize("call", [
    lambda m, x: x.narrow(1, 1.5, 1), lambda m, x: x.repeat(1.5, 1), lambda m, x: m.tile(x, (1.5,)),
    lambda m, x: m.tril(x, 0.5), lambda m, x: m.diag(x, 1.5), lambda m, x: x.diagonal(0.5),
    lambda m, x: m.diag_embed(x, 0.5), lambda m, x: x.diagflat(0.5),
    lambda m, x: x.repeat_interleave(1.5), lambda m, x: x.reshape(3.0, 2),
    lambda m, x: x.unflatten(1, (3.0, 1)), lambda m, x: x.roll(1.5),
    lambda m, x: x.split(1.0), lambda m, x: x.chunk(2.0), lambda m, x: x.movedim(0.0, 1)])
def test_float_sizes_and_offsets_are_refused(call):
    # a float was truncated (narrow(1, 1.5, 1) started at 1, repeat(1.5, 1) repeated once)
    # or leaked "'float' object is not iterable"; PyTorch raises TypeError
    with pytest.raises(TypeError):
        call(torch, torch.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="must be an int"):
        call(ember, ember.arange(6.0).reshape(2, 3))


def test_integer_like_sizes_still_work():
    x, t = ember.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    assert_same(x.narrow(1, ember.tensor(1), np.int64(2)), t.narrow(1, torch.tensor(1), 2))
    assert_same(x.reshape(np.int64(3), 2), t.reshape(3, 2))
    assert_same(x.roll((1, np.int32(2)), (0, 1)), t.roll((1, 2), (0, 1)))


def test_einsum_names_an_operand_that_is_not_a_tensor():
    # a list operand leaked "'list' object has no attribute 'dtype'"
    with pytest.raises(TypeError):
        torch.einsum("i,i->", torch.ones(2), [1.0, 2.0])
    with pytest.raises(TypeError, match="operand 1 must be a Tensor"):
        ember.einsum("i,i->", ember.ones(2), [1.0, 2.0])


@pytest.mark.parametrize("shape", [(3,), (2, 2, 2)])
def test_H_is_for_matrices_only_as_in_torch(shape):
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        _ = torch.ones(shape).H
    with pytest.raises(ShapeError, match="only supported on matrices"):
        _ = ember.ones(shape).H
    assert ember.ones(2, 3).H.shape == (3, 2) and ember.tensor(1.0).H.item() == 1.0
