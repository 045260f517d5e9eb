"""The names, per namespace, whose PyTorch counterparts take ``out=``: the functions
:func:`ember.ops.out_arg.add_out_arguments` gives that keyword (``tests/ops/test_out_arg.py``
reads PyTorch's signatures and fails when an Ember function that PyTorch's takes ``out=`` is
missing here, or one is listed whose PyTorch counterpart does not), and the dtype rules of
their ``out`` where PyTorch's are stricter than :func:`ember.can_cast` (by qualified name,
``"linalg.inv"``; ``tests/ops/test_out_dtype_rules.py`` checks them against torch).
"""

__all__ = ["TORCH", "LINALG", "SPECIAL", "FFT", "EXACT", "EXACT_IF", "REAL"]

# ember
TORCH = (
    "abs", "absolute", "acos", "acosh", "add", "addbmm", "addcdiv", "addcmul", "addmm",
    "addmv", "addr", "alias_copy", "all", "amax", "amin", "aminmax", "angle", "any", "arange",
    "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax",
    "argmin", "argsort", "as_strided_copy", "asin", "asinh", "atan", "atan2", "atanh",
    "baddbmm", "batch_norm_elemt", "bernoulli", "bitwise_and", "bitwise_left_shift",
    "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "bmm", "bucketize",
    "cat", "ceil", "chain_matmul", "cholesky", "cholesky_inverse", "cholesky_solve", "clamp",
    "clamp_max", "clamp_min", "clip", "column_stack", "complex", "concat", "concatenate",
    "conj_physical", "copysign", "cos", "cosh", "cross", "cummax", "cummin", "cumprod",
    "cumsum", "deg2rad", "detach_copy", "diag", "diagonal_copy", "diff", "digamma", "div",
    "divide", "dot", "dstack", "empty", "eq", "erf", "erfc", "erfinv", "exp", "exp2",
    "expand_copy", "expm1", "eye", "fix", "float_power", "floor", "floor_divide", "fmax",
    "fmin", "fmod", "frac", "frexp", "frobenius_norm", "full", "gather", "gcd", "ge", "geqrf",
    "ger", "greater", "greater_equal", "gt", "hardshrink", "hash_tensor", "heaviside", "histc",
    "histogram", "hspmm", "hstack", "hypot", "i0", "igamma", "igammac", "index_add",
    "index_copy", "index_reduce", "index_select", "inner", "inverse", "isin", "isneginf",
    "isposinf", "kron", "kthvalue", "lcm", "ldexp", "le", "lerp", "less", "less_equal",
    "lgamma", "linspace", "log", "log10", "log1p", "log2", "log_softmax", "logaddexp",
    "logaddexp2", "logcumsumexp", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logit", "logspace", "logsumexp", "lstsq", "lt", "lu", "lu_solve", "lu_unpack",
    "masked_select", "matmul", "matrix_power", "matrix_rank", "max", "maximum", "mean",
    "median", "min", "minimum", "mm", "mode", "msort", "mul", "multinomial", "multiply", "mv",
    "mvlgamma", "nan_to_num", "nanmean", "nanmedian", "nanquantile", "nansum", "narrow_copy",
    "native_batch_norm", "ne", "neg", "negative", "nextafter", "nonzero", "nonzero_static",
    "norm", "normal", "not_equal", "nuclear_norm", "ones", "orgqr", "ormqr", "outer",
    "permute_copy", "polar", "polygamma", "pow", "prod", "qr", "quantile", "rad2deg", "rand",
    "randint", "randn", "randperm", "range", "reciprocal", "remainder", "renorm", "round",
    "row_stack", "rsqrt", "saddmm", "scatter", "scatter_add", "scatter_reduce", "searchsorted",
    "select_copy", "sgn", "sigmoid", "sign", "signbit", "sin", "sinc", "sinh", "slice_copy",
    "slice_scatter", "slogdet", "softmax", "solve", "sort", "split_copy",
    "split_with_sizes_copy", "sqrt", "square", "squeeze_copy", "sspaddmm", "stack", "std",
    "sub", "subtract", "sum", "svd", "symeig", "t_copy", "take", "take_along_dim", "tan",
    "tanh", "tensordot", "threshold", "topk", "transpose_copy", "triangular_solve", "tril",
    "triu", "true_divide", "trunc", "unbind_copy", "unfold_copy", "unsqueeze_copy", "var",
    "vdot", "view_as_complex_copy", "view_as_real_copy", "view_copy", "vstack", "where",
    "xlogy", "zeros",
)

# ember.linalg
LINALG = (
    "cholesky", "cholesky_ex", "cond", "cross", "det", "eig", "eigh", "eigvals", "eigvalsh",
    "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve",
    "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve",
    "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vecdot",
    "vector_norm",
)

# ember.special
SPECIAL = (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "logit",
    "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
)

# ember.fft
FFT = (
    "fft", "fft2", "fftfreq", "fftn", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn",
    "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
    "rfftn",
)

# every out must have exactly its result's dtype (PyTorch's structured kernels, its linear
# algebra, indexing, sorting, copies of views): no widening, no narrowing, no other kind
EXACT = frozenset({
    "addbmm", "addmm", "addmv", "alias_copy", "all", "amax", "amin", "aminmax", "any", "argmax",
    "argmin", "argsort", "as_strided_copy", "baddbmm", "bitwise_not", "bmm", "bucketize",
    "ceil", "chain_matmul", "clamp", "clamp_max", "clamp_min", "clip", "complex",
    "conj_physical", "cross", "cummax", "cummin", "detach_copy", "diag", "diagonal_copy", "dot",
    "expand_copy", "fft.ihfft", "fix", "float_power", "floor", "frac", "frexp",
    "frobenius_norm", "gather", "hardshrink", "hash_tensor", "heaviside", "histc", "histogram",
    "index_add", "index_copy", "index_reduce", "index_select", "inner", "inverse", "isin",
    "isneginf", "isposinf", "kthvalue", "linalg.cholesky", "linalg.cholesky_ex", "linalg.cross",
    "linalg.det", "linalg.eigh", "linalg.eigvalsh", "linalg.inv", "linalg.inv_ex",
    "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve", "linalg.lu",
    "linalg.lu_factor", "linalg.lu_factor_ex", "linalg.lu_solve", "linalg.matmul",
    "linalg.matrix_norm", "linalg.matrix_power", "linalg.multi_dot", "linalg.norm", "linalg.qr",
    "linalg.slogdet", "linalg.solve", "linalg.solve_ex", "linalg.solve_triangular",
    "linalg.svd", "linalg.svdvals", "linalg.vecdot", "linalg.vector_norm", "log_softmax",
    "logcumsumexp", "lu_solve", "lu_unpack", "masked_select", "matmul", "matrix_power", "max",
    "median", "min", "mm", "mode", "msort", "multinomial", "mv", "nan_to_num", "nanmedian",
    "nanquantile", "narrow_copy", "native_batch_norm", "neg", "negative", "nonzero",
    "nonzero_static", "norm", "nuclear_norm", "ormqr", "permute_copy", "polar", "qr",
    "quantile", "renorm", "round", "scatter", "scatter_add", "scatter_reduce", "searchsorted",
    "select_copy", "sgn", "sign", "signbit", "slice_copy", "slice_scatter", "slogdet",
    "softmax", "sort", "special.round", "split_with_sizes_copy", "squeeze_copy", "svd",
    "t_copy", "take", "take_along_dim", "tensordot", "topk", "transpose_copy",
    "triangular_solve", "tril", "triu", "trunc", "unbind_copy", "unfold_copy", "unsqueeze_copy",
    "vdot", "view_as_complex_copy", "view_as_real_copy", "view_copy", "where",
})

# the same, only when the first tensor argument is of this kind ("real": not complex;
# "floating": real floating): abs of a complex tensor, ifft of a complex one, ldexp of an integer
# one cast into out as add's result does
EXACT_IF = {"abs": "real", "absolute": "real", "fft.ifft": "real", "ldexp": "floating"}

# out may not be complex (PyTorch's irfft and hfft want a real one; the others have no complex
# kernel to compute into it)
REAL = frozenset({
    "arange", "bernoulli", "fft.fftfreq", "fft.hfft", "fft.hfft2", "fft.hfftn", "fft.irfft",
    "fft.irfft2", "fft.irfftn", "fft.rfftfreq", "nanmean", "nansum", "range",
})
