"""ember.signal.windows against torch.signal.windows: values, dtypes, arguments and errors."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import assert_same, raises_like_torch

WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}),
           ("exponential", {"tau": 2.5}), ("exponential", {"center": 1.5, "sym": False}),
           ("gaussian", {}), ("gaussian", {"std": 0.7}),
           ("general_cosine", {"a": [0.4, 0.3, 0.3]}), ("general_cosine", {"a": [0.3]}),
           ("general_hamming", {}),
           ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}), ("kaiser", {}),
           ("kaiser", {"beta": 2.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", WINDOWS, ids=str)
@pytest.mark.parametrize("sym", [True, False])
def test_windows_match_torch(name, kw, sym):
    if "center" in kw and sym:
        pytest.skip("center is for periodic windows")
    kw = {"sym": sym, **kw}
    for m in (0, 1, 2, 5, 8):
        for dt in ("float32", "float64"):
            mine = getattr(ember.signal.windows, name)(m, dtype=getattr(ember, dt), **kw)
            ref = getattr(torch.signal.windows, name)(m, dtype=getattr(torch, dt), **kw)
            assert_same(mine, ref, rtol=1e-6, atol=1e-6)


def test_window_arguments_and_errors():
    w = ember.signal.windows
    assert w.hann(3, requires_grad=True).requires_grad
    assert w.gaussian(4).dtype is ember.float32
    raises_like_torch(lambda lib: lib.signal.windows.hann(-1), ValueError,
                      "general_cosine requires non-negative window length")
    raises_like_torch(lambda lib: lib.signal.windows.kaiser(3, dtype=lib.float16), ValueError,
                      "expects float32 or float64")
    raises_like_torch(lambda lib: lib.signal.windows.exponential(3, tau=0), ValueError,
                      "Tau must be positive")
    raises_like_torch(lambda lib: lib.signal.windows.exponential(3, center=1.0), ValueError,
                      "Center must be None for symmetric windows")
    raises_like_torch(lambda lib: lib.signal.windows.gaussian(3, std=-1.0), ValueError,
                      "Standard deviation must be positive")
    raises_like_torch(lambda lib: lib.signal.windows.kaiser(3, beta=-1.0), ValueError,
                      "beta must be non-negative")
    raises_like_torch(lambda lib: lib.signal.windows.general_cosine(3, a=[]), ValueError,
                      "Coefficients cannot be empty")
    raises_like_torch(lambda lib: lib.signal.windows.general_cosine(3, a=1.0), TypeError,
                      "Coefficients must be a list/tuple")
    # a string was read character by character: "could not convert string to float: 'a'"
    # (torch: "too many dimensions 'str'")
    with pytest.raises(TypeError, match="Coefficients must be a list/tuple"):
        w.general_cosine(3, a="0.5")
    # (a plain TypeError, not an ember.errors class naming the op)
    with pytest.raises(ember.errors.ArgumentTypeError, match="general_cosine: Coefficients"):
        w.general_cosine(3, a=1.0)



@pytest.mark.parametrize("name, kw", [("exponential", {"tau": 0}),
                                      ("exponential", {"center": 1.0}),
                                      ("gaussian", {"std": -1.0}), ("kaiser", {"beta": -1.0}),
                                      ("general_cosine", {"a": []})])
def test_window_argument_errors_name_the_window(name, kw):
    # (torch's messages, which name no window, were taken as they are)
    with pytest.raises(ValueError):
        getattr(torch.signal.windows, name)(3, **kw)
    with pytest.raises(ember.errors.ArgumentError, match=f"^{name}: "):
        getattr(ember.signal.windows, name)(3, **kw)


@pytest.mark.parametrize("name,kw", WINDOWS[::3], ids=str)
def test_windows_take_a_strided_layout_as_torch(name, kw):
    # every torch.signal.windows function takes layout= (they raised TypeError on it)
    make = getattr(ember.signal.windows, name)
    kw = {"sym": "center" not in kw, **kw}
    assert_same(make(5, layout=ember.strided, **kw),
                getattr(torch.signal.windows, name)(5, layout=torch.strided, **kw),
                rtol=1e-6, atol=1e-6)
    for bad in (lambda lib: "x", lambda lib: 3, lambda lib: lib.contiguous_format,
                lambda lib: lib.sparse_coo):
        # (a ValueError as torch's for every one: ca559107 made "x", 3 and a memory format a
        # TypeError, as the other factories')
        raises_like_torch(lambda lib, bad=bad: make(5, layout=bad(lib), **kw), ValueError,
                          r"is implemented for strided tensors only, got: .*(x|3|_coo|_format)")


@pytest.mark.parametrize("a", [(0.5, "x"), {"x": 1}, (0.5, "0.5"), (0.5, 0.5j)], ids=str)
def test_general_cosine_refuses_a_coefficient_that_is_no_real_number_as_torch(a):
    # float()'s bare "could not convert string to float: 'x'" (a ValueError), and "0.5" was
    # taken; torch: TypeError "must be real number, not str"
    raises_like_torch(lambda lib: lib.signal.windows.general_cosine(4, a=a), TypeError,
                      r"general_cosine: coefficient a\[\d\] must be a real number, got")


def test_general_cosine_takes_numpy_and_tensor_coefficients_as_torch():
    for lib in (ember, torch):
        out = lib.signal.windows.general_cosine(3, a=[np.float64(0.5), lib.tensor(0.5)],
                                                dtype=lib.float64)
        assert out.tolist() == [0.0, 1.0, 0.0]


def test_window_checks_come_in_torchs_order():
    # M, layout, dtype: a sparse layout with an int dtype named the dtype (torch: the layout)
    raises_like_torch(lambda lib: lib.signal.windows.hann(3, dtype=lib.int64,
                                                          layout=lib.sparse_coo),
                      ValueError, "general_cosine is implemented for strided tensors only")
    with pytest.raises(ValueError, match="strided tensors only"):
        torch.signal.windows.hann(3, dtype=torch.int64, layout=torch.sparse_coo)
    raises_like_torch(lambda lib: lib.signal.windows.hann(-1, dtype=lib.int64,
                                                          layout=lib.sparse_coo),
                      ValueError, "requires non-negative window length")


@pytest.mark.parametrize("name,kw", [("exponential", {"tau": -1.0}),
                                     ("exponential", {"center": 1.0}),
                                     ("gaussian", {"std": -1.0}), ("kaiser", {"beta": -1.0}),
                                     ("general_cosine", {"a": 3}),
                                     ("general_cosine", {"a": []})])
def test_the_length_and_dtype_are_checked_before_the_parameters_as_torch(name, kw):
    # Ember named the bad parameter where torch names the bad length or dtype
    for m, dtype in [(-1, "float32"), (3, "int64")]:
        messages = []
        for lib in (torch, ember):
            with pytest.raises(ValueError) as error:
                getattr(lib.signal.windows, name)(m, dtype=getattr(lib, dtype), **kw)
            messages.append(str(error.value).replace("torch.", ""))
        assert messages[1] == messages[0]


@pytest.mark.parametrize("name,param,value", [("kaiser", "beta", 3.0), ("gaussian", "std", 2.0),
                                              ("exponential", "tau", 0.7)])
@pytest.mark.parametrize("sym", [True, False])
def test_a_tensor_parameter_gets_its_true_gradient(name, param, value, sym):
    # torch's windows drop a tensor parameter's history (its result does not require grad);
    # Ember's follow it, and kaiser's gradient left out I0(beta)'s (the denominator's) part
    window = getattr(ember.signal.windows, name)

    def f(p):
        return window(7, sym=sym, dtype=ember.float64, **{param: p})

    p = ember.tensor(value, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(f, (p,))
    ref = getattr(torch.signal.windows, name)(7, sym=sym, dtype=torch.float64, **{param: value})
    assert_same(f(p).detach(), ref, rtol=1e-12, atol=1e-12)
    if name == "kaiser":  # (the ops window shares the construction)
        assert ember.autograd.gradcheck(
            lambda b: ember.kaiser_window(7, periodic=not sym, beta=b, dtype=ember.float64), (p,))


@pytest.mark.parametrize("beta", [700.0, 1000.0, 5000.0])
@pytest.mark.parametrize("sym", [True, False])
def test_kaiser_with_a_large_beta_is_finite(beta, sym):
    # I0(beta) overflows float64 past beta ~713: the ratio I0(x) / I0(beta) was inf / inf = NaN
    # (torch's too, from beta ~100 in float32); now scaled, it matches a 50-digit reference
    mpmath = pytest.importorskip("mpmath")
    span = 6 if sym else 7
    with mpmath.workdps(50):
        want = [float(mpmath.besseli(0, beta * mpmath.sqrt(1 - mpmath.mpf(2 * n / span - 1) ** 2))
                      / mpmath.besseli(0, beta)) for n in range(7)]
    got = ember.signal.windows.kaiser(7, beta=beta, sym=sym, dtype=ember.float64)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-300)
    if beta == 700.0:  # (where torch's float64 window is still finite)
        want = torch.signal.windows.kaiser(7, beta=beta, sym=sym, dtype=torch.float64)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert bool(ember.kaiser_window(7, periodic=not sym, beta=beta).isfinite().all())
