"""In-place fills: fill_, zero_, copy_, uniform_, normal_, bernoulli_."""

import math

import numpy as np
import pytest
import torch

import ember
from ember.errors import ValueOverflow
from tests.ops.optable import raises_like_torch, same_as_torch


def _both(fn):
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, requires_grad=True)
    s = ember.tensor([5.0, -1.0], dtype=ember.float64, requires_grad=True)
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    ts = torch.tensor([5.0, -1.0], dtype=torch.float64, requires_grad=True)
    out, ref = fn(x, s), fn(tx, ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    for mine, theirs in [(x.grad, tx.grad), (s.grad, ts.grad)]:
        if theirs is None or mine is None:  # None and zeros both mean "no gradient"
            assert _no_gradient(mine) and _no_gradient(theirs)
        else:
            np.testing.assert_allclose(mine.numpy(), theirs.numpy())


def _no_gradient(g):
    return g is None or not g.numpy().any()


@pytest.mark.parametrize("fn", [
    lambda x, s: (x * 2).fill_(3.0),
    lambda x, s: (x * 2).zero_() + x,
    lambda x, s: (x * 2).copy_(s),                    # broadcast source, gradient to s only
    lambda x, s: (x * 2)[0].copy_(s * 3) * 1,         # through a view
    lambda x, s: _through_base(x, s),
], ids=["fill", "zero", "copy_broadcast", "copy_into_view", "copy_into_view_then_base"])
def test_values_and_gradients_match_torch(fn):
    _both(fn)


def _through_base(x, s):
    y = x * 1
    y[1].copy_(s)
    return y


def test_without_grad_they_write_directly_and_bump_versions():
    x = ember.zeros(2, 3)
    x.fill_(2.5)
    x.copy_(ember.tensor([1, 2, 3]))  # cast to float32
    assert x.dtype is ember.float32 and x._version == 2
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [1, 2, 3]])
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(ember.GradError, match="leaf"):
        w.zero_()
    with ember.no_grad():
        w.zero_()
    assert not w.detach().numpy().any()


def test_fill_value_must_have_one_element():
    with pytest.raises(ValueError, match="one element"):
        ember.zeros(3).fill_(ember.ones(2))
    x = ember.zeros(3).fill_(ember.tensor(4.0))
    np.testing.assert_array_equal(x.numpy(), [4, 4, 4])


@pytest.mark.parametrize("value", [[1.0, 2.0, 3.0], (2.0,), "1", None])
def test_fill_value_that_is_not_a_number_is_refused_as_torch(value):
    # a list was broadcast as copy_ does ([[1, 2, 3], [1, 2, 3]]); torch's parser refuses it
    with pytest.raises(TypeError):
        torch.ones(2, 3).fill_(value)
    with pytest.raises(TypeError, match="fill_.*must be a number"):
        ember.ones(2, 3).fill_(value)


def test_random_fills_have_the_right_moments_and_repeat():
    g = ember.Generator().manual_seed(3)
    u = ember.empty(50_000).uniform_(-2, 4, generator=g).numpy()
    n = ember.empty(50_000).normal_(1.0, 2.0, generator=g).numpy()
    b = ember.empty(50_000).bernoulli_(0.25, generator=g).numpy()
    assert u.min() >= -2 and u.max() < 4 and abs(u.mean() - 1) < 0.05
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    a = ember.empty(4).normal_(generator=ember.Generator().manual_seed(9))
    c = ember.empty(4).normal_(generator=ember.Generator().manual_seed(9))
    np.testing.assert_array_equal(a.numpy(), c.numpy())


@pytest.mark.parametrize("dtype, low, high, match", [
    ("float16", -6e4, 6e4, "to - from = 120000.0 exceeds the largest float16"),  # was inf/NaN
    ("float16", 0.0, 7e4, "to=70000.0 is out of bounds for float16"),
    ("float32", -1e40, 1e40, "from=-1e\\+40 is out of bounds for float32"),  # was NaN
    ("bfloat16", -3e38, 3e38, "exceeds the largest bfloat16"),
    ("complex64", -3e38, 3e38, "exceeds the largest complex64"),
    ("float64", -1e308, 1e308, "to - from = inf exceeds the largest float64"),
    ("float64", math.nan, 1.0, "from=nan is out of bounds"),
])
def test_uniform_refuses_ranges_the_dtype_cannot_span(dtype, low, high, match):
    # the draws are scaled by to - from: past the dtype's largest number they were inf/NaN
    raises_like_torch(lambda m: m.empty(3, dtype=getattr(m, dtype)).uniform_(low, high),
                      ValueError, f"uniform_: .*{match}")
    raises_like_torch(lambda m: m.nn.init.uniform_(m.empty(3, dtype=getattr(m, dtype)), low,
                                                   high), ValueError,
                      f"^nn.init.uniform_: .*{match}")  # (it said "uniform_samples: uniform_:")
    x = ember.empty(1000, dtype=ember.float16).uniform_(-3e4, 3e4)  # the widest it spans
    assert bool(x.isfinite().all())


@pytest.mark.parametrize("op", ["uniform_", "nn.init.uniform_"])
@pytest.mark.parametrize("low, high, error, match", [
    (0, 2 ** 2000, OverflowError, "to is an int of 2001 bits, too large to convert to float"),
    (-2 ** 2000, 0, OverflowError, "from is an int of 2001 bits"),
    (2 ** 1000, 0, ValueError, r".*from=1.0715086071862673e\+301 > to=0,")],
    ids=["to", "from", "order"])
def test_uniform_shows_a_huge_int_bound_in_short_as_torch(op, low, high, error, match):
    # (the message printed every digit: 603 for 2**2000, an OverflowError in PyTorch)
    def fill(m):
        x = m.empty(3, dtype=m.float64)
        return m.nn.init.uniform_(x, low, high) if op != "uniform_" else x.uniform_(low, high)
    with pytest.raises((error, RuntimeError)):
        fill(torch)
    with pytest.raises(error, match=f"^{op}: {match}") as info:
        fill(ember)
    assert len(str(info.value)) < 130  # (the 302 digits of 2**1000 were shown)


OUT_OF_RANGE = [  # a number the integer dtype cannot hold
    (lambda m: m.tensor([1], dtype=m.uint8).fill_(300), "fill_: the value 300 .* uint8"),
    (lambda m: m.tensor([1], dtype=m.uint8).fill_(-256), "fill_"),
    (lambda m: m.tensor([1], dtype=m.uint8).fill_(255.5), "fill_"),
    (lambda m: m.tensor([1], dtype=m.int32).fill_(math.inf), "fill_"),
    (lambda m: m.tensor([1]).fill_(math.nan), "fill_"),
    (lambda m: m.tensor([1]).fill_(2 ** 63), "fill_"),
    (lambda m: m.tensor([1, 2], dtype=m.int8).masked_fill(m.tensor([True, False]), 300),
     "masked_fill: the value 300 .* int8 .* \\[-128, 127\\]"),
    (lambda m: m.tensor([1, 2], dtype=m.int8).masked_fill(m.tensor([False, False]), 300),
     "masked_fill"),
    (lambda m: m.tensor([1], dtype=m.uint8).masked_fill(m.tensor([True]), m.tensor(300)),
     "masked_fill"),
    (lambda m: m.tensor([1], dtype=m.int8).masked_fill(m.tensor([True]), m.tensor(math.nan)),
     "masked_fill"),
    (lambda m: m.where(m.tensor([False]), m.tensor([1], dtype=m.int8), 300), "where"),
    (lambda m: m.where(m.tensor([True]), 300, m.tensor([1], dtype=m.int8)), "where"),
    (lambda m: m.tensor([1], dtype=m.int8).where(m.tensor([True]), -129), "where"),
    (lambda m: m.tensor([1], dtype=m.int8).index_fill(0, m.tensor([0]), 300), "index_fill"),
    (lambda m: m.tensor([1], dtype=m.int8).index_fill(0, m.tensor([0]), m.tensor(300)),
     "index_fill"),
    (lambda m: m.tensor([1], dtype=m.int8).scatter(0, m.tensor([0]), 300), "scatter"),
    (lambda m: m.tensor([1, 2], dtype=m.int16).__setitem__(0, 40000), "__setitem__"),
    (lambda m: m.full((1,), 300, dtype=m.int8), "full: the value 300 .* int8"),
    (lambda m: m.full((1,), -1.0, dtype=m.uint8), "full"),
    (lambda m: m.full((1,), 1e39), "full: the value 1e\\+39 .* float32"),
    (lambda m: m.zeros(2).fill_(-1e39), "fill_: .* float32"),
    (lambda m: m.zeros(2).masked_fill(m.tensor([True, False]), 1e39), "masked_fill"),
    (lambda m: m.zeros(2).__setitem__(0, 1e39), "__setitem__"),
    (lambda m: m.tensor([1, 300], dtype=m.int8), "tensor: the value 300 .* int8"),
    (lambda m: m.tensor([[-1.0], [2.0]], dtype=m.uint8), "tensor: the value -1.0 .* uint8"),
    (lambda m: m.tensor([math.nan], dtype=m.int32), "tensor"),
    (lambda m: m.full((2,), 65520.0, dtype=m.float16), "full: .* float16"),
    (lambda m: m.zeros(2, dtype=m.bfloat16).fill_(1e39), "fill_: .* bfloat16"),
]


@pytest.mark.parametrize("k", range(len(OUT_OF_RANGE)))
def test_numbers_out_of_an_integer_dtype_range_are_refused(k):
    fn, match = OUT_OF_RANGE[k]
    raises_like_torch(fn, ValueOverflow, match)


IN_RANGE = [  # what PyTorch accepts: negatives wrap into unsigned dtypes, floats truncate,
    # tensor values of fill_ wrap, float dtypes take infinities and NaN (PyTorch's one-element
    # fill_ also lets 1e5 round to a float16 infinity, which Ember, like its other paths, refuses)
    lambda m: m.tensor([1], dtype=m.uint8).fill_(-1),
    lambda m: m.tensor([1], dtype=m.uint8).fill_(-255),
    lambda m: m.tensor([1], dtype=m.uint8).fill_(255.0),
    lambda m: m.tensor([1], dtype=m.uint8).fill_(m.tensor(300)),
    lambda m: m.tensor([1], dtype=m.int8).masked_fill(m.tensor([True]), 2.5),
    lambda m: m.tensor([1], dtype=m.uint8).masked_fill(m.tensor([True]), m.tensor(-1)),
    lambda m: m.tensor([True]).masked_fill(m.tensor([True]), 2),
    lambda m: m.where(m.tensor([False]), m.tensor([1], dtype=m.uint8), -1),
    lambda m: m.where(m.tensor([False]), m.tensor([1], dtype=m.int8), 2.5),
    lambda m: m.where(m.tensor([False, True]), 300, 2),
    lambda m: m.tensor([1, 2], dtype=m.int8) + 300,  # arithmetic wraps
    lambda m: m.full((2,), -1, dtype=m.uint8),
    lambda m: m.full((2,), 1.5, dtype=m.int64),
    lambda m: m.full((2,), math.inf),
    lambda m: m.zeros(2).fill_(math.nan),
    lambda m: m.tensor([1e39]),  # (tensor() rounds floats to infinity)
    lambda m: m.tensor([-1, 255], dtype=m.uint8),
]


@pytest.mark.parametrize("k", range(len(IN_RANGE)))
def test_numbers_torch_accepts_are_stored_as_torch_stores_them(k):
    same_as_torch(IN_RANGE[k])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64",
                                   "complex128"])
def test_fills_with_a_number_write_torchs_bits_straight_into_memory(dtype, monkeypatch):
    # a floating tensor needing no history takes the number without a tensor made for it
    # (fails before: as_tensor ran); the bits are torch's, views see them, versions count
    import sys

    fill_module = sys.modules["ember.ops.fill"]
    made = []
    real = fill_module.as_tensor
    monkeypatch.setattr(fill_module, "as_tensor", lambda *a, **k: made.append(1) or real(*a, **k))
    for v in (0, 1, -1, 2.5, 0.1, 1 / 3, -0.0, 1e-8, 3e-8, 65504.0, 2049, 4097.5, float("nan"),
              float("inf"), True):  # (values each dtype holds: overflow is refused, tested above)
        base = ember.ones(3, 4, dtype=getattr(ember, dtype))
        view = base[1]
        view.fill_(v)
        want = torch.ones(3, 4, dtype=getattr(torch, dtype))
        want[1].fill_(v)
        wide = "complex128" if "complex" in dtype else "float64"  # (exact: same bits)
        got = base.to(getattr(ember, wide)).numpy()
        ref = want.to(getattr(torch, wide)).numpy()
        np.testing.assert_array_equal(got, ref, err_msg=str(v))
        assert (np.signbit(got.real) == np.signbit(ref.real)).all(), v
        assert base._version == view._version == 1
        base.zero_()
        assert not base.any() and base._version == 2
    assert made == []
    with ember.no_grad():  # (a history to keep: the general path, with its refusal)
        w = ember.ones(2, requires_grad=True)
    with pytest.raises(ember.errors.GradError, match="leaf"):
        w.fill_(1.0)


@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.float64])
@pytest.mark.parametrize("op", ["fill_", "copy_"])
def test_an_int_beyond_int64_is_refused_and_writes_nothing(dtype, op):
    # (the fast path takes ints in int64's range only; torch refuses these too; review45e R1)
    t = ember.zeros(3, dtype=dtype)
    with pytest.raises((TypeError, ValueError, OverflowError)):
        getattr(t, op)(2**70)
    assert t.tolist() == [0.0, 0.0, 0.0] and t._version == 0


@pytest.mark.parametrize("value, dtype", [(2**63, "uint64"), (2**64 - 1, "uint64"),
                                          (2**63, "float32"), (2**64 - 1, "float32"),
                                          (-2**63, "float32")])
def test_ints_of_the_64_bit_range_fill_as_torch(value, dtype):
    # (torch takes numbers in int64 or uint64; beyond is an OverflowError, above)
    want = torch.zeros(2, dtype=getattr(torch, dtype)).fill_(value)
    got = ember.zeros(2, dtype=getattr(ember, dtype)).fill_(value)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("value", [True, 2.5])
def test_fill_of_an_input_requiring_grad_requires_grad_as_torch(value):
    """fill(x, number) gave a result without grad, so backward through it raised; PyTorch's
    result requires grad and gives x a zero gradient."""
    t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    e = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    rt, re_ = torch.fill(t, value), ember.fill(e, value)
    assert re_.requires_grad and rt.requires_grad
    assert re_.tolist() == rt.tolist()
    rt.sum().backward()
    re_.sum().backward()
    assert e.grad.tolist() == t.grad.tolist() == [0.0, 0.0, 0.0]
    assert ember.autograd.gradcheck(lambda x: ember.fill(x, value), (e,))
    assert not ember.fill(ember.ones(2), value).requires_grad


def test_fill_with_a_value_tensor_gives_both_gradients_as_torch():
    """With a 0-d value requiring grad, x's gradient is zeros (was None: x was left out of the
    graph) and the value's gradient is the sum, as PyTorch's."""
    grads = []
    for lib in (torch, ember):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        v = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        lib.fill(x, v).sum().backward()
        grads.append((x.grad.tolist(), v.grad.item()))
    assert grads[0] == grads[1] == ([0.0, 0.0, 0.0], 3.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "bool",
                                   "complex64", "int64", "uint64"])
@pytest.mark.parametrize("value", [2**63, 2**64 - 1])
def test_setitem_int_past_int64_refused_as_torch(dtype, value):
    """``x[0] = 2**63`` is refused for every dtype, as PyTorch reads the int as a C long long
    (a float tensor stored 9.2e18, a float16 one inf); fill_ and float(v) still write it."""
    t = torch.zeros(2, dtype=getattr(torch, dtype))
    with pytest.raises(ValueError):
        t[0] = value
    e = ember.zeros(2, dtype=getattr(ember, dtype))
    hint = {"bool": "write bool", "int64": "ember.int64 cannot hold it",
            "uint64": "fill_ takes it"}.get(dtype, "write float")
    with pytest.raises(ValueError, match=f"beyond int64.*Hint: {hint}"):  # (as torch's)
        e[0] = value
    with pytest.raises(ember.errors.ValueOverflow):
        e[:] = value
    assert e.tolist() == t.tolist()
    if dtype.startswith("float"):
        e[0] = float(value)
        t[0] = float(value)
        assert e.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64"])
@pytest.mark.parametrize("sign", [1, -1])
def test_int_past_float64_hint_works_and_message_is_short(dtype, sign):
    """``x[0] = 10**400`` and ``full(.., 10**400)``: the hint was ``float(<the int>)``, which
    itself raises OverflowError, and the message printed the 401-digit int twice (932
    characters). Now the int is shown by its digit count and the hint is an infinity of its
    sign, which both libraries then write."""
    value = sign * 10**400
    inf = "float('-inf')" if sign < 0 else "float('inf')"
    e = ember.zeros(2, dtype=getattr(ember, dtype))
    for f in (lambda: e.__setitem__(0, value), lambda: ember.full((2,), value)):
        with pytest.raises(ember.errors.ValueOverflow) as info:  # (x[0] =: a ValueError too)
            f()
        message = str(info.value)
        assert len(message) < 300 and "(401 digits)" in message
        assert message.endswith(f"{inf} if an infinity is meant")
    e[0] = float(sign * math.inf)
    t = torch.zeros(2, dtype=getattr(torch, dtype))
    t[0] = float(sign * math.inf)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64"])
@pytest.mark.parametrize("sign", [1, -1])
def test_fill_of_an_int_past_float64_is_refused_with_the_infinity_hint(dtype, sign):
    """``x.fill_(10**400)`` raised Python's bare 'int too large to convert to float' from the
    range check's ``math.isinf``; now a ValueOverflow (an OverflowError, as torch's) naming
    fill_, the int by its digit count, and the infinity of its sign as the hint."""
    t = torch.zeros(3, dtype=getattr(torch, dtype))
    with pytest.raises(OverflowError):
        t.fill_(sign * 10**400)
    inf = "float('-inf')" if sign < 0 else "float('inf')"
    e = ember.zeros(3, dtype=getattr(ember, dtype))
    with pytest.raises(ValueOverflow, match=r"^fill_: .*\(401 digits\).*Hint: .*") as info:
        e.fill_(sign * 10**400)
    assert str(info.value).endswith(f"{inf} if an infinity is meant")
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("shape", [(3,), ()])
def test_copy_of_a_leaf_of_the_same_shape_passes_its_gradient_as_torch(shape):
    # copy_ of a leaf needing no cast or broadcast made the written tensor a leaf of its own
    # (requires_grad, no grad_fn): src's gradient was silently lost (sweep62h)
    def run(m):
        src = m.full(shape, 2.0, dtype=m.float64, requires_grad=True)
        y = m.zeros(shape, dtype=m.float64).copy_(src)
        (y * 3).sum().backward()
        return type(y.grad_fn).__name__ if m is torch else y.grad_fn.name(), src.grad

    (name, grad), (ref_name, ref) = run(ember), run(torch)
    assert name == ref_name == "CopyBackwards"
    np.testing.assert_allclose(grad.numpy(), ref.numpy())


@pytest.mark.parametrize("src_grad", [True, False])
@pytest.mark.parametrize("src_shape", [(3,), ()])
def test_copy_into_a_tensor_with_history_gives_it_a_zero_gradient_as_torch(src_grad, src_shape):
    # with src needing a gradient, the old history of the written tensor was dropped: the
    # leaf's gradient was None where torch's CopyBackwards gives zeros (review62 item 4)
    def run(m):
        leaf = m.ones(3, dtype=m.float64, requires_grad=True)
        src = m.full(src_shape, 2.0, dtype=m.float64, requires_grad=src_grad)
        a = leaf.clone()
        a.copy_(src)
        (a * 3).sum().backward()
        name = type(a.grad_fn).__name__ if m is torch else a.grad_fn.name()
        return name, leaf.grad, src.grad

    (name, leaf, src), (ref_name, ref_leaf, ref_src) = run(ember), run(torch)
    assert name == ref_name == "CopyBackwards"
    np.testing.assert_array_equal(leaf.numpy(), ref_leaf.numpy())
    assert (src is None) == (ref_src is None)
    if ref_src is not None:
        np.testing.assert_array_equal(src.numpy(), ref_src.numpy())
