"""Ops on PyTorch's CPU autocast lists that Ember's policy missed (prelu and linalg.vecdot,
0-d operands too, lowered; smooth L1 / Huber losses, geqrf/orgqr/householder_product/ormqr,
cholesky_inverse, triangular_solve
and local_response_norm of 4 or more dims in float32; binary cross
entropy of a bfloat16 input and a float32 target, which was refused; composites on the
float32 list, cdist, grid_sample, quantile, polar, lstsq, the 3-D pools, max_unpool1d/2d/3d,
interpolate's area mode of a 5-D input, reflect/replicate pads, which ran in low precision or
refused mixed operands; index_copy, on the promote list), autocast's argument types, and
GradScaler's check that ``scale`` ran before ``step``; each compared with torch on the same
inputs."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentTypeError, DTypeError

R = np.random.default_rng(47)


def _inputs(lib, shapes, dtype):
    return [lib.tensor(R.standard_normal(s).astype(np.float32)).to(getattr(lib, dtype))
            for s in shapes]


OPS = {  # name: (fn, input shapes, tolerance)
    "prelu": (lambda lib, x, w: lib.nn.functional.prelu(x, w), [(2, 3, 4), (3,)], 1e-2),
    "smooth_l1_loss": (lambda lib, a, b: lib.nn.functional.smooth_l1_loss(a, b),
                       [(3, 4), (3, 4)], 1e-5),
    "huber_loss": (lambda lib, a, b: lib.nn.functional.huber_loss(a, b, delta=0.5),
                   [(3, 4), (3, 4)], 1e-5),
    "binary_cross_entropy": (lambda lib, a, b: lib.nn.functional.binary_cross_entropy(
        a.sigmoid(), b.sigmoid()), [(3, 4), (3, 4)], 1e-2),
    "cdist": (lambda lib, a, b: lib.cdist(a, b), [(30, 4), (27, 4)], 1e-4),  # (mm inside)
    "grid_sample": (lambda lib, x, g: lib.nn.functional.grid_sample(
        x, g.tanh(), align_corners=False), [(1, 2, 4, 4), (1, 3, 3, 2)], 1e-2),
    "quantile": (lambda lib, a: lib.quantile(a, 0.3, dim=1), [(3, 5)], 1e-2),
    "polar": (lambda lib, a, b: lib.view_as_real(lib.polar(a.abs(), b)), [(4,), (4,)], 1e-2),
    "view_as_complex": (lambda lib, a: lib.view_as_real(lib.view_as_complex(a) * 2),
                        [(3, 2)], 1e-2),
    "lstsq": (lambda lib, a, b: lib.linalg.lstsq(a, b).solution, [(4, 3), (4, 2)], 1e-2),
    "avg_pool3d": (lambda lib, x: lib.nn.functional.avg_pool3d(x, 2), [(1, 2, 4, 4, 4)], 1e-2),
    "max_pool3d": (lambda lib, x: lib.nn.functional.max_pool3d(x, 2), [(1, 2, 4, 4, 4)], 1e-2),
    "adaptive_avg_pool3d": (lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, 2),
                            [(1, 2, 4, 4, 4)], 1e-2),
    "adaptive_max_pool3d": (lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, 2),
                            [(1, 2, 4, 4, 4)], 1e-2),
    "max_unpool1d": (lambda lib, x: lib.nn.functional.max_unpool1d(
        *lib.nn.functional.max_pool1d(x, 2, return_indices=True), 2), [(1, 2, 6)], 1e-2),
    "max_unpool2d": (lambda lib, x: lib.nn.functional.max_unpool2d(
        *lib.nn.functional.max_pool2d(x, 2, return_indices=True), 2), [(1, 2, 4, 4)], 1e-2),
    "interpolate_area_3d": (lambda lib, x: lib.nn.functional.interpolate(
        x, size=(2, 3, 2), mode="area"), [(1, 2, 4, 5, 4)], 1e-2),
    "interpolate_area_2d": (lambda lib, x: lib.nn.functional.interpolate(
        x, size=(2, 3), mode="area"), [(1, 2, 4, 5)], 1e-2),
    "vecdot": (lambda lib, a, b: lib.linalg.vecdot(a, b, dim=0), [(4, 3), (1, 3)], 3e-2),
    "vecdot_0d": (lambda lib, a, b: lib.linalg.vecdot(a, b), [(3,), ()], 3e-2),
    "vecdot_0d_first": (lambda lib, a, b: lib.linalg.vecdot(a, b, dim=0), [(), (4, 2)], 3e-2),
    "vecdot_both_0d": (lambda lib, a, b: lib.linalg.vecdot(a, b), [(), ()], 3e-2),
    "geqrf": (lambda lib, a: lib.geqrf(a)[0], [(3, 3)], 1e-2),
    "orgqr": (lambda lib, a: lib.orgqr(*lib.geqrf(a)), [(3, 3)], 1e-2),
    # (a matmul inside stays float32: 5e-3 off before)
    "householder_product": (lambda lib, a, t: lib.linalg.householder_product(a, t),
                            [(4, 3), (3,)], 1e-5),
    "ormqr": (lambda lib, a, t, c: lib.ormqr(a, t, c), [(4, 3), (3,), (4, 2)], 1e-5),
    # (its product ran lowered: float16 from a float32 factor)
    "cholesky_inverse": (lambda lib, a: lib.cholesky_inverse(a + 3 * lib.eye(3)), [(3, 3)],
                         1e-5),
    # (the cloned coefficient kept a half input's dtype)
    "triangular_solve_clone": (lambda lib, b, a: lib.triangular_solve(b, a)[1],
                               [(3, 2), (3, 3)], 1e-5),
    "triangular_solve": (lambda lib, b, a: lib.triangular_solve(b, a + 3 * lib.eye(3))[0],
                         [(3, 2), (3, 3)], 1e-5),
    "local_response_norm": (lambda lib, x: lib.nn.functional.local_response_norm(x, 3),
                            [(1, 4, 3, 3)], 1e-2),
    # (3-D: PyTorch's avg_pool2d, not on the float32 list, keeps a half input's dtype)
    "local_response_norm_3d": (lambda lib, x: lib.nn.functional.local_response_norm(x, 3),
                               [(2, 5, 7)], 1e-2),
    "local_response_norm_5d": (lambda lib, x: lib.nn.functional.local_response_norm(x, 3),
                               [(1, 4, 2, 3, 3)], 1e-2),
}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("autocast_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("dtypes", [("float32",), ("bfloat16",), ("float16",),
                                    ("bfloat16", "float32")])
def test_ops_on_torchs_cpu_lists_take_its_dtype(name, autocast_dtype, dtypes):
    fn, shapes, tol = OPS[name]
    dtypes = (dtypes * len(shapes))[:len(shapes)]  # (the first operand's, then the rest's)
    seed = R.bit_generator.state
    results = []
    for lib in (ember, torch):
        R.bit_generator.state = seed
        inputs = [_inputs(lib, [s], d)[0] for s, d in zip(shapes, dtypes)]
        with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
            out = fn(lib, *inputs)
        results.append((str(out.dtype).split(".")[-1], out.float().detach().numpy()))
    (ours, ours_values), (theirs, theirs_values) = results
    assert ours == theirs
    np.testing.assert_allclose(ours_values, theirs_values, rtol=tol, atol=tol)


def test_fractional_max_pool_runs_in_float32_under_autocast_as_torch():
    # (random windows: the dtypes are compared, and the values with the windows torch drew)
    x = R.standard_normal((1, 2, 5, 5)).astype(np.float32)
    samples = torch.rand(1, 2, 2)
    with torch.autocast("cpu"):
        theirs = torch.nn.functional.fractional_max_pool2d(
            torch.tensor(x).bfloat16(), 2, output_size=2, _random_samples=samples)
    with ember.autocast("cpu"):
        ours = ember.nn.functional.fractional_max_pool2d(
            ember.tensor(x).bfloat16(), 2, output_size=2,
            _random_samples=ember.tensor(samples.numpy()))
    assert ours.dtype is ember.float32 and theirs.dtype is torch.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtypes", [("bfloat16", "float32"), ("float32", "bfloat16"),
                                    ("float32", "float32"), ("bfloat16", "bfloat16")])
def test_index_copy_promotes_under_autocast_as_torch(dtypes):
    # (refused mixed operands; torch's promote list also raises for a float16 operand under a
    # bfloat16 autocast, where Ember promotes: not compared)
    results = []
    for lib in (ember, torch):
        a, b = (lib.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4) * k).to(
            getattr(lib, d)).requires_grad_() for k, d in zip((1, -1), dtypes))
        with lib.autocast("cpu"):
            y = a.index_copy(0, lib.tensor([2, 0]), b[:2])
        (y.float() * lib.arange(4.0)).sum().backward()
        results.append([str(t.dtype).split(".")[-1] for t in (y, a.grad, b.grad)] +
                       [y.float().tolist(), b.grad.float().tolist()])
    assert results[0] == results[1]


@pytest.mark.parametrize("dtypes", [("bfloat16", "float64"), ("float64", "float32")])
def test_index_copy_refuses_a_float64_mix_under_autocast_as_torch(dtypes):
    # (Ember promoted to float64; autocast never casts float64, so the dtypes stay unequal)
    for lib, error in ((torch, RuntimeError), (ember, DTypeError)):
        a, b = (lib.zeros(3, 2, dtype=getattr(lib, d)) for d in dtypes)
        with lib.autocast("cpu"), pytest.raises(error, match="dtype"):
            a.index_copy(0, lib.tensor([2, 0]), b[:2])


@pytest.mark.parametrize("shapes", [((3,), ()), ((), ()), ((), (2, 3))])
def test_vecdot_of_a_0d_operand_under_autocast_has_torchs_gradients(shapes):
    # (a 0-d operand took the float32 mul+sum path; torch lowers it as any other vecdot)
    arrays = [R.standard_normal(s).astype(np.float32) for s in shapes]
    results = []
    for lib in (ember, torch):
        x, y = (lib.tensor(a, requires_grad=True) for a in arrays)
        with lib.autocast("cpu"):
            out = lib.linalg.vecdot(x, y, dim=0)
        out.float().sum().backward()
        results.append([str(t.dtype) for t in (out, x.grad, y.grad)] +
                       [t.float().detach().numpy() for t in (out, x.grad, y.grad)])
    ours, theirs = results
    assert [d.split(".")[-1] for d in ours[:3]] == [d.split(".")[-1] for d in theirs[:3]]
    for a, b in zip(ours[3:], theirs[3:]):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)


def test_a_dtype_error_after_autocasts_float32_cast_names_the_cast():
    # (cdist(bf16, f64) said "got float32 and float64": the user passed bfloat16)
    x, y = R.standard_normal((2, 3, 2)).astype(np.float32)
    with torch.autocast("cpu"), pytest.raises(RuntimeError):
        torch.cdist(torch.tensor(x).bfloat16(), torch.tensor(y).double())
    with ember.autocast("cpu"), pytest.raises(DTypeError, match=r"^cdist: .*float64 \(under "
                                              r"autocast, the bfloat16 arguments were cast to "
                                              r"float32 first"):
        ember.cdist(ember.tensor(x).bfloat16(), ember.tensor(y).double())
    with ember.autocast("cpu"), pytest.raises(DTypeError, match="the float16 arguments were"):
        ember.linalg.lstsq(ember.tensor(x).half(), ember.tensor(y).double())


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_reflection_and_replication_pads_run_in_float32_where_torch_lists_them(mode, dims):
    # (torch's CPU float32 list: reflection_pad1d/2d, replication_pad1d/2d/3d; the rest stay)
    x = R.standard_normal((1, 2) + (4,) * dims).astype(np.float32)
    results = []
    for lib in (ember, torch):
        with lib.autocast("cpu"):
            out = lib.nn.functional.pad(lib.tensor(x).bfloat16(), (1, 2) * dims, mode=mode)
        results.append((str(out.dtype).split(".")[-1], out.float().numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_prelu_under_autocast_sends_float32_gradients_to_its_weight():
    x = ember.tensor(R.standard_normal((2, 3)).astype(np.float32), requires_grad=True)
    w = ember.full((3,), 0.25, requires_grad=True)
    with ember.autocast("cpu"):
        y = ember.nn.functional.prelu(x, w)
    y.float().sum().backward()
    assert y.dtype is ember.bfloat16
    assert x.grad.dtype is ember.float32 and w.grad.dtype is ember.float32
    expected = np.where(x.detach().numpy() > 0, 0.0, x.detach().numpy()).sum(0)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", ["bfloat16", np.float16, 16])
def test_a_dtype_that_is_not_a_dtype_is_a_type_error(dtype):
    # (Ember ran disabled after a warning for a string; torch's autocast raises a TypeError
    # in __enter__, from this setter, after changing its state: asked here alone)
    with pytest.raises(TypeError):
        torch.set_autocast_dtype("cpu", dtype)
    with pytest.raises(ArgumentTypeError, match="autocast: dtype"):
        ember.autocast("cpu", dtype=dtype)


@pytest.mark.parametrize("flag", ["enabled", "cache_enabled"])
@pytest.mark.parametrize("value, kind", [("no", "str"), (1, "int"), (0, "int"),
                                         (np.True_, "numpy.bool")])
def test_enabled_and_cache_enabled_must_be_bools(flag, value, kind):
    # ("no" was truthy: autocast ran; 0 turned it off silently). torch's autocast raises the
    # TypeError in __enter__, from these setters, after changing its state: asked here alone.
    # The message names the argument (it said "enabled" for cache_enabled) and the type with
    # its module (NumPy 2's bool type is called "bool": "got bool np.True_")
    with pytest.raises(TypeError):
        if flag == "enabled":
            torch.set_autocast_enabled("cpu", value)
        else:
            torch.set_autocast_cache_enabled(value)
    with pytest.raises(ArgumentTypeError,
                       match=f"^autocast: {flag} must be a bool, got {kind} "):
        ember.autocast("cpu", **{flag: value})


@pytest.mark.parametrize("call", ["step", "unscale_", "update", "update_new_scale",
                                  "step_after_load_state_dict"])
def test_grad_scaler_refuses_to_run_before_scale_as_torch(call):
    # (step divided the unscaled gradients by 65536 and stepped with them, silently)
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = lib.ones(2)
        opt = lib.optim.SGD([p], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        if call == "step_after_load_state_dict":
            scaler.load_state_dict(scaler.state_dict())
        method, args = {"step": ("step", (opt,)), "unscale_": ("unscale_", (opt,)),
                        "update": ("update", ()), "update_new_scale": ("update", (4.0,)),
                        "step_after_load_state_dict": ("step", (opt,))}[call]
        # (torch: "Attempted step but _scale is None", "_scale is None in unscale_"; Ember's
        # own message, not any scaler error that mentions the scale)
        pattern = rf"^GradScaler\.{method}: scale\(\) has not been called" if lib is ember \
            else "_scale is None"
        with pytest.raises((AssertionError, RuntimeError), match=pattern):
            getattr(scaler, method)(*args)
        np.testing.assert_array_equal(p.detach().numpy(), [1.0, 1.0])


def test_grad_scaler_disabled_needs_no_scale():
    p = ember.nn.Parameter(ember.ones(2))
    p.grad = ember.ones(2)
    opt = ember.optim.SGD([p], lr=0.5)
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(p.detach().numpy(), [0.5, 0.5])


@pytest.mark.parametrize("autocast_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("tensor_qparams", [False, True])
def test_fake_quantize_per_tensor_with_number_qparams_runs_in_float32(autocast_dtype, dtype,
                                                                      tensor_qparams):
    # (PyTorch's CPU float32 list holds the overload of a float scale and an int zero point;
    # the one of tensor qparams keeps the input's dtype)
    x = R.standard_normal((3, 5)).astype(np.float32) * 4
    results = []
    for lib in (torch, ember):
        qparams = (lib.tensor(0.25), lib.tensor(3)) if tensor_qparams else (0.25, 3)
        with lib.autocast("cpu", dtype=getattr(lib, autocast_dtype)):
            y = lib.fake_quantize_per_tensor_affine(lib.tensor(x).to(getattr(lib, dtype)),
                                                    *qparams, -8, 7)
        results.append((str(y.dtype).split(".")[1], y.float().numpy()))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[1][1], results[0][1])


@pytest.mark.parametrize("equation, shapes", [
    ("ij->", [(3, 4)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij,ij->ij", [(3, 4)] * 2),
    ("i,j->ij", [(3,), (4,)]), ("ij,kl->", [(2, 3), (4, 5)]), ("ij,jk->ijk", [(2, 3), (3, 4)]),
    ("ij,jk,l->ikl", [(2, 3), (3, 4), (5,)]), ("l,ij,jk->ikl", [(5,), (2, 3), (3, 4)]),
    ("ij,ij->", [(3, 4)] * 2), ("ij,ik->", [(2, 3), (2, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ij,jk,ij->ik", [(2, 3), (3, 4), (2, 3)]), ("ij,ij,ij->ij", [(2, 3)] * 3),
    # a summed subscript of size 1 in either operand is a product there (review54a)
    ("ij,jk->ik", [(2, 1), (1, 3)]), ("bij,bjk->bik", [(2, 2, 1), (2, 1, 4)]),
    ("ij,jk->ik", [(2, 1), (3, 3)]), ("ij,jk->ik", [(2, 3), (1, 4)]),
    ("ij,ij->", [(2, 1), (2, 1)]), ("i,i->", [(3,), (1,)]),
    ("ij,jk,kl->il", [(2, 1), (1, 3), (3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 1), (1, 4)]),
    ("...j,jk->...k", [(2, 5, 1), (1, 3)])])
def test_einsum_is_lowered_only_through_a_contraction_as_torchs(equation, shapes):
    # (PyTorch's einsum lowers through the bmm of a pairwise contraction, operands combined
    # left to right; a sum or a product of float32 operands stays float32)
    xs = [R.standard_normal(s).astype(np.float32) for s in shapes]
    results = []
    for lib in (torch, ember):
        with lib.autocast("cpu"):
            y = lib.einsum(equation, *(lib.tensor(x) for x in xs))
        results.append((str(y.dtype).split(".")[1], y.float().numpy()))
    assert results[1][0] == results[0][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("equation", ["i,j->ij", "ij,ij->ij", "ij,kl->"])
def test_einsum_without_a_contraction_promotes_a_mix_as_torchs(equation):
    shapes = {"i,j->ij": [(3,), (4,)], "ij,ij->ij": [(2, 3)] * 2, "ij,kl->": [(2, 3), (4, 5)]}
    xs = [R.standard_normal(s).astype(np.float32) for s in shapes[equation]]
    results = []
    for lib in (torch, ember):
        a, b = lib.tensor(xs[0]).bfloat16(), lib.tensor(xs[1])
        with lib.autocast("cpu"):
            y = lib.einsum(equation, a, b)
        results.append((str(y.dtype).split(".")[1], y.numpy()))
    assert results[1][0] == results[0][0] == "float32"
    # (PyTorch sums a bfloat16 operand alone in bfloat16 first: "ij,kl->" is 1 ulp off)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-2, atol=1e-2)


def _einsum_under_autocast(lib, equation, shapes, dts, fast="bfloat16"):
    xs = [R.integers(-3, 4, s).astype(np.float32) / 2 for s in shapes]
    ops = [lib.tensor(x).to(getattr(lib, d)) for x, d in zip(xs, dts, strict=True)]
    with lib.autocast("cpu", dtype=getattr(lib, fast)):
        try:
            y = lib.einsum(equation, *ops)
        except (RuntimeError, ember.errors.DTypeError) as e:  # (torch's bmm refuses a mix)
            return type(e).__name__, None
    return str(y.dtype).split(".")[1], y.double().numpy()


def _einsum_both(equation, shapes, dts, fast):
    """Ember's and torch's (dtype or error, values) on the same operands; the dtypes agree."""
    seed = R.bit_generator.state
    theirs = _einsum_under_autocast(torch, equation, shapes, dts, fast)
    R.bit_generator.state = seed
    ours = _einsum_under_autocast(ember, equation, shapes, dts, fast)
    assert (ours[0], theirs[0]) in {(theirs[0], theirs[0]), ("DTypeError", "RuntimeError")}, \
        (equation, shapes, dts, fast, ours[0], theirs[0])
    return ours, theirs


@pytest.mark.parametrize("equation, shapes, dts, fast", [
    # a 0-d operand promotes by dtype, as any other (PyTorch unsqueezes it first)
    ("b,->b", [(3,), ()], ["bfloat16", "float32"], "bfloat16"),
    ("b,->b", [(3,), ()], ["float32", "float64"], "bfloat16"),
    ("i,j->ij", [(3,), (2,)], ["float32", "int64"], "bfloat16"),  # (a mul)
    # a contraction before the last step: its result is lowered, later muls promote it
    ("bd,a,db,d->da", [(2, 3), (2,), (3, 2), (3,)], ["float32", "bfloat16", "float32",
                                                     "bfloat16"], "bfloat16"),
    ("ij,jk,l->ikl", [(2, 3), (3, 4), (2,)], ["bfloat16"] * 3, "float16"),
    ("ij,jk,l->ikl", [(2, 3), (3, 4), (2,)], ["float32"] * 3, "bfloat16"),
    (",bac,cda,db->ac", [(), (2, 2, 1), (1, 1, 2), (3, 2)], ["int64", "bfloat16", "bfloat16",
                                                             "bfloat16"], "bfloat16"),
    (",cbd,,adb->ad", [(), (3, 3, 2), (), (2, 2, 3)], ["float32", "float64", "float32",
                                                       "float64"], "bfloat16"),
    # a subscript of size 1 in every later operand is summed at this step (a bmm)
    ("db,c,db,d->c", [(3, 1), (3,), (3, 1), (1,)], ["float32"] * 4, "float16"),
    ("db,c,db,d->c", [(3, 1), (3,), (3, 1), (1,)], ["float64", "float32", "bfloat16",
                                                    "bfloat16"], "float16"),
    ("ij,jk->ik", [(2, 3), (3, 4)], ["float32", "int64"], "bfloat16"),  # (both refuse)
])
def test_einsum_dtype_under_autocast_follows_torchs_steps(equation, shapes, dts, fast):
    # (review54a: PyTorch combines operands left to right, lowering a contraction's bmm and
    # promoting at each mul; Ember promoted all operands, or lowered all)
    ours, theirs = _einsum_both(equation, shapes, dts, fast)
    if theirs[1] is not None:
        np.testing.assert_allclose(ours[1], theirs[1], rtol=2e-2, atol=2e-2)


def test_einsum_dtype_under_autocast_over_random_equations_as_torchs():
    rng = np.random.default_rng(7)
    pool = ["float32", "bfloat16", "float16", "float64", "int64"]
    for _ in range(120):
        terms = ["".join(rng.choice(list("abcd"), int(rng.integers(0, 4)), replace=False))
                 for _ in range(int(rng.integers(1, 5)))]
        out = "".join(c for c in sorted(set("".join(terms))) if rng.random() < 0.5)
        sizes = {c: int(rng.integers(1, 4)) for c in "abcd"}
        shapes = [tuple(sizes[c] if rng.random() > 0.2 else 1 for c in t) for t in terms]
        dts = [str(rng.choice(pool, p=[.4, .25, .1, .1, .15])) for _ in terms]
        fast = str(rng.choice(["bfloat16", "float16"]))
        equation = ",".join(terms) + "->" + out
        _einsum_both(equation, shapes, dts, fast)
