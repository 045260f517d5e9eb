"""The elementwise primitives: each output element is computed from the elements at the same
position of the (broadcast) inputs. ``vmap`` batches them by broadcasting
(``ember.func.batching.elementwise``); on the meta device their results take the layout of
their inputs, as PyTorch's do (``ember.ops.meta``)."""

ELEMENTWISE = (
    # arithmetic and comparisons
    "add", "sub", "mul", "div", "floor_divide", "div_trunc", "remainder", "fmod", "pow",
    "pow_scalar", "neg", "lerp", "addc_half", "add_scaled_half", "sub_scaled_half",
    "add_scaled_complex", "sub_scaled_complex",
    "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift",
    "bitwise_not", "isnan", "isinf", "isfinite", "signbit", "isclose", "nan_to_num",
    # selection
    "where", "maximum", "minimum", "fmax", "fmin", "clamp", "clamp_tensor",
    # unary math
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "sigmoid", "erf", "abs", "sign", "floor", "ceil", "trunc", "frac", "round",
    "igamma", "igammac", "frexp", "standard_gamma_grad", "fake_quantize_per_tensor_affine",
    # activations
    "relu", "relu_grad", "leaky_relu", "leaky_relu_grad", "hardtanh", "hardtanh_grad", "elu",
    "elu_from_output", "elu_grad", "softplus", "softplus_grad", "gelu",
    "gelu_slope", "silu",
    "silu_slope", "hardsigmoid", "hardsigmoid_grad", "hardswish", "hardswish_grad", "mish",
    "mish_slope", "prelu", "softshrink", "hardshrink", "shrink_grad",
    "batch_norm_input_grad",
    # conversions
    "cast", "copy", "class_index", "index_check", "nola_check",
    # complex numbers
    "real", "imag", "conj", "complex", "angle",
)
