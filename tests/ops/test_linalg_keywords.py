"""ember.linalg takes its arguments by the keyword names PyTorch 2.13's parser takes (``input=``
where torch's schema says ``self``; ``lstsq``'s ``b``, ``tensorsolve``'s ``other``)."""

import numpy as np
import pytest
import torch

import ember

_A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

_CALLS = [
    ("norm", {}), ("matrix_norm", {"ord": "nuc"}), ("matrix_exp", {}), ("eigvalsh", {}),
    ("eigvals", {}), ("pinv", {"hermitian": True}), ("matrix_rank", {}), ("cond", {"p": 1}),
    ("cholesky", {"upper": True}), ("matrix_power", {"n": -2}), ("tensorinv", {"ind": 1}),
    ("lstsq", {"b": _A[:, :1]}), ("tensorsolve", {"other": _A[0]}),
    ("solve_triangular", {"B": _A, "upper": True}), ("householder_product", {"tau": _A[0, :2]}),
]


def _values(result):
    return [r for r in (result if isinstance(result, tuple) else (result,)) if r.numel()]


@pytest.mark.parametrize(("name", "extra"), _CALLS, ids=[c[0] for c in _CALLS])
def test_linalg_takes_pytorchs_keyword_names(name, extra):
    def call(lib):
        kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in extra.items()}
        return getattr(lib.linalg, name)(input=lib.tensor(_A), **kw)
    for want, got in zip(_values(call(torch)), _values(call(ember)), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_linalg_factorizations_take_input_keyword():
    a = ember.tensor(_A)
    assert ember.linalg.eigh(input=a, UPLO="U").eigenvalues.shape == (3,)
    assert ember.linalg.eig(input=a).eigenvalues.dtype == ember.complex128
    assert ember.linalg.cholesky_ex(input=a).info.item() == 0
    assert ember.linalg.ldl_factor(input=a).LD.shape == (3, 3)
    assert ember.linalg.ldl_factor_ex(input=a, hermitian=True).info.item() == 0
    assert ember.matrix_power(input=a, n=2).shape == (3, 3)
    with pytest.raises(TypeError):
        ember.linalg.eigh(a, input=a)


def test_top_level_det_takes_input_as_torch_and_linalg_det_keeps_a():
    # torch.det's parser name is input, torch.linalg.det's is A (ember.det took only A)
    a = _A + 1.0
    want = torch.det(input=torch.tensor(a)).item()
    assert ember.det(input=ember.tensor(a)).item() == pytest.approx(want, rel=1e-12)
    assert ember.linalg.det(A=ember.tensor(a)).item() == pytest.approx(want, rel=1e-12)
    assert ember.tensor(a).det().item() == pytest.approx(want, rel=1e-12)
    with pytest.raises(TypeError):
        ember.det(A=ember.tensor(a))
    with pytest.raises(TypeError):
        ember.linalg.det(input=ember.tensor(a))


def test_legacy_solvers_take_pytorchs_parser_names():
    # torch 2.13's parser: lu_solve(input, LU_data, LU_pivots), orgqr(input, input2),
    # ormqr(input, input2, input3, left, transpose); it refuses the docs' b=, tau=, other=
    a, b = _A + np.triu(_A, 1), _A[:, :2]

    def calls(lib):
        A, B = lib.tensor(a), lib.tensor(b)  # noqa: N806
        LU, piv = lib.linalg.lu_factor(A)  # noqa: N806
        h, tau = lib.geqrf(A)
        return [lib.lu_solve(input=B, LU_data=LU, LU_pivots=piv),
                B.lu_solve(LU_data=LU, LU_pivots=piv),
                lib.orgqr(input=h, input2=tau), h.orgqr(input2=tau),
                lib.ormqr(input=h, input2=tau, input3=B, left=True, transpose=True),
                h.ormqr(input2=tau, input3=B.mT, left=False)]
    for want, got in zip(calls(torch), calls(ember), strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    h, tau = ember.geqrf(ember.tensor(a))
    for refused in (lambda: ember.orgqr(h, tau=tau), lambda: ember.ormqr(h, tau=tau, other=h),
                    lambda: ember.lu_solve(b=h, LU_data=h, LU_pivots=tau)):
        with pytest.raises(TypeError):
            refused()


def test_vector_norm_takes_x_or_input_as_torch():
    # torch 2.13 takes linalg.vector_norm's tensor as x= (its docs) and input= (its schema);
    # Ember's refused input= (a TypeError)
    for kw in ("x", "input"):
        want = torch.linalg.vector_norm(**{kw: torch.tensor(_A)}, ord=3, dim=1, keepdim=True)
        got = ember.linalg.vector_norm(**{kw: ember.tensor(_A)}, ord=3, dim=1, keepdim=True)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    out = ember.empty((), dtype=ember.float64)
    assert ember.linalg.vector_norm(input=ember.tensor(_A), out=out) is out
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.linalg.vector_norm(lib.tensor(_A), input=lib.tensor(_A))
        with pytest.raises(TypeError):
            lib.linalg.vector_norm()


@pytest.mark.parametrize("uplo", ["l", "u"])
def test_eigh_takes_a_lowercase_uplo_as_torch(uplo):
    # torch upper-cases UPLO; Ember refused 'l' and 'u' (ArgumentError)
    a = np.array([[2.0, 1.0, 0.5], [-3.0, 4.0, 1.0], [7.0, 0.0, 1.0]])
    for fn in ("eigh", "eigvalsh"):
        ours = getattr(ember.linalg, fn)(ember.tensor(a), UPLO=uplo)
        theirs = getattr(torch.linalg, fn)(torch.tensor(a), UPLO=uplo)
        np.testing.assert_allclose(np.asarray((ours if fn == "eigvalsh" else ours[0])._data),
                                   (theirs if fn == "eigvalsh" else theirs[0]).numpy(),
                                   rtol=1e-12)
    with pytest.raises(ember.errors.ArgumentError, match="UPLO must be 'L' or 'U'"):
        ember.linalg.eigh(ember.tensor(a), UPLO=uplo * 2)


@pytest.mark.parametrize("dtype", ["int64", "int16", "int8"])
def test_ldl_solve_takes_pivots_of_any_integer_dtype_as_torch(dtype):
    # torch casts them; Ember refused all but int32 (a ShapeError); floats stay refused
    a = np.array([[0.0, 2.0, 1.0], [2.0, 1.0, 3.0], [1.0, 3.0, -2.0]])
    b = np.arange(6.0).reshape(3, 2)
    out = []
    for lib in (ember, torch):
        ld, piv = lib.linalg.ldl_factor(lib.tensor(a))
        out.append(lib.linalg.ldl_solve(ld, piv.to(getattr(lib, dtype)), lib.tensor(b)).numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)
    ld, piv = ember.linalg.ldl_factor(ember.tensor(a))
    with pytest.raises(ember.DTypeError, match="pivots must be integers"):
        ember.linalg.ldl_solve(ld, piv.double(), ember.tensor(b))


@pytest.mark.parametrize("driver", ["GELSD", "Gelsy", "GELS", "gelsS"])
def test_lstsq_driver_in_any_case_as_torch(driver):
    # torch lower-cases the driver; Ember refused 'GELSD' (ArgumentError)
    a, b = _A[:, :2].copy(), _A[:, 2:].copy()
    ours = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for mine, ref in zip(ours, theirs):
        assert tuple(mine.shape) == tuple(ref.shape)
        np.testing.assert_allclose(np.asarray(mine._data), ref.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [3.0, True])
def test_vander_refuses_a_float_or_bool_n_as_torch(n):
    # torch's parser takes only an int (it was truncated: N=3.7 gave 3 columns)
    with pytest.raises(TypeError):
        torch.linalg.vander(torch.ones(3), N=n)
    with pytest.raises(TypeError, match="linalg.vander: N must be an int"):
        ember.linalg.vander(ember.ones(3), N=n)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_vander_refuses_half_precision_as_torch(dtype):
    # (Ember answered; torch's vander has no half kernel)
    with pytest.raises(RuntimeError, match="supports floating point, complex, and integer"):
        torch.linalg.vander(torch.ones(3, dtype=getattr(torch, dtype)))
    with pytest.raises(ember.DTypeError, match=f"linalg.vander: .*{dtype}"):
        ember.linalg.vander(ember.ones(3, dtype=getattr(ember, dtype)))


def test_ldl_solve_refuses_int64_pivots_beyond_int32_rather_than_wrapping_them():
    ld, piv = ember.linalg.ldl_factor(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
    with pytest.raises(IndexError, match="pivots must satisfy"):
        ember.linalg.ldl_solve(ld, piv.long() + 2**32, ember.ones(2, 1))
