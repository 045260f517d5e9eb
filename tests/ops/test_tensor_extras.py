"""Tensor methods and torch functions added for PyTorch parity: storage questions and
as_strided, resize_, select/slice_scatter, frexp, legacy new(), apply_/map_, in-place aliases,
asarray, scalar_tensor, unravel_index, the in-place function table, the default device."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import OpCase, S, arg, assert_same, op_tests, raises_like_torch

CASES = [
    OpCase("as_strided", ember.as_strided, torch.as_strided,
           [S(arg(6), size=(2, 2), stride=(1, 2)),
            S(arg(3, 4), size=(3, 3), stride=(1, 1), storage_offset=1),
            S(arg(2, 3), size=(2, 2, 2), stride=(0, 1, 3)), S(arg(4), size=(0, 3), stride=(1, 1))]),
    OpCase("select_scatter", ember.select_scatter, torch.select_scatter,
           [S(arg(3, 4), arg(4), dim=0, index=1), S(arg(3, 4), arg(3), dim=-1, index=-1),
            S(arg(2, 3, 4, noncontig=True), arg(2, 4), dim=1, index=2)]),
    OpCase("slice_scatter", ember.slice_scatter, torch.slice_scatter,
           [S(arg(3, 4), arg(3, 2), dim=1, start=0, end=4, step=2),
            S(arg(5, 2), arg(2, 2), start=-2), S(arg(3, 4), arg(3, 0), dim=1, start=10, end=12),
            S(arg(4, 3, noncontig=True), arg(2, 3), dim=0, start=1, end=3)]),
    OpCase("frexp", ember.frexp, torch.frexp,
           [S(arg(3, 4)), S(arg()), S(arg(0, 2)), S(arg(4, 3, noncontig=True, low=-40, high=40))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def _both(x: np.ndarray) -> tuple:
    return ember.from_numpy(x.copy()), torch.from_numpy(x.copy())


# -- storage -------------------------------------------------------------------------------------
def test_storage_offset_data_ptr_and_strided_views_of_views():
    for lib in (ember, torch):
        x = lib.arange(12.0).reshape(3, 4)
        v = x[1:, 1:]
        assert v.storage_offset() == 5
        assert v.data_ptr() - x.data_ptr() == 5 * x.element_size()
    e, t = _both(np.arange(12.0).reshape(4, 3).T)  # non-contiguous, storage order differs
    assert_same(e[1:].as_strided((2, 3), (1, 2), 0), t[1:].as_strided((2, 3), (1, 2), 0))
    assert_same(e[1:].as_strided((2,), (3,)), t[1:].as_strided((2,), (3,)))


def test_as_strided_gradient_of_a_view_reading_outside_it():
    e, t = _both(np.arange(6.0))
    ge, gt = e.requires_grad_(), t.requires_grad_()
    (ge[2:] * 1).as_strided((3,), (1,), 0).sum().backward()
    (gt[2:] * 1).as_strided((3,), (1,), 0).sum().backward()
    assert_same(ge.grad, gt.grad)


def test_as_strided_is_read_only_and_checks_bounds():
    x = ember.arange(4.0)
    with pytest.raises(ember.GradError, match="view made by as_strided.*read-only"):
        x.as_strided((2,), (1,)).add_(1)
    x.as_strided((2,), (1,))[:1].fill_(1)  # (a fill writes through, as torch's: sweep66f)
    assert x.tolist() == [1.0, 1.0, 2.0, 3.0]
    x.as_strided((2,), (1,)).detach().add_(1)  # (no element shared: written, as torch's)
    assert x.tolist() == [2.0, 2.0, 2.0, 3.0]
    y = ember.arange(4.0, requires_grad=True) * 1  # was a bare view_scatter failure
    with pytest.raises(ember.GradError, match="mul_: cannot write into a view made by as_strided"):
        y.as_strided((2,), (1,)).mul_(2)
    raises_like_torch(lambda lib: lib.arange(4.0).as_strided((2,), (1,), -1), ember.ShapeError,
                      "storage offset must be non-negative, got -1")
    raises_like_torch(lambda lib: lib.arange(4.0).as_strided((3,), (2,)), ember.ShapeError,
                      "need a storage of 5 elements")
    raises_like_torch(lambda lib: lib.arange(4.0).as_strided((3,), (2, 1)), ember.ShapeError,
                      "mismatch in length")


def test_as_strided_under_vmap_and_forward_mode():
    x = ember.arange(12.0).reshape(3, 4)
    out = ember.vmap(lambda r: r.as_strided((2, 2), (1, 1)))(x)
    assert_same(out, torch.arange(12.0).reshape(3, 4).unfold(1, 2, 1)[:, :2])
    # as PyTorch's rule: one view of the batch's memory, sample i moved i batch strides on
    # (was: zeros wherever a view read outside a sample's own elements)
    for fn, in_dims in [(lambda r: r.as_strided((2,), (2,)), 1),
                        (lambda r: r.as_strided((2, 2), (1, 1), 1), 0)]:
        assert_same(ember.vmap(fn, in_dims=in_dims)(x),
                    torch.vmap(fn, in_dims=in_dims)(torch.arange(12.0).reshape(3, 4)))
    with pytest.raises(ember.ShapeError, match="as_strided: .* need a storage of 13"):
        ember.vmap(lambda r: r.as_strided((2,), (1,), 3))(x)
    x = ember.arange(6.0, dtype=ember.float64)
    with pytest.raises(ember.errors.OpError, match="as_strided: under forward mode"):
        ember.func.jvp(lambda v: v[2:].as_strided((2,), (1,), 0), (x,), (ember.ones_like(x),))


# -- resize_ ------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(2, 2), (6,), (2, 3), (0,), (3, 2)])
def test_resize_keeps_storage_order_prefix(size):
    e, t = _both(np.arange(6.0).reshape(2, 3))
    re, rt = e.resize_(*size), t.resize_(*size)
    assert re is e and tuple(re.shape) == tuple(rt.shape)
    assert_same(re, rt)


def test_resize_grows_and_shares_memory_when_shrinking():
    e, t = _both(np.arange(4.0))
    assert_same(e.clone().resize_(2, 3).reshape(-1)[:4], t.clone().resize_(2, 3).reshape(-1)[:4])
    e.resize_(2)
    assert e.data_ptr() == e.resize_as_(ember.zeros(1, 1)).data_ptr()
    raises_like_torch(lambda lib: lib.ones(2, requires_grad=True).resize_(3), ember.GradError,
                      "cannot resize variables that require grad")


def test_resize_growing_past_the_memory_of_views_is_refused():
    # PyTorch moves the storage every view shares; a NumPy view cannot follow its base to new
    # memory, so growing a tensor that shares memory with another would silently split them
    base = ember.arange(4.0)
    view = base[:2]
    with pytest.raises(ember.errors.OpError, match=r"resize_: .*1 other tensor.*clone\(\)"):
        base.resize_(8)
    with pytest.raises(ember.errors.OpError, match="resize_: "):
        view.resize_(6)
    assert view.resize_(3).tolist() == [0.0, 1.0, 2.0]  # within the memory: still shared
    view[0] = 5.0
    assert base[0].item() == 5.0
    del view
    grown = base.resize_(6)  # no other tensor sees the memory now
    assert grown.shape == (6,) and grown[:4].tolist() == [5.0, 1.0, 2.0, 3.0]
    raises_like_torch(lambda lib: (lib.ones(3, requires_grad=True) * 2).resize_(5),
                      ember.GradError, "cannot resize variables that require grad")


def test_resize_grows_a_tensor_reshaped_in_place_when_nothing_else_views_it():
    # t_ and unsqueeze_ leave the tensor's old self in its view record: no other tensor
    for lib in (ember, torch):
        x = lib.arange(6.0).reshape(2, 3)
        x.t_()
        x.unsqueeze_(0)
        assert x.resize_(8).shape == (8,)
        x = lib.arange(4.0)
        view = x[:2]
        del x
        assert view.resize_(5)[:2].tolist() == [0.0, 1.0]
    x = ember.arange(6.0).reshape(2, 3)
    row = x[0]
    x.t_()
    with pytest.raises(ember.errors.OpError, match="resize_: "):
        x.resize_(8)
    assert row.tolist() == [0.0, 1.0, 2.0]


def test_resize_of_a_transposed_tensor_reads_storage_order():
    e, t = _both(np.arange(6.0).reshape(2, 3))
    assert_same(e.t().resize_(4), t.t().resize_(4))


# -- scatter errors ------------------------------------------------------------------------------
def test_scatter_errors():
    raises_like_torch(lambda lib: lib.slice_scatter(lib.zeros(3, 4), lib.ones(3, 3), 1, 0, 4, 2),
                      ember.ShapeError, r"src size = \[3, 3\], slice size = \[3, 2\]")
    for lib in (torch, ember):
        with pytest.raises(IndexError, match="out of range"):
            lib.select_scatter(lib.zeros(3, 4), lib.ones(4), 0, 5)
    raises_like_torch(lambda lib: lib.slice_scatter(lib.zeros(3), lib.ones(1), 0, 0, 3, 0),
                      ember.errors.OpError, "step must be positive")
    def cast(lib):
        return lib.select_scatter(lib.zeros(2, 2), lib.ones(2, dtype=lib.float64), 0, 0)
    assert_same(cast(ember), cast(torch))
    for lib in (torch, ember):
        with pytest.raises(IndexError, match="0-dim tensor"):
            lib.select_scatter(lib.tensor(0.0), lib.tensor(1.0), 0, 0)
        with pytest.raises(IndexError, match="0-dim tensor"):
            lib.slice_scatter(lib.tensor(0.0), lib.tensor(1.0))


# -- methods -------------------------------------------------------------------------------------
def test_questions_and_method_aliases():
    for lib in (ember, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert x.is_cpu and x.get_device() == -1
        assert x.is_same_size(lib.ones(2, 3)) and not lib.is_same_size(x, lib.ones(3))
        assert lib.is_signed(x) and not lib.is_signed(lib.ones(1, dtype=lib.uint8))
    e, t = _both(np.array([-1.0, 0.2, 3.0]))
    assert_same(e.hardshrink(0.5), t.hardshrink(0.5))
    assert_same(e.prelu(e.new_tensor([0.25])), t.prelu(t.new_tensor([0.25])))
    assert_same(e.broadcast_to((2, 3)), t.broadcast_to((2, 3)))


@pytest.mark.parametrize("name,arg", [("divide_", 2.0), ("true_divide_", 4.0), ("multiply_", 3.0),
                                      ("subtract_", 1.5), ("greater_", 0.5),
                                      ("greater_equal_", 1.0), ("less_", 1.0),
                                      ("less_equal_", 1.0), ("not_equal_", 1.0)])
def test_in_place_aliases(name, arg):
    e, t = _both(np.array([0.5, 1.0, 2.0]))
    assert getattr(e, name)(arg) is e
    getattr(t, name)(arg)
    assert_same(e, t)


def test_in_place_alias_keeps_the_graph():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    y = x * 1
    y.multiply_(3.0).subtract_(1.0, alpha=2).sum().backward()
    assert_same(x.grad, torch.tensor([3.0, 3.0], dtype=torch.float64))


def test_new():
    for args in [(), (2, 3), ([1, 2],), ((2, 3),)]:
        assert_same(ember.zeros(1, dtype=ember.int64).new(*args).shape,
                    tuple(torch.zeros(1, dtype=torch.int64).new(*args).shape))
    assert_same(ember.zeros(1).new([[1, 2]]), torch.zeros(1).new([[1, 2]]))
    y = ember.ones(2)
    assert ember.zeros(1).new(y) is y
    raises_like_torch(lambda lib: lib.zeros(1).new(lib.ones(1, dtype=lib.float64)), TypeError,
                      "expected a tensor of dtype float32")
    assert_same(ember.zeros(1).new(np.array([1, 2])), torch.zeros(1).new(np.array([1, 2])))
    raises_like_torch(lambda lib: lib.zeros(1).new(True), TypeError, "got bool")


def test_apply_and_map():
    def run(lib):
        x = lib.arange(6).reshape(2, 3)
        x.apply_(lambda v: v * 2.7)
        y = lib.arange(6.0).reshape(2, 3)
        return x, y.map_(lib.tensor([1.0, 2.0, 3.0]), lambda a, b: a * b)
    assert_same(run(ember), run(torch))
    raises_like_torch(lambda lib: lib.ones(2, requires_grad=True).apply_(abs), ember.GradError,
                      "requires grad")
    raises_like_torch(lambda lib: lib.ones(2).map_(lib.ones(2, requires_grad=True), max),
                      ember.GradError, "requires grad")
    raises_like_torch(lambda lib: lib.ones(2).map_(lib.tensor([1, 2]), max), ember.DTypeError,
                      "self's dtype float32, got int64")


# -- functions -----------------------------------------------------------------------------------
def test_asarray():
    a = np.zeros(3)
    for lib in (ember, torch):
        shared = lib.asarray(a)
        assert shared.data_ptr() == a.ctypes.data
        t = lib.arange(3.0)
        assert lib.asarray(t) is t
        assert lib.asarray(t, copy=True).data_ptr() != t.data_ptr()
        assert lib.asarray(t, dtype=lib.float64).dtype == lib.float64
    assert_same(ember.asarray([1, 2.5]), torch.asarray([1, 2.5]))
    g = ember.arange(3.0, requires_grad=True) * 2
    assert ember.asarray(g) is g and not ember.asarray(g, requires_grad=False).requires_grad
    raises_like_torch(lambda lib: lib.asarray(lib.arange(3.0), dtype=lib.float64, copy=False),
                      ValueError, "can't alias")
    raises_like_torch(lambda lib: lib.asarray([1, 2], copy=False), ValueError, "can't alias")


def test_scalar_tensor_and_unravel_index():
    for s, kw in [(3, {}), (3, {"dtype": "int64"}), (True, {})]:
        kt = {k: getattr(torch, v) for k, v in kw.items()}
        ke = {k: getattr(ember, v) for k, v in kw.items()}
        assert_same(ember.scalar_tensor(s, **ke), torch.scalar_tensor(s, **kt))
    for idx, shape in [([4, 1], (2, 3)), ([-7, 6, -1], (2, 3)), ([[1, 5]], 6), (0, ())]:
        assert_same(ember.unravel_index(ember.tensor(idx), shape),
                    torch.unravel_index(torch.tensor(idx), shape))
    raises_like_torch(lambda lib: lib.unravel_index(lib.tensor([1.0]), (2,)), ember.DTypeError,
                      "integer dtype")
    raises_like_torch(lambda lib: lib.unravel_index(lib.tensor([1]), (2, -1)), ValueError,
                      "negative")
    for shape in [(2.0, 3.0), ember.tensor([2, 3])]:
        with pytest.raises(TypeError, match="'shape' to be an int or a sequence of ints"):
            ember.unravel_index(ember.tensor([1]), shape)


def test_frexp_errors_and_dtypes():
    raises_like_torch(lambda lib: lib.frexp(lib.tensor([1, 2])), ember.DTypeError,
                      "floating-point")
    x = [0.0, float("inf"), float("nan"), -3.0, 1e-30]
    for name in ("float16", "bfloat16", "float64"):
        assert_same(ember.frexp(ember.tensor(x, dtype=getattr(ember, name))),
                    torch.frexp(torch.tensor(x, dtype=getattr(torch, name))))


@pytest.mark.parametrize("name", ["abs_", "sin_", "exp_", "zero_", "sigmoid_", "trunc_"])
def test_in_place_functions(name):
    e, t = _both(np.array([-1.5, 0.25, 2.0]))
    assert getattr(ember, name)(e) is e
    getattr(torch, name)(t)
    assert_same(e, t, rtol=1e-6)
    c, ct = _both(np.array([-1.5, 0.25, 2.0]))
    assert_same(ember.clamp_(c, min=0.0), torch.clamp_(ct, min=0.0))


def test_default_device():
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    assert ember.zeros(1).device == ember.device("cpu")
