"""The function forms of ops a nested tensor has as methods (``ember.floor(nt)`` as
``nt.floor()``): the ``out=`` forms hand a tensor-like operand over when the op does not, and the
nested handler falls back to the method of the op's name. Values against torch.nested."""

import pytest
import torch

import ember
from tests.nested.helpers import assert_close, pair

CASES = [
    ("floor", lambda lib, x: lib.floor(x)),
    ("ceil", lambda lib, x: lib.ceil(x)),
    ("trunc", lambda lib, x: lib.trunc(x)),
    ("round", lambda lib, x: lib.round(x)),
    ("neg", lambda lib, x: lib.neg(x)),
    ("negative", lambda lib, x: lib.negative(x)),
    ("sign", lambda lib, x: lib.sign(x)),
    ("sgn", lambda lib, x: lib.sgn(x)),
    ("nan_to_num", lambda lib, x: lib.nan_to_num(x)),
    ("logical_not", lambda lib, x: lib.logical_not(x)),
    ("isnan", lambda lib, x: lib.isnan(x / x.abs().floor())),
    ("isinf", lambda lib, x: lib.isinf(x / x.abs().floor())),
    ("isfinite", lambda lib, x: lib.isfinite(x / x.abs().floor())),
    ("clone", lambda lib, x: lib.clone(x)),
    ("floor_out_of_abs", lambda lib, x: lib.floor(lib.abs(x) * 3)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_function_form_matches_torch(name, fn):
    nt, tnt = pair(inner=(3,))
    assert_close(fn(ember, nt), fn(torch, tnt))


def test_max_and_unbind_function_forms():
    nt, tnt = pair(inner=(3,))
    assert ember.max(nt).item() == pytest.approx(tnt.values().max().item())
    for got, want in zip(ember.unbind(nt), torch.unbind(tnt)):
        assert_close(got, want)


def test_unsupported_function_form_still_says_so():
    nt, _ = pair(inner=(3,))
    with pytest.raises(ember.nested.UnsupportedOpError, match="cumsum: not supported"):
        ember.cumsum(nt, 0)


ACTIVATIONS = ["celu", "elu", "selu", "hardtanh", "relu6", "hardsigmoid", "leaky_relu", "mish",
               "softplus"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_functional_activations_match_torch(name):
    nt, tnt = pair(inner=(3,))
    assert_close(getattr(ember.nn.functional, name)(nt),
                 getattr(torch.nn.functional, name)(tnt), rtol=1e-7)


@pytest.mark.parametrize("name", ["celu_", "elu_", "selu_", "hardtanh_", "leaky_relu_"])
def test_functional_activations_in_place_write_the_values(name):
    nt, tnt = pair(inner=(3,))
    getattr(ember.nn.functional, name)(nt)
    getattr(torch.nn.functional, name)(tnt)
    assert_close(nt, tnt, rtol=1e-7)


def test_functional_activation_gradient_reaches_the_components():
    # (PyTorch's jagged layout has no leaky_relu backward: compared with its dense values')
    nt, tnt = pair(inner=(3,), requires_grad=True)
    ember.nn.functional.leaky_relu(nt, 0.2).values().sum().backward()
    values = tnt.values().detach().requires_grad_()
    torch.nn.functional.leaky_relu(values, 0.2).sum().backward()
    assert_close(nt.grad.values(), values.grad)


# a dense tensor's binary method with a nested operand: the op's hand-over form is bound as the
# method (it refused the nested tensor: "hypot: not supported for nested tensors")
DENSE_METHODS = ["atan2", "arctan2", "hypot", "copysign", "xlogy", "logaddexp", "logaddexp2",
                 "fmax", "fmin", "nextafter", "ldexp", "heaviside", "fmod", "float_power"]


@pytest.mark.parametrize("name", DENSE_METHODS)
def test_dense_binary_method_hands_a_nested_operand_over(name):
    nt, tnt = pair()
    row = [0.5, -1.25, 2.0, 3.5]
    dense, tdense = ember.tensor(row, dtype=ember.float64), torch.tensor(row).double()
    if name == "ldexp":  # (an integer exponent)
        nt, tnt = nt.round(), tnt.round()
    assert_close(getattr(dense, name)(nt), getattr(tdense, name)(tnt))
    assert_close(getattr(dense, name)(nt), getattr(ember, name)(dense, nt))  # the function form


def test_dense_lerp_hands_a_nested_end_over():
    nt, tnt = pair()
    dense, tdense = ember.full((4,), 0.5, dtype=ember.float64), torch.full((4,), 0.5).double()
    assert_close(dense.lerp(nt, 0.25), tdense.lerp(tnt, 0.25))



SPECIAL = [
    ("lgamma", lambda lib, x: lib.lgamma(x)),
    ("digamma", lambda lib, x: lib.digamma(x)),
    ("i0", lambda lib, x: lib.i0(x)),
    ("polygamma", lambda lib, x: lib.polygamma(2, x)),
    ("polygamma_method", lambda lib, x: x.polygamma(1)),
    ("mvlgamma", lambda lib, x: lib.mvlgamma(x, 2)),
    ("mvlgamma_method", lambda lib, x: x.mvlgamma(2)),
    ("special.gammaln", lambda lib, x: lib.special.gammaln(x)),
    ("special.multigammaln", lambda lib, x: lib.special.multigammaln(x, 3)),
    ("special.polygamma", lambda lib, x: lib.special.polygamma(1, x)),
    ("special.psi", lambda lib, x: lib.special.psi(x)),
    ("special.ndtri", lambda lib, x: lib.special.ndtri(1 / x)),
    *((f"special.{n}", lambda lib, x, n=n: getattr(lib.special, n)(x)) for n in (
        "i0e", "i1", "i1e", "entr", "erfcx", "airy_ai", "bessel_j0", "bessel_j1",
        "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
        "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
        "scaled_modified_bessel_k1")),
]


@pytest.mark.parametrize("name,fn", SPECIAL, ids=[c[0] for c in SPECIAL])
def test_special_function_forms_match_torch(name, fn):
    # (they refused a nested tensor: "lgamma: expected a tensor, got NestedTensor", or
    # UnsupportedOpError; torch computes them on the values)
    nt, tnt = pair(inner=(3,))
    nt, tnt = nt.abs() * 0.4 + 1.1, tnt.abs() * 0.4 + 1.1  # (inside every domain)
    assert_close(fn(ember, nt), fn(torch, tnt), rtol=1e-8)


@pytest.mark.parametrize("fn", [lambda lib, x: x.diff(), lambda lib, x: lib.diff(x, 2, -1),
                                lambda lib, x: x.diff(prepend=x * 2, append=x)],
                         ids=["method", "n2", "prepend_append"])
def test_diff_along_an_inner_dim_matches_torch(fn):
    # (UnsupportedOpError before; torch's jagged layout takes it)
    nt, tnt = pair(inner=(4,))
    assert_close(fn(ember, nt), fn(torch, tnt))


def test_diff_refuses_batch_and_ragged_dims():
    nt, _ = pair(inner=(4,))
    for dim in (0, 1):
        with pytest.raises(ember.errors.ArgumentError, match="diff: not supported along"):
            nt.diff(dim=dim)


@pytest.mark.parametrize("fn", [lambda lib, x: x.frexp(), lambda lib, x: lib.frexp(x)])
def test_frexp_gives_nested_mantissa_and_exponent(fn):
    nt, tnt = pair(inner=(3,))
    got, want = fn(ember, nt * 100), fn(torch, tnt * 100)
    assert_close(got.mantissa, want.mantissa)
    assert_close(got.exponent, want.exponent)
    assert got.exponent.dtype == ember.int32
