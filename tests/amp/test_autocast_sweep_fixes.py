"""What the differential sweep of autocast against torch found: the dtype an autocast without
``dtype`` takes, ``cache_enabled``, a dtype autocast cannot lower to, and linear algebra and
FFTs on low-precision inputs; each scenario runs on Ember and on torch."""

import warnings

import numpy as np
import pytest
import torch

import ember

R = np.random.default_rng(0)
SQUARE = (R.standard_normal((3, 3)) + 3 * np.eye(3)).astype(np.float32)


def _both(scenario):
    """The scenario's result on Ember and on torch (dtypes by name; they must be equal)."""
    results = [scenario(lib) for lib in (ember, torch)]
    results = [[str(r).split(".")[-1] for r in result] for result in results]
    assert results[0] == results[1]
    return results[0]


def _mm(lib):
    a = lib.ones(2, 2)
    return (a @ a).dtype


def test_autocast_without_dtype_takes_the_current_autocast_dtype():
    def scenario(lib):
        seen = []
        with lib.autocast("cpu", dtype=lib.float16):
            with lib.autocast("cpu", enabled=False):
                seen += [lib.get_autocast_dtype("cpu"), _mm(lib)]
                with lib.autocast("cpu"):
                    seen += [lib.get_autocast_dtype("cpu"), _mm(lib)]
        lib.set_autocast_dtype("cpu", lib.float16)
        try:
            with lib.autocast("cpu"):
                seen.append(_mm(lib))
        finally:
            lib.set_autocast_dtype("cpu", lib.bfloat16)
        return seen

    assert _both(scenario) == ["float16", "float32", "float16", "float16", "float16"]


def test_cache_enabled_is_set_inside_the_context_and_by_the_decorator():
    def scenario(lib):
        seen = []
        with lib.autocast("cpu", cache_enabled=False):
            seen.append(lib.is_autocast_cache_enabled())
            with lib.autocast("cpu"):  # (None: the surrounding flag)
                seen.append(lib.is_autocast_cache_enabled())
        seen.append(lib.is_autocast_cache_enabled())

        @lib.autocast("cpu", cache_enabled=False)
        def inside():
            return lib.is_autocast_cache_enabled()

        return [*seen, inside(), lib.is_autocast_cache_enabled()]

    assert _both(scenario) == ["False", "False", "True", "False", "True"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_unsupported_dtype_disables_autocast_with_a_warning(dtype):
    def scenario(lib):
        with pytest.warns(UserWarning, match="Disabling autocast"):
            ctx = lib.autocast("cpu", dtype=getattr(lib, dtype))
        with ctx:
            seen = [lib.is_autocast_enabled("cpu"), _mm(lib)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.autocast("cpu", dtype=getattr(lib, dtype), enabled=False)  # (no warning)
        return [*seen, ctx.device, ctx.fast_dtype]

    assert _both(scenario) == ["False", "float32", "cpu", dtype]


# ops PyTorch's CPU autocast runs in float32, and ops it runs in low precision or refuses
# there, which Ember runs in float32 as well (compared with torch's float32 result)
LINALG = {
    "inv": lambda lib, a: lib.linalg.inv(a),
    "solve": lambda lib, a: lib.linalg.solve(a, a[:, :1]),
    "cholesky": lambda lib, a: lib.linalg.cholesky(a @ a.mT),
    "qr": lambda lib, a: lib.linalg.qr(a)[1],
    "svdvals": lambda lib, a: lib.linalg.svd(a)[1],
    "eigvalsh": lambda lib, a: lib.linalg.eigh(a + a.mT)[0],
}
LINALG_LOW_IN_TORCH = {
    "det": lambda lib, a: lib.linalg.det(a),
    "slogdet": lambda lib, a: lib.linalg.slogdet(a)[1],
    "pinv": lambda lib, a: lib.linalg.pinv(a),
    "matrix_exp": lambda lib, a: lib.linalg.matrix_exp(a / 4),
    "solve_triangular": lambda lib, a: lib.linalg.solve_triangular(a.triu(), a, upper=True),
}


@pytest.mark.parametrize("name", sorted(LINALG) + sorted(LINALG_LOW_IN_TORCH))
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_linear_algebra_of_low_precision_inputs_runs_in_float32(name, dtype):
    # (there are no low-precision kernels: outside autocast Ember refuses bfloat16 here)
    fn = LINALG.get(name) or LINALG_LOW_IN_TORCH[name]
    a = ember.tensor(SQUARE).to(getattr(ember, dtype))
    with ember.autocast("cpu", dtype=getattr(ember, dtype)):
        ours = fn(ember, a)
    a = torch.tensor(SQUARE).to(getattr(torch, dtype))
    if name in LINALG:
        with torch.autocast("cpu", dtype=getattr(torch, dtype)):
            theirs = fn(torch, a)
    else:
        theirs = fn(torch, a.float())
    assert ours.dtype is ember.float32 and theirs.dtype is torch.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)


def test_mixed_float32_and_low_precision_operands_meet_in_float32():
    a = torch.tensor(SQUARE)
    with torch.autocast("cpu"):
        theirs = torch.linalg.solve(a, a.bfloat16())
    a = ember.tensor(SQUARE)
    with ember.autocast("cpu"):
        ours = ember.linalg.solve(a, a.bfloat16())
    assert ours.dtype is ember.float32 and theirs.dtype is torch.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(ember.DTypeError, match="low-precision"):
        ember.linalg.inv(a.bfloat16())


@pytest.mark.parametrize("op", ["matmul", "matmul_reversed", "einsum", "bmm", "conv1d"])
def test_a_gemm_of_float32_and_float64_operands_is_refused_as_in_torch(op):
    # (autocast lowers the float32 operand and leaves the float64 one: it was computed in
    # bfloat16 or float64 depending on the operands' order)
    def run(lib):
        f, d = lib.ones(2, 2), lib.ones(2, 2, dtype=lib.float64)
        return {"matmul": lambda: f @ d, "matmul_reversed": lambda: d @ f,
                "einsum": lambda: lib.einsum("ij,jk", f, d),
                "bmm": lambda: lib.bmm(f[None], d[None]),
                "conv1d": lambda: lib.nn.functional.conv1d(f[None], d[:, :, None])}[op]()

    for lib, error in ((torch, RuntimeError), (ember, ember.DTypeError)):
        with lib.autocast("cpu"), pytest.raises(error):
            run(lib)
    with ember.autocast("cpu"):
        d = ember.ones(2, 2, dtype=ember.float64)
        assert (d @ d).dtype is ember.float64  # (float64 alone is left alone)


def test_in_place_and_out_gemms_are_left_alone_as_in_torch():
    # (PyTorch's autocast does not cast in-place ops nor calls with out=: full float32)
    a = R.standard_normal((3, 3)).astype(np.float32)
    for lib in (ember, torch):
        x, into, acc = lib.tensor(a), lib.zeros(3, 3), lib.zeros(3, 3)
        with lib.autocast("cpu"):
            lib.mm(x, x, out=into)
            acc.addmm_(x, x)
            lowered = x @ x
            with pytest.raises((RuntimeError, ember.DTypeError)):
                lib.zeros(3, 3).addmm_(x.bfloat16(), x)
        np.testing.assert_allclose(into.numpy(), a @ a, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(acc.numpy(), a @ a, rtol=1e-6, atol=1e-6)
        assert str(lowered.dtype).endswith("bfloat16")


def test_state_restored_on_exit_casts_after_the_setter_turned_it_off_inside():
    # set_autocast_enabled(True), a context, set_autocast_enabled(False) inside: on exit
    # autocast reported itself on again but ran matmuls in float32 (its handler was gone)
    def run(lib):
        lib.set_autocast_enabled("cpu", True)
        try:
            with lib.autocast("cpu"):
                lib.set_autocast_enabled("cpu", False)
            a = lib.ones(2, 2)
            return lib.is_autocast_enabled("cpu"), str((a @ a).dtype).split(".")[-1]
        finally:
            lib.set_autocast_enabled("cpu", False)
    assert run(ember) == run(torch) == (True, "bfloat16")
    a = ember.ones(2, 2)
    assert (a @ a).dtype is ember.float32


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_matrix_rank_of_a_low_precision_input_uses_float32_tolerance_as_torch(dtype):
    # (PyTorch's CPU float32 list casts first, so the default rtol is float32's eps; Ember
    # took the input's eps: singular values 1, 1, 0.002 gave rank 2 in both dtypes, not 3)
    a = np.diag([1.0, 1.0, 2e-3]).astype(np.float32)
    results = []
    for lib in (torch, ember):
        with lib.autocast("cpu", dtype=getattr(lib, dtype)):
            results.append(int(lib.linalg.matrix_rank(lib.tensor(a).to(getattr(lib, dtype)))))
    assert results[0] == results[1] == 3


def test_pinv_of_a_low_precision_input_keeps_small_singular_values_as_in_float32():
    # (Ember runs linear algebra of bfloat16 inputs in float32 under autocast, where PyTorch's
    # pinv refuses them; its default rtol took bfloat16's eps and dropped the singular value
    # 0.076 of 3.59: a rank-2 pseudoinverse, off by 11 in one entry)
    a = np.random.default_rng(3).standard_normal((3, 3)).astype(np.float32)
    with ember.autocast("cpu"):
        ours = ember.linalg.pinv(ember.tensor(a).bfloat16())
    theirs = torch.linalg.pinv(torch.tensor(a).bfloat16().float())
    assert ours.dtype is ember.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-4)


GEMMS_OF_INT_AND_FLOAT = {
    "matmul": lambda lib: lib.ones(2, 3, dtype=lib.int64) @ lib.ones(3, 4),
    "matmul_bool": lambda lib: lib.ones(2, 3, dtype=lib.bool) @ lib.ones(3, 4),
    "mm": lambda lib: lib.mm(lib.ones(2, 3), lib.ones(3, 4, dtype=lib.int32)),
    "bmm": lambda lib: lib.bmm(lib.ones(1, 2, 3, dtype=lib.int64), lib.ones(1, 3, 4)),
    "linear": lambda lib: lib.nn.functional.linear(lib.ones(2, 3, dtype=lib.int64),
                                                   lib.ones(4, 3)),
}


@pytest.mark.parametrize("name", sorted(GEMMS_OF_INT_AND_FLOAT))
def test_a_gemm_of_an_integer_and_a_float_operand_is_refused_under_autocast(name):
    # (it ran, in float64 or float32, where torch and Ember without autocast refuse it; einsum
    # was refused already)
    fn = GEMMS_OF_INT_AND_FLOAT[name]
    with torch.autocast("cpu"), pytest.raises(RuntimeError):
        fn(torch)
    with ember.autocast("cpu"), pytest.raises(ember.DTypeError, match="same dtype"):
        fn(ember)


@pytest.mark.parametrize("how", ["setter", "restored on exit"])
def test_autocast_turned_on_by_the_setter_casts_inside_cond_branches_as_torch(how):
    # (the setter's handler, and the one __exit__ puts back, were not ambient: ember.cond's
    # branches ran matmuls in float32 while the same matmul outside gave bfloat16)
    def run(lib):
        lib.set_autocast_enabled("cpu", True)
        try:
            if how == "restored on exit":
                with lib.autocast("cpu"):
                    lib.set_autocast_enabled("cpu", False)
            a = lib.ones(2, 2)
            out = lib.cond(lib.tensor(True), lambda x: x @ x, lambda x: x @ x, (a,))
            return str(out.dtype).split(".")[-1]
        finally:
            lib.set_autocast_enabled("cpu", False)
    assert run(ember) == run(torch) == "bfloat16"
