"""Complex dtypes and ops: promotion, printing, conversions, parts and views, and gradients of
real losses through complex ops, all against PyTorch; errors for ops complex numbers lack."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.func.batching import missing
from tests.ops.optable import OpCase, S, arg, op_tests

RNG = np.random.default_rng(0)
Z = RNG.normal(size=(2, 3)) + 1j * RNG.normal(size=(2, 3))
W = RNG.normal(size=(2, 3)) + 1j * RNG.normal(size=(2, 3))


def same(mine, ref, atol=1e-6):
    """Same dtype, shape and values (complex parts too) as PyTorch's tensor."""
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch."), (mine.dtype, ref.dtype)
    assert tuple(mine.shape) == tuple(ref.shape)
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().resolve_conj().numpy(),
                               atol=atol, rtol=1e-5)


# -- dtypes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "int32", "bool",
                                  "uint8", "complex64", "complex128"])
@pytest.mark.parametrize("other", [1j, 2.5, 3, torch.tensor(1j, dtype=torch.complex128),
                                   torch.tensor(1.0, dtype=torch.float64)], ids=str)
def test_result_type_with_complex_matches_torch(name, other):
    t = torch.zeros(2, dtype=getattr(torch, name))
    e = ember.zeros(2, dtype=getattr(ember, name))
    e_other = ember.tensor(other.numpy()) if isinstance(other, torch.Tensor) else other
    if name == "bfloat16" and isinstance(other, complex):
        pytest.skip("PyTorch has no complex dtype for bfloat16 parts")
    ref = str(torch.result_type(t, other)).removeprefix("torch.")
    # PyTorch's complex32 (float16 parts) does not exist in Ember: complex64 stands for it
    assert ember.result_type(e, e_other).name == ref.replace("complex32", "complex64")


def test_default_complex_dtype_follows_the_default_float():
    assert ember.tensor([1j]).dtype is ember.complex64
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1j]).dtype is ember.complex128
        assert ember.result_type(ember.zeros(2, dtype=ember.int32), 1j) is ember.complex128
        assert ember.result_type(ember.zeros(2, dtype=ember.float32), 1j) is ember.complex64
    finally:
        ember.set_default_dtype(ember.float32)


def test_dtype_queries_and_aliases():
    z = ember.tensor([1 + 2j])
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    assert z.is_complex() and ember.is_complex(z) and not z.is_floating_point()
    assert not ember.ones(1).is_complex()
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert ember.complex64.to_real() is ember.float32
    assert ember.float64.to_complex() is ember.complex128
    assert ember.complex128.itemsize == 16
    assert ember.finfo(ember.complex64) == ember.finfo(ember.float32)
    assert ember.finfo(ember.complex128).eps == torch.finfo(torch.complex128).eps
    assert ember.can_cast(ember.float32, ember.complex64)
    assert not ember.can_cast(ember.complex64, ember.float64)


@pytest.mark.parametrize("data", [[1.0 + 2j, 3 - 1j], [1.5 + 2j, 3 - 1j], 1j, [[1e5 + 1j]],
                                  [[1 - 1j, 0.25j], [1e-5, -3]], [complex("nan+infj"), 0j],
                                  [0j, -0.0 - 0.0j], [k + 0j for k in range(1200)],
                                  [[k * 1e3 + 1j for k in range(8)]] * 3],
                         ids=lambda data: str(data)[:40])
def test_repr_matches_torch(data):
    assert repr(ember.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "ember.")


def test_repr_of_complex128_and_empty():
    assert repr(ember.tensor([1j], dtype=ember.complex128)) == \
        "tensor([0.+1.j], dtype=ember.complex128)"
    assert repr(ember.zeros(0, dtype=ember.cfloat)) == "tensor([], dtype=ember.complex64)"


# -- making, reading and converting --------------------------------------------------------------
def test_numpy_round_trips_share_memory():
    a = Z.astype(np.complex64)
    t = ember.from_numpy(a)
    assert t.dtype is ember.complex64 and t.numpy() is a
    assert ember.tensor(Z).dtype is ember.complex128
    assert ember.tensor(Z).tolist() == Z.tolist()
    assert ember.tensor(2 + 3j).item() == 2 + 3j and complex(ember.tensor([1j])) == 1j


def test_casts_to_real_warn_and_keep_the_real_part_as_torch():
    z = ember.tensor([1.5 + 2j])
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert z.float().tolist() == [1.5]
    with pytest.warns(UserWarning):
        assert z.to(ember.int64).tolist() == [1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.to(ember.complex128).dtype is ember.complex128
        assert ember.ones(2).to(ember.cfloat).tolist() == [1 + 0j, 1 + 0j]
        assert ember.ones(2, dtype=ember.int64).cdouble().dtype is ember.complex128


def test_complex_and_polar_match_torch():
    x, y = RNG.normal(size=3), RNG.uniform(-3, 3, size=3)
    for lib_dtype in ("float32", "float64"):
        e = [ember.tensor(v).to(getattr(ember, lib_dtype)) for v in (x, y)]
        t = [torch.tensor(v).to(getattr(torch, lib_dtype)) for v in (x, y)]
        same(ember.complex(*e), torch.complex(*t))
        same(ember.polar(*e), torch.polar(*t))
    same(ember.complex(ember.ones(2, 1), ember.zeros(3)),
         torch.complex(torch.ones(2, 1), torch.zeros(3)))


def test_complex_refuses_mixed_or_integer_parts():
    with pytest.raises(ember.DTypeError, match="float32 or float64"):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ember.DTypeError, match="float32 or float64"):
        ember.complex(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))


@pytest.mark.parametrize("fn", ["real", "imag", "conj", "conj_physical", "angle", "abs", "sgn",
                                "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid",
                                "reciprocal", "isnan", "isfinite", "isreal", "nan_to_num"])
def test_elementwise_values_match_torch(fn):
    data = np.concatenate([Z.reshape(-1), [0j, complex("nan+1j"), complex("inf-2j")]])
    same(getattr(ember, fn)(ember.tensor(data)), getattr(torch, fn)(torch.tensor(data)))


def test_real_inputs_of_complex_functions_match_torch():
    x = np.array([-2.0, -0.0, 0.0, 3.0, np.nan])
    for fn in ("real", "conj", "angle", "sgn", "isreal"):
        same(getattr(ember, fn)(ember.tensor(x)), getattr(torch, fn)(torch.tensor(x)))
    same(ember.angle(ember.tensor([-1, 2])), torch.angle(torch.tensor([-1, 2])))
    with pytest.raises(ember.DTypeError, match="imag: not defined for float32"):
        ember.imag(ember.ones(2))
    assert ember.ones(2).conj().is_conj() is False


def test_conj_is_physical():
    z = ember.tensor(Z)
    c = z.conj()
    assert not c.is_conj() and c.resolve_conj() is c and z.conj_physical().tolist() == c.tolist()
    c.mul_(2)  # a copy: z does not change (PyTorch's lazy conj would write through)
    assert z.tolist() == Z.tolist()


def test_conjugate_transposes_match_torch():
    for name in ("mH", "H"):
        same(getattr(ember.tensor(Z), name), getattr(torch.tensor(Z), name))
    same(ember.adjoint(ember.tensor(Z)), torch.adjoint(torch.tensor(Z)))
    x = ember.ones(2, 3)
    assert x.mH._view is not None  # a real tensor's is still a view


@pytest.mark.parametrize("name", ["T", "H", "mT", "mH", "adjoint"])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_transpose_properties_on_any_rank_match_torch(name, shape):
    """mT, mH and adjoint() of a 0-d tensor raised; PyTorch gives it back (conjugated for mH),
    with a deprecation warning. The other ranks: the same result or both refuse."""
    z = (np.arange(1.0, 1.0 + np.prod(shape)) * (1 + 2j)).reshape(shape)
    results = []
    for m in (torch, ember):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                x = m.tensor(z)
                out = x.adjoint() if name == "adjoint" else getattr(x, name)
                results.append(np.asarray(out.resolve_conj().numpy() if m is torch
                                          else out.numpy()).tolist())
            except RuntimeError:  # (Ember's ShapeError is a RuntimeError too)
                results.append("refused")
        results.append(any("deprecated on 0-D" in str(w.message) for w in seen))
    assert results[:2] == results[2:] if name != "T" or len(shape) < 3 else \
        results[0] == results[2]


# -- views ---------------------------------------------------------------------------------------
def test_real_and_imag_are_views_that_write_through():
    z = ember.tensor(Z)
    r, i = z.real, z.imag
    assert r.dtype is ember.float64 and r._version == z._version
    r.mul_(2)
    i[0, 0] = 7.0
    expected = Z.real * 2 + 1j * Z.imag
    expected[0, 0] = expected[0, 0].real + 7j
    np.testing.assert_array_equal(z.numpy(), expected)
    z.real = ember.zeros(2, 3, dtype=ember.float64)
    assert not z.real.numpy().any()


def test_view_as_real_and_complex_share_memory():
    z = ember.tensor(Z)
    pairs = ember.view_as_real(z)
    assert pairs.shape == (2, 3, 2)
    pairs[..., 1] = 0.0
    assert not z.imag.numpy().any()
    back = ember.view_as_complex(pairs)
    back.add_(1j)
    np.testing.assert_array_equal(z.imag.numpy(), np.ones((2, 3)))
    same(ember.view_as_real(ember.tensor(Z).t()), torch.view_as_real(torch.tensor(Z).t()))
    same(ember.view_as_real(ember.tensor(1 + 2j)), torch.view_as_real(torch.tensor(1 + 2j)))


def test_view_as_complex_errors_like_torch():
    with pytest.raises(ember.ShapeError, match="last dimension of size 2"):
        ember.view_as_complex(ember.ones(3, 4))
    with pytest.raises(ember.ShapeError, match="stride 1"):
        ember.view_as_complex(ember.ones(2, 3).t())
    with pytest.raises(ember.DTypeError, match="float32 or float64"):
        ember.view_as_complex(ember.ones(3, 2, dtype=ember.int64))
    with pytest.raises(ember.DTypeError, match="expects a complex tensor"):
        ember.view_as_real(ember.ones(3))


def test_gradients_flow_through_writes_into_views():
    x = ember.tensor(Z, requires_grad=True)
    y = x * 1
    y.imag.mul_(3)
    (y.abs() ** 2).sum().backward()
    tx = torch.tensor(Z, requires_grad=True)
    ty = tx * 1
    ty.imag.mul_(3)
    (ty.abs() ** 2).sum().backward()
    same(x.grad, tx.grad)


# -- gradients of real losses --------------------------------------------------------------------
LOSSES = {
    "mul": lambda z, w, m: (z * w).real.sum(),
    "div": lambda z, w, m: (z / w).imag.sum() + (2 / z).real.sum(),
    "add_sub_neg": lambda z, w, m: (z + w - (-z) * 2 - 1j).abs().sum(),
    "exp_abs": lambda z, w, m: m.exp(z).abs().sum(),
    "log": lambda z, w, m: m.view_as_real(m.log(z)).sum(),
    "sqrt": lambda z, w, m: (m.sqrt(z) * w).abs().sum(),
    "pow": lambda z, w, m: (z ** 3 + z ** 0.5 + z ** -1.5).real.sum(),
    "trig": lambda z, w, m: (m.sin(z) + m.cos(w) + m.tanh(z) + m.sigmoid(w)).imag.sum(),
    "angle": lambda z, w, m: m.angle(z * w).sum(),
    "conj": lambda z, w, m: (z.conj().resolve_conj() * w).real.sum(),
    "sum_mean": lambda z, w, m: (z * z).mean().abs() + (z.sum(0) * w[0]).real.sum(),
    "matmul": lambda z, w, m: (z @ w.mT).abs().sum() + (z[0] @ w[1]).real,
    "einsum": lambda z, w, m: m.einsum("ij,kj->ik", z, w).abs().sum(),
    "parts": lambda z, w, m: m.complex(z.real, w.imag).abs().sum() + m.polar(z.abs(),
                                                                               w.real).imag.sum(),
    "shape_ops": lambda z, w, m: (m.cat([z[:, 1:], w[:, :1]], 1).abs().sum()
                                  + m.stack([z, w]).transpose(0, 2).reshape(-1)[::2].sum().real
                                  + m.where(z.real > 0, z, w).abs().sum()),
    "real_to_complex": lambda z, w, m: ((z.abs() + 0j) * w).real.sum() + (z.real * 2).sum(),
    "sgn": lambda z, w, m: (z.sgn() * w).real.sum(),
    "view_as_complex": lambda z, w, m: (m.view_as_complex(m.view_as_real(z) * 2) * w).abs().sum(),
}


@pytest.mark.parametrize("name", LOSSES)
def test_gradients_of_real_losses_match_torch(name):
    grads = {}
    for lib in (torch, ember):
        z, w = (lib.tensor(v, requires_grad=True) for v in (Z, W))
        loss = LOSSES[name](z, w, lib)
        loss.backward()
        grads[lib] = (loss, z.grad, w.grad)
    (lt, *tg), (le, *eg) = grads[torch], grads[ember]
    np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-10)
    for mine, ref in zip(eg, tg):
        if ref is None:
            assert mine is None or not mine.numpy().any()
        else:
            same(mine, ref, atol=1e-10)


def test_abs_and_angle_at_zero_have_torch_gradients():
    for fn in ("abs", "angle", "sgn"):
        z = ember.tensor([0j, 1 + 1j], requires_grad=True)
        t = torch.tensor([0j, 1 + 1j], requires_grad=True)
        ember.view_as_real(getattr(ember, fn)(z) + 0j).sum().backward()
        torch.view_as_real(getattr(torch, fn)(t) + 0j).sum().backward()
        same(z.grad, t.grad)


def test_real_leaf_of_a_complex_graph_gets_a_real_gradient():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * (1 + 2j)).abs().sum().backward()
    assert x.grad.dtype is ember.float32
    np.testing.assert_allclose(x.grad.numpy(), [5 ** 0.5] * 2, rtol=1e-6)


def test_backward_of_a_complex_scalar_needs_a_gradient():
    z = ember.tensor([1j], requires_grad=True)
    with pytest.raises(ember.GradError, match="real scalar"):
        z.sum().backward()
    z.sum().backward(ember.tensor(1 + 0j))
    assert z.grad.tolist() == [1 + 0j]


def test_ops_without_complex_gradient_rules_refuse_to_record():
    z = ember.tensor([[1 + 1j]], requires_grad=True)  # (PyTorch refuses this gradient too)
    with pytest.raises(ember.DTypeError, match="embedding: gradients through complex tensors"):
        ember.nn.functional.embedding(ember.tensor([0]), z)
    with ember.no_grad():
        same(ember.nn.functional.embedding(ember.tensor([0]), z),
             torch.nn.functional.embedding(torch.tensor([0]), torch.tensor([[1 + 1j]])))


# -- ops complex numbers do not have ---------------------------------------------------------------
UNSUPPORTED = {
    "lt": lambda z: z < z, "gt": lambda z: ember.gt(z, 0), "le": lambda z: z <= z,
    "ge": lambda z: z >= 1, "maximum": lambda z: ember.maximum(z, z),
    "amax": lambda z: z.max(), "amin": lambda z: ember.amin(z, 0), "max_dim": lambda z: z.max(0),
    "argmax": lambda z: z.argmax(), "argsort": lambda z: z.sort(), "topk": lambda z: z.topk(1),
    "cummax": lambda z: z.cummax(0), "relu": lambda z: z.relu(), "clamp": lambda z: z.clamp(0),
    "floor": lambda z: z.floor(), "ceil": lambda z: z.ceil(), "round": lambda z: z.round(),
    "trunc": lambda z: z.trunc(), "frac": lambda z: z.frac(), "sign": lambda z: z.sign(),
    "signbit": lambda z: z.signbit(), "isposinf": lambda z: z.isposinf(),
    "leaky_relu": lambda z: ember.nn.functional.leaky_relu(z),
    "hardtanh": lambda z: ember.nn.functional.hardtanh(z),
    "searchsorted": lambda z: ember.searchsorted(z, z),
    # real-only kernels that used to drop the imaginary part silently
    "lgamma": lambda z: z.lgamma(), "digamma": lambda z: z.digamma(),
    "polygamma": lambda z: ember.polygamma(1, z), "mvlgamma": lambda z: ember.mvlgamma(z, 2),
    "i0": lambda z: z.i0(), "i1": lambda z: ember.special.i1(z), "erfc": lambda z: z.erfc(),
    "erfinv": lambda z: z.erfinv(), "atan2": lambda z: ember.atan2(z, z),
    "xlogy": lambda z: ember.xlogy(z, 2.0), "copysign": lambda z: ember.copysign(1.0, z),
    "heaviside": lambda z: ember.heaviside(z, z), "ndtr": lambda z: ember.special.ndtr(z),
    "unique": lambda z: ember.unique(z),  # (NumPy sorts complex numbers lexicographically)
}


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_ops_raise_a_clear_error(name):
    with pytest.raises(ember.DTypeError, match="complex64 tensors are not supported.*Hint"):
        UNSUPPORTED[name](ember.tensor([1 + 2j, 3 - 1j]))


def test_backend_failures_on_complex_inputs_explain_themselves():
    with pytest.raises(ember.DTypeError, match="complex64 tensors are not supported"):
        ember.erf(ember.tensor([1j]))


# -- transforms ------------------------------------------------------------------------------------
def test_every_complex_primitive_batches():
    assert missing() == []


def test_vmap_of_complex_ops_matches_a_loop():
    z = ember.tensor(Z)

    def f(t):
        u = t.clone()
        u.real.mul_(2)
        return (u.imag * ember.angle(t) + ember.view_as_complex(
            ember.view_as_real(t.conj()) * 2).abs() + ember.complex(t.real, t.imag).real).sum()

    np.testing.assert_allclose(ember.vmap(f)(z).numpy(), [f(t).item() for t in z])


# -- real-to-real compositions: forward, backward, gradcheck, gradgradcheck, jvp ----------------
def _torch_complex(x, y):
    return torch.complex(x, y)


CASES = [
    OpCase("complex_mul_parts",
           lambda x, y: ember.view_as_real(ember.complex(x, y) * ember.complex(y, x)),
           lambda x, y: torch.view_as_real(_torch_complex(x, y) * _torch_complex(y, x)),
           [S(arg(2, 3), arg(2, 3))]),
    OpCase("complex_div_exp_log",
           lambda x, y: ember.view_as_real(ember.log(ember.exp(ember.complex(x, y)) / 2 + 3)),
           lambda x, y: torch.view_as_real(torch.log(torch.exp(_torch_complex(x, y)) / 2 + 3)),
           [S(arg(4), arg(4))]),
    OpCase("complex_abs_angle",
           lambda x, y: ember.abs(ember.complex(x, y)) + ember.angle(ember.complex(x, y)),
           lambda x, y: torch.abs(_torch_complex(x, y)) + torch.angle(_torch_complex(x, y)),
           [S(arg(5, low=0.5), arg(5))]),
    OpCase("complex_sqrt_pow_matmul",
           lambda x, y: ember.view_as_real(ember.sqrt(ember.complex(x, y) ** 2 + 4)
                                           @ ember.complex(y, x).mT),
           lambda x, y: torch.view_as_real(torch.sqrt(_torch_complex(x, y) ** 2 + 4)
                                           @ _torch_complex(y, x).mT),
           [S(arg(2, 3), arg(2, 3))]),
    OpCase("complex_conj_mean_sum",
           lambda x, y: ember.view_as_real((ember.complex(x, y).conj() * ember.complex(y, y))
                                           .mean(0) + ember.complex(x, y).sum()),
           lambda x, y: torch.view_as_real((_torch_complex(x, y).conj() * _torch_complex(y, y))
                                           .mean(0) + _torch_complex(x, y).sum()),
           [S(arg(3, 2), arg(3, 2))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_jit_compiles_complex_ops_and_their_gradients():
    def f(x, y):
        z = ember.complex(x, y)
        w = z * z.exp() / (z + 2)
        return (w.abs() + ember.angle(w) + ember.view_as_real(w.conj()).sum(-1) + w.imag).sum()

    x, y = (ember.tensor(RNG.normal(size=(3, 4)), requires_grad=True) for _ in range(2))
    assert ember.jit.compile(f)(x, y).item() == pytest.approx(f(x, y).item(), rel=1e-12)
    eager = ember.func.grad(f, argnums=(0, 1))
    for mine, ref in zip(ember.jit.compile(eager)(x, y), eager(x, y)):
        np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), atol=1e-12)


# -- review: silent wrong answers ----------------------------------------------------------------
def test_vdot_conjugates_its_first_argument():
    same(ember.vdot(ember.tensor(Z[0]), ember.tensor(W[0])),
         torch.vdot(torch.tensor(Z[0]), torch.tensor(W[0])))


def test_truth_of_a_complex_number_looks_at_both_parts():
    z = np.array([1j, 0j, 1 + 0j, -0.0 + 0j])
    e, t = ember.tensor(z), torch.tensor(z)
    same(e.bool(), t.bool())
    same(ember.logical_not(e), torch.logical_not(t))
    same(ember.logical_and(e, e), torch.logical_and(t, t))
    same(ember.count_nonzero(e), torch.count_nonzero(t))
    assert bool(ember.any(e[:1])) and bool(e[0])


def test_isclose_and_allclose_compare_both_parts():
    a, b = np.array([1 + 0j, 2 + 1j]), np.array([1 + 1e-3j, 2 + 1j])
    same(ember.isclose(ember.tensor(a), ember.tensor(b)), torch.isclose(torch.tensor(a),
                                                                        torch.tensor(b)))
    assert not ember.allclose(ember.tensor(a), ember.tensor(b))


def test_eq_and_ne_with_a_python_complex_scalar():
    same(ember.tensor(Z) == complex(Z[0, 0]), torch.tensor(Z) == complex(Z[0, 0]))
    same(ember.tensor(Z) != complex(Z[0, 0]), torch.tensor(Z) != complex(Z[0, 0]))


def test_cov_conjugates_the_second_factor():
    same(ember.cov(ember.tensor(Z)), torch.cov(torch.tensor(Z)))
    w = np.array([1.0, 2.0, 0.5])
    same(ember.cov(ember.tensor(Z), aweights=ember.tensor(w)),
         torch.cov(torch.tensor(Z), aweights=torch.tensor(w)))


def test_float_power_and_ldexp_keep_the_imaginary_part():
    e, t = ember.tensor(Z), torch.tensor(Z)
    same(ember.float_power(e, 2), torch.float_power(t, 2))
    base = [2.0, 3.0]
    same(ember.float_power(ember.tensor(base), 1j), torch.float_power(torch.tensor(base), 1j))
    same(ember.ldexp(e, ember.tensor([1, -2, 3])), torch.ldexp(t, torch.tensor([1, -2, 3])))


def test_linspace_between_complex_ends():
    same(ember.linspace(0, 1 + 1j, 3), torch.linspace(0, 1 + 1j, 3))
    same(ember.linspace(1j, 2, 4, dtype=ember.complex128),
         torch.linspace(1j, 2, 4, dtype=torch.complex128))


@pytest.mark.parametrize("fn", [
    lambda m, z: m.linalg.vector_norm(z), lambda m, z: m.linalg.vector_norm(z, 1, dim=1),
    lambda m, z: m.linalg.vector_norm(z, float("inf")), lambda m, z: z.norm(dim=0),
    lambda m, z: m.norm(z, p=3), lambda m, z: m.dist(z, z[:1] * 2),
], ids=["l2", "l1_dim", "inf", "norm_dim", "norm_p3", "dist"])
def test_vector_norms_of_complex_tensors_take_the_modulus(fn):
    zero_at = Z.copy()
    zero_at[0, 1] = 0
    e = ember.tensor(zero_at, requires_grad=True)
    t = torch.tensor(zero_at, requires_grad=True)
    mine, ref = fn(ember, e), fn(torch, t)
    same(mine, ref)
    mine.sum().backward()
    ref.sum().backward()
    same(e.grad, t.grad)


@pytest.mark.parametrize("fn", [
    lambda m, z: m.var(z), lambda m, z: m.std(z, 1, correction=0),
    lambda m, z: m.var_mean(z, 0)[0] + m.var_mean(z, 0)[1].abs(), lambda m, z: m.std_mean(z)[0],
], ids=["var", "std_dim", "var_mean", "std_mean"])
def test_var_and_std_of_complex_tensors_sum_squared_moduli(fn):
    e, t = ember.tensor(Z, requires_grad=True), torch.tensor(Z, requires_grad=True)
    mine, ref = fn(ember, e), fn(torch, t)
    same(mine, ref)
    mine.sum().backward()
    ref.sum().backward()
    same(e.grad, t.grad)


def test_vander_keeps_complex_values():
    same(ember.vander(ember.tensor(Z[0]), 3), torch.vander(torch.tensor(Z[0]), 3))


@pytest.mark.parametrize("write", [
    lambda m: m.zeros(3).__setitem__(0, 1j), lambda m: m.zeros(3).fill_(1j),
    lambda m: m.zeros(3).masked_fill(m.tensor([True, False, True]), 2j),
    lambda m: m.full((2,), 1j, dtype=m.float32), lambda m: m.zeros(2).new_full((2,), 1 + 1j),
    lambda m: m.tensor([1j], dtype=m.float32),
], ids=["setitem", "fill_", "masked_fill", "full", "new_full", "tensor"])
def test_a_complex_number_does_not_fit_a_real_tensor(write):
    with pytest.raises((RuntimeError, TypeError)):
        write(torch)
    with pytest.raises(ember.DTypeError, match="imaginary"):
        write(ember)
    t = ember.zeros(2)
    t[0] = 1 + 0j  # a zero imaginary part fits, as in PyTorch
    assert t.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Rprop"])
def test_optimizers_step_complex_parameters_as_pairs_of_reals(name):
    """PyTorch steps a complex parameter as view_as_real: each part on its own."""
    kw = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    out = []
    for m in (torch, ember):
        p = m.tensor(Z[0].copy(), requires_grad=True)
        opt = getattr(m.optim, name)([p], **kw)
        for _ in range(3):
            opt.zero_grad()
            ((p * p.conj()).real.sum() + (p.imag ** 3).sum()).backward()
            opt.step()
        out.append(p)
    same(out[1], out[0])


def test_gradient_of_complex_samples_and_coordinates_as_torch():
    z = ember.tensor([[1 + 2j, 3 - 1j, 0.5j, 2.0], [1j, 2, 3, 4j], [1, 2j, 3, 4j]])
    zt = torch.tensor(z.numpy())
    for kw in ({}, {"spacing": 2.0}, {"edge_order": 2}):
        for got, want in zip(ember.gradient(z, **kw), torch.gradient(zt, **kw)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    coords = ember.tensor([0j, 1j, 2j])
    got = ember.gradient(ember.tensor([1.0, 2.0, 4.0]), spacing=[coords])[0]
    want = torch.gradient(torch.tensor([1.0, 2.0, 4.0]), spacing=[torch.tensor(coords.numpy())])
    np.testing.assert_allclose(got.numpy(), want[0].numpy(), rtol=1e-6)


def test_float_power_inplace_of_complex128_as_torch():
    """opdb51a: a complex128 base holds float_power's complex128 result (torch computes it);
    a float64 base with a complex exponent, or a complex64 base, cannot (torch refuses too)."""
    for exponent in (2, 0.5, 1j, [2.0], [0.5 - 1j]):
        t_exp = torch.tensor(exponent) if isinstance(exponent, list) else exponent
        e_exp = ember.tensor(exponent) if isinstance(exponent, list) else exponent
        t = torch.tensor([1 + 2j, -0.5j], dtype=torch.complex128)
        e = ember.tensor(t.numpy())
        assert e.float_power_(e_exp) is e
        np.testing.assert_allclose(e.numpy(), t.float_power_(t_exp).numpy(), rtol=1e-12)
        assert e.dtype is ember.complex128
    with pytest.raises(ember.DTypeError, match="the result is complex128, which cannot be "
                       "written into a float64"):
        ember.tensor([2.0], dtype=ember.float64).float_power_(1j)
    with pytest.raises(ember.DTypeError, match="result is complex128.*complex64"):
        ember.tensor([1j], dtype=ember.complex64).float_power_(2)


# -- complex reciprocal bits ---------------------------------------------------------------------
def _bits_equal(mine, ref):
    a, b = mine.view(mine.real.dtype), ref.view(ref.real.dtype)
    return np.all((a == b) | (np.isnan(a) & np.isnan(b)))


_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3e38, 1e308, 1e-310, 2.5]
# complex64: the float64 denominator on a float32 midpoint; complex128: past Dekker's split
_REPROS = [1.7882671 + 0.00032647976j, 1.1360465324896427e+307 - 7.047547583619716e+306j]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_reciprocal_bits_as_torch(dtype):
    """``reciprocal(z)`` and ``number / z`` bit for bit as PyTorch's (c10's scaled division
    with a fused denominator; NumPy's formula was an ulp off in ~1/3 of values), also at 0
    (inf+nanj), inf and nan parts and values near overflow and underflow."""
    rng = np.random.default_rng(58)
    values = np.concatenate([(rng.normal(size=3000) + 1j * rng.normal(size=3000)) * s
                             for s in (1e-3, 1.0, 10.0, 1e30)]
                            + [np.array([complex(a, b) for a in _EDGES for b in _EDGES]),
                               np.array(_REPROS)])
    with np.errstate(over="ignore"):
        z = values.astype(dtype)
    for size in (7, z.size):  # PyTorch's scalar and vector loops
        t, e = torch.from_numpy(z[:size]), ember.tensor(z[:size])
        assert _bits_equal(e.reciprocal().numpy(), t.reciprocal().numpy())
        assert _bits_equal((3.7 / e).numpy(), (3.7 / t).numpy())
        assert _bits_equal((1 / e).numpy(), (1 / t).numpy())


def test_complex_reciprocal_gradient_as_torch():
    z = Z.astype(np.complex128)
    x, t = ember.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    (ember.reciprocal(x) * ember.tensor(W)).real.sum().backward()
    (torch.reciprocal(t) * torch.tensor(W)).real.sum().backward()
    same(x.grad, t.grad, atol=1e-12)
    assert ember.autograd.gradcheck(ember.reciprocal, (x.detach().requires_grad_(),))
