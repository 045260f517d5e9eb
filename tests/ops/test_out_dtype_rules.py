"""The dtype rules of ``out=`` (ember.ops.out_arg, the EXACT and REAL tables of
ember.ops.out_names) against torch: every function that takes ``out=``, with an out of its
result's dtype, a wider and a narrower one of the same kind, and one of another kind (float and
int, real and complex), each output of a multi-output op in turn."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError
from ember.ops import out_names

R = np.random.default_rng(0)
X = R.standard_normal((3, 4))
Y = R.standard_normal((3, 4))
Z = R.standard_normal((3, 4))
P = R.uniform(0.1, 0.9, (3, 4))
V = R.standard_normal(3)
SQ = R.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = SQ @ SQ.T
B3 = R.standard_normal((2, 3, 3))
I = np.array([[2, 0, 1], [1, 1, 0]])
XI = R.integers(1, 9, (3, 4))
YI = R.integers(1, 9, (3, 4))
M = X > 0

# arguments: ARGS[qualified name](m, t) -> (args, kwargs), m the library, t(array) a tensor of
# the base floating dtype (integer and bool arrays stay int64 and bool); unlisted: BINARY ones
# take (P, X), SQUARE ones a square matrix, the rest P
ARGS = {
    # ---- factories and ranges
    "arange": lambda m, t: ((0.0, 3.0, 1.0), {}),
    "range": lambda m, t: ((0.0, 3.0, 1.0), {}),  # (a step of 0.25 into an integer out: SIGFPE)
    "linspace": lambda m, t: ((0, 1, 5), {}),
    "logspace": lambda m, t: ((0, 2, 3), {}),
    "empty": lambda m, t: ((2, 3), {}),
    "zeros": lambda m, t: ((2, 3), {}),
    "ones": lambda m, t: ((2, 3), {}),
    "rand": lambda m, t: ((2, 3), {}),
    "randn": lambda m, t: ((2, 3), {}),
    "full": lambda m, t: (((2, 2), 1.5), {}),
    "eye": lambda m, t: ((3, 2), {}),
    "randint": lambda m, t: ((0, 9, (5,)), {}),
    "randperm": lambda m, t: ((6,), {}),
    "fft.fftfreq": lambda m, t: ((5, 0.1), {}),
    "fft.rfftfreq": lambda m, t: ((5, 0.1), {}),
    "normal": lambda m, t: ((t(X), t(P)), {}),
    "bernoulli": lambda m, t: ((t(P),), {}),
    "multinomial": lambda m, t: ((t(P), 2), {}),
    # ---- reductions and scans with a dim
    "all": lambda m, t: ((t(X), 1), {}),
    "any": lambda m, t: ((t(X), 1), {}),
    "amax": lambda m, t: ((t(X), 1), {}),
    "amin": lambda m, t: ((t(X), 1), {}),
    "aminmax": lambda m, t: ((t(X),), {"dim": 1}),
    "argmax": lambda m, t: ((t(X), 1), {}),
    "argmin": lambda m, t: ((t(X), 1), {}),
    "argsort": lambda m, t: ((t(X),), {"dim": 1, "stable": True}),
    "linalg.solve_ex": lambda m, t: ((t(SQ), t(SQ)), {}),
    "max": lambda m, t: ((t(X), 1), {}),
    "min": lambda m, t: ((t(X), 1), {}),
    "median": lambda m, t: ((t(X), 1), {}),
    "nanmedian": lambda m, t: ((t(X), 1), {}),
    "mode": lambda m, t: ((t(np.round(X)), 1), {}),
    "kthvalue": lambda m, t: ((t(X), 2, 1), {}),
    "topk": lambda m, t: ((t(X), 2, 1), {}),
    "sort": lambda m, t: ((t(X), 1), {}),
    "msort": lambda m, t: ((t(X),), {}),
    "cummax": lambda m, t: ((t(X), 1), {}),
    "cummin": lambda m, t: ((t(X), 1), {}),
    "cumsum": lambda m, t: ((t(X), 1), {}),
    "cumprod": lambda m, t: ((t(X), 1), {}),
    "logcumsumexp": lambda m, t: ((t(X), 1), {}),
    "logsumexp": lambda m, t: ((t(X), 1), {}),
    "special.logsumexp": lambda m, t: ((t(X), 1), {}),
    "sum": lambda m, t: ((t(X), 1), {}),
    "nansum": lambda m, t: ((t(X), 1), {}),
    "mean": lambda m, t: ((t(X), 1), {}),
    "nanmean": lambda m, t: ((t(X), 1), {}),
    "prod": lambda m, t: ((t(X), 1), {}),
    "std": lambda m, t: ((t(X), 1), {}),
    "var": lambda m, t: ((t(X), 1), {}),
    "norm": lambda m, t: ((t(X), 2, 1), {}),
    "frobenius_norm": lambda m, t: ((t(X), (0, 1)), {}),
    "nuclear_norm": lambda m, t: ((t(X),), {}),
    "quantile": lambda m, t: ((t(X), 0.3, 1), {}),
    "nanquantile": lambda m, t: ((t(X), 0.3, 1), {}),
    "softmax": lambda m, t: ((t(X), 1), {}),
    "log_softmax": lambda m, t: ((t(X), 1), {}),
    "diff": lambda m, t: ((t(X),), {}),
    "histc": lambda m, t: ((t(X),), {"bins": 4, "min": -2, "max": 2}),
    "histogram": lambda m, t: ((t(X), 4), {}),
    "bucketize": lambda m, t: ((t(X), t(np.array([-1.0, 0.0, 1.0]))), {}),
    "searchsorted": lambda m, t: ((t(np.array([-1.0, 0.0, 1.0])), t(X)), {}),
    "isin": lambda m, t: ((t(X), t(X[0])), {}),
    "nonzero": lambda m, t: ((t(M * 1.0),), {}),
    "nonzero_static": lambda m, t: ((t(M * 1.0),), {"size": 4}),
    "hash_tensor": lambda m, t: ((t(X),), {}),
    # ---- indexing
    "gather": lambda m, t: ((t(X[:2]), 1, t(I)), {}),
    "index_select": lambda m, t: ((t(X), 1, t(I[0])), {}),
    "take": lambda m, t: ((t(X), t(I[0])), {}),
    "take_along_dim": lambda m, t: ((t(X[:2]), t(I), 1), {}),
    "masked_select": lambda m, t: ((t(X), t(M)), {}),
    "index_add": lambda m, t: ((t(X), 1, t(I[0]), t(Y[:, :3])), {}),
    "index_copy": lambda m, t: ((t(X), 1, t(np.array([2, 0, 1])), t(Y[:, :3])), {}),
    "index_reduce": lambda m, t: ((t(X), 1, t(I[0]), t(Y[:, :3]), "prod"), {}),
    "scatter": lambda m, t: ((t(X), 1, t(I), t(Y[:2, :3])), {}),
    "scatter_add": lambda m, t: ((t(X), 1, t(I), t(Y[:2, :3])), {}),
    "scatter_reduce": lambda m, t: ((t(X), 1, t(I), t(Y[:2, :3]), "sum"), {}),
    "slice_scatter": lambda m, t: ((t(X), t(Y[:, :2])), {"dim": 1, "start": 0, "end": 2}),
    "where": lambda m, t: ((t(M), t(X), t(Y)), {}),
    # ---- joins
    "cat": lambda m, t: (([t(X), t(Y)], 1), {}),
    "concat": lambda m, t: (([t(X), t(Y)], 1), {}),
    "concatenate": lambda m, t: (([t(X), t(Y)], 1), {}),
    "stack": lambda m, t: (([t(X), t(Y)],), {}),
    "hstack": lambda m, t: (([t(X), t(Y)],), {}),
    "vstack": lambda m, t: (([t(X), t(Y)],), {}),
    "dstack": lambda m, t: (([t(X), t(Y)],), {}),
    "row_stack": lambda m, t: (([t(X), t(Y)],), {}),
    "column_stack": lambda m, t: (([t(X), t(Y)],), {}),
    # ---- copies of views
    "as_strided_copy": lambda m, t: ((t(X), (2, 2), (1, 2)), {}),
    "diagonal_copy": lambda m, t: ((t(X),), {}),
    "expand_copy": lambda m, t: ((t(V[:, None]), (3, 4)), {}),
    "narrow_copy": lambda m, t: ((t(X), 1, 0, 2), {}),
    "permute_copy": lambda m, t: ((t(X), (1, 0)), {}),
    "select_copy": lambda m, t: ((t(X), 1, 0), {}),
    "slice_copy": lambda m, t: ((t(X), 1, 0, 2), {}),
    "split_copy": lambda m, t: ((t(X), 2, 1), {}),
    "split_with_sizes_copy": lambda m, t: ((t(X), [1, 3], 1), {}),
    "squeeze_copy": lambda m, t: ((t(X[None]),), {}),
    "t_copy": lambda m, t: ((t(X),), {}),
    "transpose_copy": lambda m, t: ((t(X), 0, 1), {}),
    "unbind_copy": lambda m, t: ((t(X), 1), {}),
    "unfold_copy": lambda m, t: ((t(X), 1, 2, 1), {}),
    "unsqueeze_copy": lambda m, t: ((t(X), 0), {}),
    "view_copy": lambda m, t: ((t(X), (4, 3)), {}),
    "view_as_complex_copy": lambda m, t: ((t(X[:, :2].copy()),), {}),
    "view_as_real_copy": lambda m, t: ((t(X) * (1 + 1j),), {}),
    # ---- elementwise with scalars or other arguments
    "clamp": lambda m, t: ((t(X), -0.5, 0.5), {}),
    "clip": lambda m, t: ((t(X), -0.5, 0.5), {}),
    "clamp_max": lambda m, t: ((t(X), 0.5), {}),
    "clamp_min": lambda m, t: ((t(X), -0.5), {}),
    "hardshrink": lambda m, t: ((t(X), 0.5), {}),
    "threshold": lambda m, t: ((t(X), 0.1, 20.0), {}),
    "renorm": lambda m, t: ((t(X), 2, 0, 1.0), {}),
    "lerp": lambda m, t: ((t(X), t(Y), 0.3), {}),
    "polygamma": lambda m, t: ((1, t(P)), {}),
    "special.polygamma": lambda m, t: ((1, t(P)), {}),
    "mvlgamma": lambda m, t: ((t(P + 2), 2), {}),
    "special.multigammaln": lambda m, t: ((t(P + 2), 2), {}),
    "logit": lambda m, t: ((t(P),), {}),
    "special.logit": lambda m, t: ((t(P),), {}),
    "erfinv": lambda m, t: ((t(P),), {}),
    "special.erfinv": lambda m, t: ((t(P),), {}),
    "special.ndtri": lambda m, t: ((t(P),), {}),
    "round": lambda m, t: ((t(X),), {"decimals": 1}),
    "special.round": lambda m, t: ((t(X),), {}),
    "ldexp": lambda m, t: ((t(X), t(XI)), {}),
    "pow": lambda m, t: ((t(X), 2), {}),
    "float_power": lambda m, t: ((t(X), 2), {}),
    "nan_to_num": lambda m, t: ((t(X),), {}),
    "complex": lambda m, t: ((t(X), t(Y)), {}),
    "polar": lambda m, t: ((t(P), t(X)), {}),
    "bitwise_and": lambda m, t: ((t(XI), t(YI)), {}),
    "bitwise_or": lambda m, t: ((t(XI), t(YI)), {}),
    "bitwise_xor": lambda m, t: ((t(XI), t(YI)), {}),
    "bitwise_left_shift": lambda m, t: ((t(XI), t(YI)), {}),
    "bitwise_right_shift": lambda m, t: ((t(XI), t(YI)), {}),
    "bitwise_not": lambda m, t: ((t(XI),), {}),
    "gcd": lambda m, t: ((t(XI), t(YI)), {}),
    "lcm": lambda m, t: ((t(XI), t(YI)), {}),
    "addcdiv": lambda m, t: ((t(X), t(Y), t(P)), {}),
    "addcmul": lambda m, t: ((t(X), t(Y), t(P)), {}),
    "special.zeta": lambda m, t: ((t(P + 2), t(P)), {}),
    "igamma": lambda m, t: ((t(P), t(P)), {}),
    "igammac": lambda m, t: ((t(P), t(P)), {}),
    "special.gammainc": lambda m, t: ((t(P), t(P)), {}),
    "special.gammaincc": lambda m, t: ((t(P), t(P)), {}),
    # ---- linear algebra
    "matmul": lambda m, t: ((t(X), t(Y.T)), {}),
    "mm": lambda m, t: ((t(X), t(Y.T)), {}),
    "bmm": lambda m, t: ((t(B3), t(B3)), {}),
    "mv": lambda m, t: ((t(X), t(Y[0])), {}),
    "dot": lambda m, t: ((t(V), t(V)), {}),
    "vdot": lambda m, t: ((t(V), t(V)), {}),
    "inner": lambda m, t: ((t(X), t(Y)), {}),
    "outer": lambda m, t: ((t(V), t(V)), {}),
    "ger": lambda m, t: ((t(V), t(V)), {}),
    "kron": lambda m, t: ((t(SQ), t(SQ)), {}),
    "tensordot": lambda m, t: ((t(X), t(Y.T)), {"dims": 1}),
    "addmm": lambda m, t: ((t(SQ), t(SQ), t(SQ)), {}),
    "addbmm": lambda m, t: ((t(SQ), t(B3), t(B3)), {}),
    "baddbmm": lambda m, t: ((t(B3), t(B3), t(B3)), {}),
    "addmv": lambda m, t: ((t(V), t(SQ), t(V)), {}),
    "addr": lambda m, t: ((t(SQ), t(V), t(V)), {}),
    "chain_matmul": lambda m, t: ((t(SQ), t(SQ), t(SQ)), {}),
    "cross": lambda m, t: ((t(SQ), t(SQ.T)), {"dim": 1}),
    "linalg.cross": lambda m, t: ((t(SQ), t(SQ.T)), {}),
    "diag": lambda m, t: ((t(SQ),), {}),
    "tril": lambda m, t: ((t(SQ),), {}),
    "triu": lambda m, t: ((t(SQ),), {}),
    "cholesky": lambda m, t: ((t(SPD),), {}),
    "cholesky_inverse": lambda m, t: ((t(np.linalg.cholesky(SPD)),), {}),
    "cholesky_solve": lambda m, t: ((t(X[:, :3].T), t(np.linalg.cholesky(SPD))), {}),
    "inverse": lambda m, t: ((t(SQ),), {}),
    "matrix_power": lambda m, t: ((t(SQ), 2), {}),
    "linalg.matrix_power": lambda m, t: ((t(SQ), 2), {}),
    "lstsq": lambda m, t: ((t(SQ), t(SQ)), {}),
    "solve": lambda m, t: ((t(SQ), t(SQ)), {}),
    "symeig": lambda m, t: ((t(SPD),), {}),
    "matrix_rank": lambda m, t: ((t(SQ),), {}),
    "linalg.matrix_rank": lambda m, t: ((t(SQ),), {}),
    "geqrf": lambda m, t: ((t(SQ),), {}),
    "orgqr": lambda m, t: ((t(SQ), t(V)), {}),
    "ormqr": lambda m, t: ((t(SQ), t(V), t(SQ)), {}),
    "lu": lambda m, t: ((t(SQ),), {}),
    "lu_solve": lambda m, t: ((t(SQ), t(SQ), m.tensor([1, 2, 3], dtype=m.int32)), {}),
    "lu_unpack": lambda m, t: ((t(SQ), m.tensor([1, 2, 3], dtype=m.int32)), {}),
    "qr": lambda m, t: ((t(SQ),), {}),
    "svd": lambda m, t: ((t(SQ),), {}),
    "slogdet": lambda m, t: ((t(SQ),), {}),
    "triangular_solve": lambda m, t: ((t(SQ), t(np.triu(SQ))), {}),
    "linalg.cholesky": lambda m, t: ((t(SPD),), {}),
    "linalg.cholesky_ex": lambda m, t: ((t(SPD),), {}),
    "linalg.eigh": lambda m, t: ((t(SPD),), {}),
    "linalg.eigvalsh": lambda m, t: ((t(SPD),), {}),
    "linalg.ldl_factor": lambda m, t: ((t(SPD),), {}),
    "linalg.ldl_factor_ex": lambda m, t: ((t(SPD),), {}),
    "linalg.ldl_solve": lambda m, t: (tuple(m.linalg.ldl_factor(t(SPD))) + (t(SQ),), {}),
    "linalg.lu_solve": lambda m, t: (tuple(m.linalg.lu_factor(t(SQ))) + (t(SQ),), {}),
    "linalg.householder_product": lambda m, t: ((t(SQ), t(V)), {}),
    "linalg.multi_dot": lambda m, t: (([t(SQ), t(SQ), t(SQ)],), {}),
    "linalg.solve_triangular": lambda m, t: ((t(np.triu(SQ)), t(SQ)), {"upper": True}),
    "linalg.tensorinv": lambda m, t: ((t(SQ),), {"ind": 1}),
    "linalg.tensorsolve": lambda m, t: ((t(SQ), t(V)), {}),
    "linalg.vecdot": lambda m, t: ((t(X), t(Y)), {}),
    "linalg.vector_norm": lambda m, t: ((t(X),), {}),
    "linalg.matrix_norm": lambda m, t: ((t(X),), {}),
    "linalg.norm": lambda m, t: ((t(X),), {}),
    "linalg.cond": lambda m, t: ((t(SQ),), {}),
    "linalg.lstsq": lambda m, t: ((t(SQ), t(SQ)), {}),
    "fft.irfft": lambda m, t: ((t(X) * (1 + 0j),), {}),
    "fft.irfft2": lambda m, t: ((t(X) * (1 + 0j),), {}),
    "fft.irfftn": lambda m, t: ((t(X) * (1 + 0j),), {}),
    "fft.hfft": lambda m, t: ((t(X) * (1 + 0j),), {}),
    "fft.hfft2": lambda m, t: ((t(X) * (1 + 0j),), {}),
    "fft.hfftn": lambda m, t: ((t(X) * (1 + 0j),), {}),
    # ---- odd ones
    "batch_norm_elemt": lambda m, t: ((t(X), t(np.ones(4)), t(np.zeros(4)), t(np.zeros(4)),
                                       t(np.ones(4)), 1e-5), {}),
    "native_batch_norm": lambda m, t: ((t(X), t(np.ones(4)), t(np.zeros(4)), t(np.zeros(4)),
                                        t(np.ones(4)), True, 0.1, 1e-5), {}),
}
BINARY = frozenset({
    "add", "arctan2", "atan2", "copysign", "div", "divide", "eq", "floor_divide", "fmax",
    "fmin", "fmod", "ge", "greater", "greater_equal", "gt", "heaviside", "hypot", "le", "less",
    "less_equal", "logaddexp", "logaddexp2", "logical_and", "logical_or", "logical_xor", "lt",
    "maximum", "minimum", "mul", "multiply", "ne", "nextafter", "not_equal", "remainder", "sub",
    "subtract", "true_divide", "xlogy", "special.xlog1py", "special.xlogy",
    *(f"special.{kind}_polynomial_{x}" for kind, xs in (
        ("chebyshev", "tuvw"), ("shifted_chebyshev", "tuvw"), ("hermite", ("h", "he")),
        ("laguerre", "l"), ("legendre", "p")) for x in xs),
})
SQUARE = frozenset({"linalg.det", "linalg.eig", "linalg.eigvals", "linalg.inv", "linalg.inv_ex"})
# no CPU kernel in torch, removed from torch, or sparse results
UNPROBED = frozenset({"batch_norm_elemt", "lstsq", "matrix_rank", "solve", "symeig", "hspmm",
                      "saddmm", "sspaddmm"})
# torch casts a float result into an integer out (a complex one into a float out) here; Ember
# refuses, as can_cast does (a silent truncation)
LENIENT_IN_TORCH = frozenset({"sum", "prod", "cumsum", "cumprod", "mean", "logsumexp",
                              "special.logsumexp", "bernoulli", "lu", "split_copy"})
# torch has no complex kernel for these on some shapes only (std(x, 1) refuses a complex out,
# std(vector, 0) takes one): Ember takes one always
COMPLEX_BY_SHAPE_IN_TORCH = frozenset({"std", "var"})

# out dtypes tried for a result dtype: (variant, dtype name)
VARIANTS = {
    "float32": [("wider", "float64"), ("narrower", "float16"), ("other", "int64"),
                ("complex", "complex64")],
    "float64": [("narrower", "float32"), ("other", "int64"), ("complex", "complex128")],
    "complex64": [("wider", "complex128"), ("other", "float32")],
    "complex128": [("narrower", "complex64"), ("other", "float64")],
    "int64": [("narrower", "int32"), ("other", "float32")],
    "int32": [("wider", "int64"), ("other", "float32")],
    "bool": [("other", "int64"), ("float", "float32")],
}
NAMESPACES = {"": out_names.TORCH, "linalg": out_names.LINALG, "special": out_names.SPECIAL,
              "fft": out_names.FFT}
QUALIFIED = [f"{ns}.{n}" if ns else n for ns, names in NAMESPACES.items() for n in names]


def arguments(qualified: str):
    if qualified in ARGS:
        return ARGS[qualified]
    if qualified.split(".")[-1] in ARGS:  # (linalg.matrix_power as matrix_power)
        return ARGS[qualified.split(".")[-1]]
    if qualified in BINARY:
        return lambda m, t: ((t(P), t(X)), {})
    return lambda m, t: ((t(SQ if qualified in SQUARE else P),), {})


def function(lib, qualified: str):
    *ns, name = qualified.split(".")
    return getattr(getattr(lib, ns[0]) if ns else lib, name)


def call(lib, qualified: str, base: str, out=None):
    def t(a):
        a = np.asarray(a)
        kind = {"f": base, "c": "complex64" if base == "float32" else "complex128"}
        dtype = kind.get(a.dtype.kind)
        return lib.tensor(a) if dtype is None else lib.tensor(a, dtype=getattr(lib, dtype))

    args, kwargs = arguments(qualified)(lib, t)
    lib.manual_seed(0)
    if out is not None:
        kwargs["out"] = out
    return function(lib, qualified)(*args, **kwargs)


def cases(qualified: str, base: str):
    """(label, single, shapes, out dtypes): exact first, then one output varied; none where
    torch takes no input of that base dtype."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call(torch, qualified, base)
    except (RuntimeError, NotImplementedError, TypeError):
        return
    single = isinstance(result, torch.Tensor)
    results = (result,) if single else tuple(result)
    exact = [str(r.dtype).removeprefix("torch.") for r in results]
    shapes = [tuple(r.shape) for r in results]
    tried = [("exact", exact)] + [
        (f"out[{k}] {variant}", exact[:k] + [dtype] + exact[k + 1:])
        for k, d in enumerate(exact) for variant, dtype in VARIANTS.get(d, [])
        if base != "float64" or variant == "narrower"]  # (float64's others: float32's)
    for label, dtypes in tried:
        yield label, single, shapes, dtypes


def accepts(lib, qualified, base, single, shapes, dtypes) -> bool | Exception:
    outs = [lib.empty(s, dtype=getattr(lib, d)) for s, d in zip(shapes, dtypes, strict=True)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(lib, qualified, base, outs[0] if single else tuple(outs))
    except (RuntimeError, NotImplementedError, TypeError) as e:
        return e
    return True


@pytest.mark.parametrize("qualified", [q for q in QUALIFIED if q not in UNPROBED])
def test_out_dtypes_accepted_as_by_torch(qualified):
    torch.set_num_threads(1)
    wrong = []
    for base in ("float32", "float64", "complex64", "int64"):
        for label, single, shapes, dtypes in cases(qualified, base):
            ref = accepts(torch, qualified, base, single, shapes, dtypes)
            got = accepts(ember, qualified, base, single, shapes, dtypes)
            if label == "exact" and got is not True and base in ("complex64", "int64"):
                break  # (Ember takes no such input: not a question of out)
            if got is True and ref is not True and not (
                    qualified in COMPLEX_BY_SHAPE_IN_TORCH and label.endswith("complex")):
                wrong.append(f"{base} {label} {dtypes}: torch raises ({ref}), Ember accepts")
            elif ref is True and got is not True and not (
                    qualified in LENIENT_IN_TORCH and label.endswith("other")):
                wrong.append(f"{base} {label} {dtypes}: torch accepts, Ember raises {got!r}")
            elif got is not True and label != "exact" and not isinstance(got, DTypeError):
                wrong.append(f"{base} {label} {dtypes}: Ember raises {got!r}, not DTypeError")
    assert not wrong, f"{qualified}: " + "; ".join(wrong)


def test_tables_name_only_functions_that_take_out():
    assert not (out_names.EXACT | out_names.REAL) - set(QUALIFIED)
    assert not out_names.EXACT & out_names.REAL


def test_the_errors_name_op_dtypes_and_a_hint():
    x = ember.ones(2, 3)
    with pytest.raises(DTypeError, match=r"^mm\(\): expected out to have dtype Float, but got "
                                         r"Double instead: .*Hint: give an out of dtype "
                                         r"ember\.float32"):
        ember.mm(x, x.T, out=ember.empty(0, dtype=ember.float64))
    with pytest.raises(DTypeError, match=r"^sort\(\): expected out\[1\] to have dtype Long, "
                                         r"but got Int instead"):
        ember.sort(x, out=(ember.empty(0), ember.empty(0, dtype=ember.int32)))
    with pytest.raises(DTypeError, match=r"^nansum\(\): expected out to have a real dtype such "
                                         r"as Float, but got ComplexFloat instead.*Hint: give a "
                                         r"real out"):
        ember.nansum(x, 1, out=ember.empty(0, dtype=ember.complex64))
    ember.abs(x * 1j, out=ember.empty(0, dtype=ember.float64))  # (EXACT_IF: a complex input)


def test_a_refused_out_is_left_as_it_was():
    values, indices = ember.zeros(2), ember.zeros(2, dtype=ember.int32)
    with pytest.raises(DTypeError):
        ember.sort(ember.tensor([2.0, 1.0]), out=(values, indices))
    assert values.tolist() == [0.0, 0.0]  # (checked before any write)
