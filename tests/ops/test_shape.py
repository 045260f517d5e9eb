"""Shape ops (shape.py, join.py, diagonal.py) against PyTorch and finite differences."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import IndexOutOfRange, OpError, ShapeError
from tests.ops.optable import OpCase, S, arg, op_tests


def both(fn):
    """The same lambda for Ember and PyTorch, given the module: ``both(lambda m, x: …)``."""
    return (lambda *a, **k: fn(ember, *a, **k)), (lambda *a, **k: fn(torch, *a, **k))


def case(name, fn, samples, **kw):
    e, t = both(fn)
    return OpCase(name, e, t, samples, **kw)


CASES = [
    case("reshape", lambda m, x: x.reshape(4, -1),
         [S(arg(2, 3, 4)), S(arg(4, 6, noncontig=True)), S(arg(0, 4))]),
    case("reshape_0d", lambda m, x: m.reshape(x, (1, 1)), [S(arg())]),
    case("reshape_flat", lambda m, x: x.reshape(-1), [S(arg(3, 4, noncontig=True)), S(arg())]),
    case("view", lambda m, x: x.view(3, 2, 2), [S(arg(3, 4)), S(arg(12))]),
    case("view_as", lambda m, x: x.view_as(m.zeros(2, 6)), [S(arg(3, 4))]),
    case("permute", lambda m, x: x.permute(2, 0, -2),
         [S(arg(2, 3, 4)), S(arg(2, 3, 4, noncontig=True)), S(arg(0, 2, 3))]),
    case("permute_tuple", lambda m, x: m.permute(x, (1, 0)), [S(arg(2, 3))]),
    case("transpose", lambda m, x: x.transpose(0, -1), [S(arg(2, 3, 4)), S(arg(3, 1))]),
    case("swapaxes", lambda m, x: m.swapaxes(x, 1, 2), [S(arg(2, 3, 4, noncontig=True))]),
    case("t", lambda m, x: x.t(), [S(arg(2, 3)), S(arg(3)), S(arg())]),
    case("T", lambda m, x: x.T, [S(arg(2, 3))]),
    case("mT", lambda m, x: x.mT, [S(arg(2, 3, 4)), S(arg(2, 3))]),
    case("movedim", lambda m, x: m.movedim(x, (0, -1), (2, 0)), [S(arg(2, 3, 4))]),
    case("movedim_int", lambda m, x: x.movedim(0, -1), [S(arg(2, 3, 4, noncontig=True))]),
    case("squeeze_all", lambda m, x: x.squeeze(), [S(arg(1, 3, 1)), S(arg(1)), S(arg())]),
    case("squeeze_dim", lambda m, x: x.squeeze(-1), [S(arg(2, 1)), S(arg(2, 3))]),
    case("squeeze_dims", lambda m, x: x.squeeze((0, 2)), [S(arg(1, 3, 1, 1))]),
    case("squeeze_dims_one_by_one", lambda m, x: x.squeeze(0, 2), [S(arg(1, 3, 1, 1))]),
    case("unsqueeze", lambda m, x: x.unsqueeze(-1), [S(arg(2, 3)), S(arg()),
                                                     S(arg(2, 3, noncontig=True))]),
    case("unsqueeze_0", lambda m, x: m.unsqueeze(x, 0), [S(arg(2, 3))]),
    case("flatten", lambda m, x: x.flatten(1), [S(arg(2, 3, 4)), S(arg(2, 3, 4, noncontig=True)),
                                                 S(arg(0, 3, 4))]),
    case("flatten_range", lambda m, x: m.flatten(x, 0, -2), [S(arg(2, 3, 4))]),
    case("flatten_0d", lambda m, x: x.flatten(), [S(arg())]),
    case("unflatten", lambda m, x: x.unflatten(-1, (2, -1)), [S(arg(3, 4))]),
    case("cat", lambda m, a, b: m.cat([a, b], dim=-1),
         [S(arg(2, 3), arg(2, 4)), S(arg(2, 3, noncontig=True), arg(2, 0)),
          S(arg(2, 3), arg(2, 3, grad=False))]),
    case("cat_dim0", lambda m, a, b, c: m.cat((a, b, c)),
         [S(arg(1, 3), arg(2, 3), arg(0, 3))]),
    case("concat", lambda m, a, b: m.concat([a, b], 1), [S(arg(2, 1, 2), arg(2, 2, 2))]),
    case("stack", lambda m, a, b: m.stack([a, b]), [S(arg(2, 3), arg(2, 3)), S(arg(), arg())]),
    case("stack_last", lambda m, a, b: m.stack([a, b], dim=-1),
         [S(arg(2, 3, noncontig=True), arg(2, 3))]),
    case("hstack", lambda m, a, b: m.hstack([a, b]), [S(arg(2, 3), arg(2, 1)), S(arg(2), arg(3))]),
    case("vstack", lambda m, a, b: m.vstack([a, b]), [S(arg(3), arg(2, 3))]),
    case("split", lambda m, x: x.split(2), [S(arg(5, 3)), S(arg(4, 2, noncontig=True))]),
    case("split_sizes", lambda m, x: m.split(x, [1, 0, 3], dim=-1), [S(arg(2, 4))]),
    case("chunk", lambda m, x: x.chunk(3, 1), [S(arg(2, 5)), S(arg(2, 6)), S(arg(2, 2))]),
    case("unbind", lambda m, x: x.unbind(-1), [S(arg(2, 3)), S(arg(3, noncontig=True))]),
    case("narrow", lambda m, x: x.narrow(1, -3, 2), [S(arg(2, 4)), S(arg(2, 4, noncontig=True))]),
    case("select", lambda m, x: x.select(0, -1), [S(arg(3, 2))]),
    case("repeat", lambda m, x: x.repeat(2, 1, 3), [S(arg(2, 3)), S(arg(2, 3, noncontig=True)),
                                                     S(arg())]),
    case("repeat_zero", lambda m, x: x.repeat(0, 2), [S(arg(2, 3))]),
    case("tile", lambda m, x: x.tile((2,)), [S(arg(2, 3)), S(arg(3))]),
    case("flip", lambda m, x: x.flip((0, -1)), [S(arg(2, 3, 4)), S(arg(3, 2, noncontig=True)),
                                                 S(arg(0, 2))]),
    case("flip_dims_one_by_one", lambda m, x: x.flip(0, -1), [S(arg(2, 3, 4))]),
    case("fliplr", lambda m, x: m.fliplr(x), [S(arg(2, 3))]),
    case("flipud", lambda m, x: x.flipud(), [S(arg(2, 3))]),
    case("roll", lambda m, x: x.roll((1, -3), (0, -1)),
         [S(arg(3, 4)), S(arg(3, 4, noncontig=True))]),
    case("roll_flat", lambda m, x: m.roll(x, 5), [S(arg(3, 4)), S(arg(0, 2))]),
    case("roll_zero", lambda m, x: x.roll(4, 1), [S(arg(3, 4))]),
    case("tril", lambda m, x: x.tril(),
         [S(arg(3, 4)), S(arg(2, 3, 3)), S(arg(3, 3, noncontig=True))]),
    case("tril_diag", lambda m, x: m.tril(x, -1), [S(arg(3, 4))]),
    case("triu", lambda m, x: x.triu(1), [S(arg(4, 3)), S(arg(0, 3))]),
    case("diagonal", lambda m, x: x.diagonal(), [S(arg(3, 4)), S(arg(4, 3, noncontig=True))]),
    case("diagonal_offset", lambda m, x: x.diagonal(1, -1, 0), [S(arg(3, 4, 2)), S(arg(2, 2))]),
    case("diagonal_neg", lambda m, x: m.diagonal(x, -2, 1, 2), [S(arg(2, 4, 3))]),
    case("diagonal_empty", lambda m, x: x.diagonal(5), [S(arg(2, 3))]),
    case("diag_vec", lambda m, x: m.diag(x, 1), [S(arg(3)), S(arg(0))]),
    case("diag_mat", lambda m, x: m.diag(x, -1), [S(arg(3, 4)), S(arg(3, 3, noncontig=True))]),
    case("diagonal_scatter", lambda m, x, s: m.diagonal_scatter(x, s, 1, 0, 2),
         [S(arg(3, 2, 4), arg(2, 3))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


# -- views: shared memory and version counters ---------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda x: x.reshape(6, 4), lambda x: x.view(-1), lambda x: x.permute(2, 1, 0),
    lambda x: x.transpose(0, 1), lambda x: x[1], lambda x: x.narrow(2, 1, 2),
    lambda x: x.diagonal(0, 1, 2), lambda x: x.squeeze(), lambda x: x.unsqueeze(1),
    lambda x: x.split(1)[0], lambda x: x.mT,
])
def test_views_share_memory_and_version(make):
    x = ember.zeros(2, 3, 4)
    y = make(x)
    assert np.shares_memory(x.numpy(), y.numpy())
    v = x._version
    y.add_(1)
    assert x._version == v + 1
    assert float(x.numpy().sum()) == y.numel()


@pytest.mark.parametrize("make", [
    lambda x: x.flip(0), lambda x: x.roll(1, 0), lambda x: x.repeat(1, 1, 1),
    lambda x: ember.cat([x]), lambda x: x.t().reshape(-1) if x.ndim == 2 else x.mT.reshape(-1),
])
def test_copies_do_not_alias(make):
    x = ember.zeros(2, 3, 4)
    y = make(x)
    assert not np.shares_memory(x.numpy(), y.numpy())
    y.add_(1)
    assert x._version == 0 and not x.numpy().any()


def test_reshape_views_when_strides_allow():
    x = ember.zeros(4, 6)[:, ::2]  # non-contiguous, yet (4, 3) -> (2, 2, 3) needs no copy
    assert np.shares_memory(x.numpy(), x.reshape(2, 2, 3).numpy())
    assert np.shares_memory(x.numpy(), x.view(2, 2, 3).numpy())


def test_view_of_non_viewable_layout_raises_like_pytorch():
    x = ember.zeros(2, 3).t()
    with pytest.raises(OpError, match=r"view size is not compatible.*Use \.reshape"):
        x.view(6)
    assert x.reshape(6).shape == (6,)


def test_diagonal_is_a_writable_view():
    x = ember.zeros(3, 3)
    x.diagonal().fill_(1) if hasattr(x, "fill_") else x.diagonal().add_(1)
    np.testing.assert_array_equal(x.numpy(), np.eye(3))


def test_view_gradient_after_inplace_on_view():
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    y.view(2, 2)[0].mul_(3)  # in place through a view
    y.sum().backward()
    tx = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    ty = tx * 1
    ty.view(2, 2)[0].mul_(3)
    ty.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


# -- cat dtypes and errors -----------------------------------------------------------------------
@pytest.mark.parametrize("a,b", [(np.int32, np.float16), (np.uint8, np.int8),
                                 (np.bool_, np.int64), (np.float32, np.float64)])
def test_cat_promotes_like_torch(a, b):
    x, y = np.ones((2, 2), dtype=a), np.zeros((1, 2), dtype=b)
    mine = ember.cat([ember.from_numpy(x), ember.from_numpy(y)])
    ref = torch.cat([torch.from_numpy(x), torch.from_numpy(y)])
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(mine.numpy(), ref.numpy())


def test_cat_skips_legacy_empty_vectors():
    out = ember.cat([ember.zeros(2, 3), ember.zeros(0), ember.ones(1, 3)])
    assert out.shape == (3, 3)


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_gives_skipped_legacy_empty_vectors_a_gradient(dim):
    # torch: the skipped (0,) tensor gets an empty gradient of its own dtype (it got None)
    grads = {}
    for m in (ember, torch):
        a = m.zeros(0, dtype=m.float64, requires_grad=True)
        b = m.ones(2, 3, requires_grad=True)
        out = m.cat([a, b, a], dim)
        (out * out).sum().backward()
        grads[m] = a.grad, b.grad
    (ea, eb), (ta, tb) = grads[ember], grads[torch]
    assert ea is not None and ea.shape == ta.shape and ea.dtype.name == "float64"
    np.testing.assert_array_equal(eb.numpy(), tb.numpy())


def test_cat_errors_name_tensor_and_dim():
    with pytest.raises(ShapeError, match=r"cat: sizes of tensors must match except in "
                                         r"dimension 0.*size 3 but got size 4 for tensor "
                                         r"number 1"):
        ember.cat([ember.zeros(2, 3), ember.zeros(2, 4)])
    with pytest.raises(ShapeError, match="same number of dimensions"):
        ember.cat([ember.zeros(2, 3), ember.zeros(2, 3, 1)])
    with pytest.raises(ShapeError, match="zero-dimensional tensor"):
        ember.cat([ember.zeros(()), ember.zeros(())])
    with pytest.raises(IndexOutOfRange, match=r"cat: dimension 2 is out of range.*\[-2, 1\]"):
        ember.cat([ember.zeros(2, 3)], dim=2)
    with pytest.raises(ValueError, match="non-empty"):
        ember.cat([])


def test_shape_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(ShapeError, match=r"shape \(4, -1\) is invalid for input of size 6"):
        x.reshape(4, -1)
    with pytest.raises(ShapeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(ShapeError, match="could be any size"):
        ember.zeros(0).reshape(-1, 0)
    with pytest.raises(ShapeError, match="duplicate dims"):
        x.permute(0, 0)
    with pytest.raises(ShapeError, match="2 dimensions"):
        x.permute(0)
    with pytest.raises(ShapeError, match="flip: a dim appears more than once"):
        x.flip((0, -2))  # (NumPy's flip would reverse twice; PyTorch refuses)
    with pytest.raises(IndexOutOfRange, match="squeeze"):
        x.squeeze(5)
    with pytest.raises(IndexOutOfRange, match="unsqueeze"):
        x.unsqueeze(4)
    with pytest.raises(ShapeError, match="stack: expects each tensor to be equal size"):
        ember.stack([ember.zeros(3), ember.zeros(4)])
    with pytest.raises(ShapeError, match="sum to 3"):
        ember.zeros(3).split([1, 1])
    with pytest.raises(IndexOutOfRange, match="exceeds dimension"):
        x.narrow(1, 2, 2)
    with pytest.raises(ShapeError, match="t: expects a tensor with <= 2 dimensions"):
        ember.zeros(2, 3, 4).t()
    with pytest.raises(ShapeError, match="mT: only supported on matrices"):
        _ = ember.zeros(3).mT
    with pytest.raises(ShapeError, match="at least one per dimension"):
        x.repeat(2)
    with pytest.raises(ShapeError, match="tril: input tensor must have at least 2"):
        ember.zeros(3).tril()
    with pytest.raises(ShapeError, match="diagonal dimensions cannot be identical"):
        x.diagonal(0, 1, 1)
    with pytest.raises(ShapeError, match="start_dim .* cannot come after end_dim"):
        x.flatten(1, 0)
    with pytest.raises(ShapeError, match="unflatten"):
        x.unflatten(1, (2, 2))
    with pytest.raises(ValueError, match="chunks to be greater than 0"):
        x.chunk(0)


@pytest.mark.parametrize("sizes, match", [
    ((-1, 2, 3), r"\(-1, 2, 3\): -1 keeps an existing size, so it cannot stand for a new "
                 r"leading dimension \(here the first 1 of 3\)"),
    ((-2, 2, 3), "sizes must be non-negative, or -1 to keep one"),
    ((2, -2), "sizes must be non-negative, or -1 to keep one"),
])
def test_expand_with_negative_sizes_is_a_shape_error_like_torch(sizes, match):
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).expand(*sizes)
    with pytest.raises(ShapeError, match=r"expand: cannot expand shape \(2, 3\) to .*" + match):
        ember.ones(2, 3).expand(*sizes)


def test_broadcast_to_a_negative_size_is_a_shape_error():
    with pytest.raises(ShapeError, match="expand: cannot expand shape"):
        ember.broadcast_to(ember.ones(3), (-1, 3))
    with pytest.raises(ShapeError, match="expand: cannot expand shape"):
        ember.ops.broadcast.expand(ember.ones(3), (-2, 3))


def test_chunk_of_empty_dim_gives_all_chunks():
    assert [c.shape for c in ember.zeros(0, 3).chunk(4)] == [(0, 3)] * 4


def test_integer_and_bool_tensors():
    x = ember.arange(6).reshape(2, 3)
    assert x.flip(1).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert ember.cat([x > 2, x < 1], 1).dtype is ember.bool_
    assert x.roll(1, 1).tolist() == [[2, 0, 1], [5, 3, 4]]
    assert x.repeat(1, 2).tolist() == [[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]]
    assert x.tril().tolist() == [[0, 0, 0], [3, 4, 0]]


def test_tril_zeroes_nan():
    x = ember.full((2, 2), float("nan"))
    assert x.tril().isnan().tolist() == [[True, False], [True, True]]


@pytest.mark.parametrize("module", ["shape", "join", "diagonal", "indexing", "masking", "gather",
                                    "sort", "pad"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    mod = importlib.import_module(f"ember.ops.{module}")
    result = doctest.testmod(mod, extraglobs={"ember": ember, "np": np},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_reshape_takes_the_shape_keyword_as_torch():
    x = ember.arange(6.0).reshape(2, 3)
    t = torch.arange(6.0).reshape(2, 3)
    assert ember.reshape(input=x, shape=(3, 2)).tolist() == \
        torch.reshape(input=t, shape=(3, 2)).tolist()
    assert x.reshape(shape=(-1,)).shape == t.reshape(shape=(-1,)).shape
    with pytest.raises(TypeError, match="given twice"):
        x.reshape(6, shape=(6,))


def test_tile_method_takes_sizes_as_separate_arguments_as_torch():
    x, tx = ember.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    for args in [(2,), (2, 1), ((2, 1),), ([3],)]:
        assert x.tile(*args).tolist() == tx.tile(*args).tolist()
    assert ember.tile(x, dims=(1, 2)).tolist() == torch.tile(tx, dims=(1, 2)).tolist()


def test_an_expand_that_repeats_nothing_is_writable_like_torch():
    # (read-only before, so a module whose position_ids-style buffer is arange(n).expand((1, -1))
    # could not load a state dict: copy_ into it raised)
    for lib in (ember, torch):
        base = lib.arange(4.0)
        view = base.expand((1, -1))
        assert view.stride() == (4, 1)
        view.add_(1)
        assert base.tolist() == [1.0, 2.0, 3.0, 4.0]
        x = lib.arange(4.0, requires_grad=True)
        y = x.clone()
        y.expand(1, 1, -1).mul_(3)
        (y * y).sum().backward()
        assert x.grad.tolist() == [0.0, 18.0, 36.0, 54.0]
        m = lib.nn.Module()
        m.register_buffer("position_ids", lib.arange(4).expand((1, -1)))
        m.load_state_dict({"position_ids": lib.arange(4).view(1, 4) + 1})
        assert m.position_ids.tolist() == [[1, 2, 3, 4]]
    with pytest.raises(RuntimeError, match="add_: cannot write into this tensor"):
        ember.ones(1, 3).expand(2, 3).add_(1)  # (repeats: refused, as torch refuses)


@pytest.mark.parametrize("op, shape", [("flipud", ()), ("fliplr", ()), ("fliplr", (3,))])
def test_flipud_fliplr_refuse_too_few_dims_as_torch(op, shape):
    # opdb51a: flipud of a 0-d tensor returned it (torch: "Input must be >= 1-d"); fliplr of
    # a 1-d tensor named flip's dim 1 instead of its own need
    with pytest.raises(RuntimeError, match="Input must be >="):
        getattr(torch, op)(torch.zeros(shape))
    with pytest.raises(ShapeError, match=f"{op}: input must be at least"):
        getattr(ember, op)(ember.zeros(shape))


@pytest.mark.parametrize("op", ["select", "narrow"])
def test_select_and_narrow_refuse_a_0d_tensor_as_torch(op):
    # select raised Python's bare "tuple index out of range"; narrow a message about slice
    call = {"select": lambda m: m.tensor(1.0).select(0, 0),
            "narrow": lambda m: m.tensor(1.0).narrow(0, 0, 1)}[op]
    with pytest.raises((IndexError, RuntimeError), match="cannot be applied to a 0-dim"):
        call(torch)
    with pytest.raises(IndexOutOfRange, match=f"{op}\\(\\) cannot be applied to a 0-dim"):
        call(ember)


@pytest.mark.parametrize("fn", [
    lambda x: x.view(3, 2), lambda x: x.reshape(6), lambda x: x.flatten(),
    lambda x: x.view_as(x), lambda x: x.reshape(3, 2).view(6),
])
def test_view_like_ops_name_their_grad_fn_as_torch(fn):
    # (repr showed grad_fn=<ReshapeBackward0> for a view, torch's <ViewBackward0>)
    names = []
    for m in (torch, ember):
        x = m.ones(2, 3, requires_grad=True) * 1
        names.append(fn(x).grad_fn.name())
    assert names[1] == names[0]


@pytest.mark.parametrize("fn", [
    lambda x: x.t().reshape(-1), lambda x: x.t().flatten(), lambda x: x[:, ::2].reshape(-1),
    lambda x: x[:1].expand(4, 3).reshape(12), lambda x: x.t().reshape_as(x.reshape(6)),
])
def test_a_reshape_that_copies_names_its_grad_fn_as_torch(fn):
    # review54d item 5: torch's node over the clone is UnsafeViewBackward0 (was ViewBackward0);
    # the gradient is unchanged
    got = []
    for m in (torch, ember):
        x = m.arange(6.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        y = fn(x * 1)
        (y * m.arange(float(y.numel()), dtype=m.float64)).sum().backward()
        got.append((y.grad_fn.name(), y.grad_fn.next_functions[0][0].name(), x.grad.tolist()))
    assert got[1] == got[0]
