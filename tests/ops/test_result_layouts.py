"""Strides of op results on channels-last, transposed and expanded inputs, against PyTorch:
the ops PyTorch computes on a contiguous copy give C order whatever the input's layout."""

import numpy as np
import pytest
import torch

import ember

INPUTS = {
    "channels_last": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 4, 5)
    .contiguous(memory_format=m.channels_last),
    "transposed": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 5, 4).transpose(2, 3),
    "channels_last_3d": lambda m: m.arange(240.0, dtype=m.float64).reshape(2, 3, 2, 4, 5)
    .contiguous(memory_format=m.channels_last_3d),
}


def assert_like_torch(fn, layout, grad=True):
    """``fn(module, x)`` on the input ``layout`` in Ember and torch: same strides, values
    and (through a weighted sum) input gradients."""
    results = []
    for m in (ember, torch):
        x = (INPUTS[layout](m) / 50).requires_grad_(grad)
        y = fn(m, x)
        if grad:
            (y * m.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)).sum().backward()
        results.append((y, x.grad))
    (mine, mine_grad), (ref, ref_grad) = results
    assert mine.stride() == ref.stride()
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    if grad:
        assert mine_grad.stride() == ref_grad.stride()
        np.testing.assert_allclose(mine_grad.numpy(), ref_grad.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod",
                                "logcumsumexp", "cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_scans_give_c_order_as_torch(op, layout, dim):
    # Ember kept the input's layout (NumPy's), so .view(-1) of the result failed
    if op == "softmin":
        assert_like_torch(lambda m, x: m.nn.functional.softmin(x, dim), layout)
    elif op in ("cummax", "cummin"):
        assert_like_torch(lambda m, x: getattr(x, op)(dim).values, layout)
        assert_like_torch(lambda m, x: getattr(x, op)(dim).indices, layout, grad=False)
    else:
        assert_like_torch(lambda m, x: getattr(x, op)(dim), layout)


@pytest.mark.parametrize("layout", list(INPUTS))
def test_nan_to_num_keeps_a_dense_input_layout_as_torch(layout):
    # Ember copied in C order (torch's TensorIterator keeps the input's)
    assert_like_torch(lambda m, x: (x - 1).log().nan_to_num(), layout)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("slope", [0.1, 1.5])
def test_leaky_relu_keeps_a_dense_input_layout_and_orders_an_expanded_one_c(layout, slope):
    # (an expanded input took NumPy's empty_like layout, (48, 1, 12, 3): .view(-1) failed)
    assert_like_torch(lambda m, x: m.nn.functional.leaky_relu(x - 1, slope), layout)
    mine, ref = (m.nn.functional.leaky_relu(m.ones(8, 1, 4, 4).expand(8, 3, 4, 4) - 2, slope)
                 for m in (ember, torch))
    assert mine.stride() == ref.stride()
    assert mine.view(-1).tolist() == ref.view(-1).tolist()


@pytest.mark.parametrize("op", ["lgamma", "digamma", "i0"])
def test_special_functions_of_an_expanded_input_are_c_ordered_as_torch(op):
    # (the float64 host copy of an expanded array put its broadcast dims innermost: strides
    # (4, 40, 1, 8) for a (2, 3, 4, 5) result)
    results = []
    for m in (ember, torch):
        x = (m.arange(15.0, dtype=m.float64).reshape(1, 3, 1, 5) + 1).expand(2, 3, 4, 5)
        results.append(getattr(x, op)())
    mine, ref = results
    assert mine.stride() == ref.stride()
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-12)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("op", ["dropout", "alpha_dropout", "dropout_p1"])
def test_dropout_keeps_a_dense_input_layout_as_torch(layout, op):
    # Ember's mask was C-ordered, so the masked result was too
    strides = []
    for m in (ember, torch):
        x = INPUTS[layout](m)
        F = m.nn.functional
        y = F.dropout(x, 1.0) if op == "dropout_p1" else getattr(F, op)(x, 0.5, True)
        strides.append(y.stride())
        kept = (y != 0) if op == "dropout" else None
        if kept is not None and m is ember:  # the kept entries are the input's, scaled
            np.testing.assert_allclose(y[kept].numpy(), 2 * x[kept].numpy())
    assert strides[0] == strides[1]


@pytest.mark.parametrize("op, factor", [("pixel_shuffle", 2), ("pixel_unshuffle", 2),
                                        ("pixel_shuffle", 1)])
@pytest.mark.parametrize("channels", [4, 8])
def test_pixel_shuffles_of_channels_last_input_stay_channels_last_as_torch(op, factor,
                                                                            channels):
    # Ember's pixel_unshuffle gave C order, pixel_shuffle a C-channel stride for one channel
    results = []
    for m in (ember, torch):
        x = m.arange(2.0 * channels * 36, dtype=m.float64).reshape(2, channels, 6, 6)
        x = x.contiguous(memory_format=m.channels_last).requires_grad_()
        y = getattr(m.nn.functional, op)(x, factor)
        (y * m.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)).sum().backward()
        results.append((y, x.grad))
    (mine, mine_grad), (ref, ref_grad) = results
    assert mine.stride() == ref.stride() and mine_grad.stride() == ref_grad.stride()
    np.testing.assert_array_equal(mine.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(mine_grad.numpy(), ref_grad.numpy())


@pytest.mark.parametrize("layout", ["channels_last", "channels_last_3d"])
@pytest.mark.parametrize("op", ["add", "exp", "neg"])
def test_an_out_resized_to_a_channels_last_result_is_channels_last_as_torch(op, layout):
    # Ember resized out to C order, torch to the result's layout
    results = []
    for m in (ember, torch):
        x, out = INPUTS[layout](m) / 50, m.empty(0, dtype=m.float64)
        args = (x, x) if op == "add" else (x,)
        assert getattr(m, op)(*args, out=out) is out
        results.append(out)
    assert results[0].stride() == results[1].stride()
    np.testing.assert_allclose(results[0].numpy(), results[1].numpy())


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "prod", "std", "logsumexp",
                                "max", "argmax", "all", "count_nonzero"])
@pytest.mark.parametrize("dim, keepdim", [(1, True), (-1, False), (-1, True), ((2, 3), True),
                                          ((0, 1), False)])
def test_reductions_give_c_order_as_torch(op, layout, dim, keepdim):
    # NumPy's reductions follow the input's layout (x_cl.sum(-1).view(-1) failed); torch's
    # allocate C-ordered results, size-1 dims' strides included
    if op in ("max", "argmax", "prod") and not isinstance(dim, int):  # (torch: one dim)
        dim = dim[0]
    if op == "count_nonzero":
        call = lambda m, x: m.count_nonzero(x, dim)  # noqa: E731
    elif op == "all":
        call = lambda m, x: (x > 0.5).all(dim, keepdim=keepdim)  # noqa: E731
    elif op == "max":
        call = lambda m, x: x.max(dim, keepdim=keepdim).values  # noqa: E731
    else:
        call = lambda m, x: getattr(x, op)(dim, keepdim=keepdim)  # noqa: E731
    differentiable = op not in ("argmax", "all", "count_nonzero")
    assert_like_torch(call, layout, grad=differentiable)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("op", ["layer_norm", "layer_norm_affine", "instance_norm",
                                "batch_norm", "batch_norm_affine", "batch_norm_eval"])
def test_norms_are_laid_out_as_torch(op, layout):
    # layer_norm and instance_norm: C order whatever the input's (Ember kept the input's);
    # batch_norm: channels-last kept, other layouts C (Ember kept a transposed one)
    def call(m, x):
        F, c = m.nn.functional, x.shape[1]
        w, b = m.linspace(0.5, 1.5, c, dtype=x.dtype), m.linspace(-1, 1, c, dtype=x.dtype)
        if op.startswith("layer_norm"):
            n = x.shape[-1]
            affine = (m.linspace(0.5, 1.5, n, dtype=x.dtype), m.linspace(-1, 1, n,
                                                                        dtype=x.dtype))
            return F.layer_norm(x, (n,), *(affine if op.endswith("affine") else ()))
        if op == "instance_norm":
            return F.instance_norm(x, weight=w, bias=b)
        if op == "batch_norm_eval":
            return F.batch_norm(x, b, w, w, b, training=False)
        return F.batch_norm(x, None, None, *((w, b) if op.endswith("affine") else ()),
                            training=True)
    assert_like_torch(call, layout)


def test_batch_norm_of_a_transposed_input_is_c_ordered_as_torch():
    assert_like_torch(lambda m, x: m.nn.functional.batch_norm(x.transpose(1, 3), None, None,
                                                              training=True), "transposed")


@pytest.mark.parametrize("layout", list(INPUTS))
def test_logsigmoid_is_c_ordered_as_torch(layout):
    assert_like_torch(lambda m, x: m.nn.functional.logsigmoid(x - 1), layout)


COMPOSITES = {  # an elementwise op of the input (first) and a reduction or product of others
    "rms_norm": lambda m, x: m.nn.functional.rms_norm(x, x.shape[-1:]),
    "rms_norm_2_dims": lambda m, x: m.nn.functional.rms_norm(x, x.shape[-2:]),
    "rms_norm_weight": lambda m, x: m.nn.functional.rms_norm(
        x, x.shape[-1:], m.linspace(0.5, 1.5, x.shape[-1], dtype=x.dtype)),
    "normalize": lambda m, x: m.nn.functional.normalize(x, dim=-1),
    "normalize_dim1_p1": lambda m, x: m.nn.functional.normalize(x, p=1.0, dim=1),
    "normalize_p3": lambda m, x: m.nn.functional.normalize(x, p=3.0, dim=-1),
    "normalize_inf": lambda m, x: m.nn.functional.normalize(x, p=float("inf"), dim=-1),
    "local_response_norm": lambda m, x: m.nn.functional.local_response_norm(x, 2),
    "addcmul": lambda m, x: m.addcmul(x, m.ones(x.shape, dtype=x.dtype), x.detach().contiguous(),
                                      value=0.5),
    "addcdiv": lambda m, x: m.addcdiv(x, m.ones(x.shape, dtype=x.dtype),
                                      x.detach().contiguous() + 1),
    "lerp": lambda m, x: m.lerp(x, m.ones(x.shape, dtype=x.dtype), 0.3),
    "lerp_past_half": lambda m, x: m.lerp(x, m.ones(x.shape, dtype=x.dtype), 0.7),
    "lerp_tensor_weight": lambda m, x: m.lerp(x, m.ones(x.shape, dtype=x.dtype), x.detach()),
}


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("op", list(COMPOSITES))
def test_composites_follow_their_first_operand_as_torch(op, layout):
    # NumPy's iterator gives C order to x op r where x (channels-last, transposed) and a
    # C-ordered r disagree, torch the first operand's; rms_norm reads channels-last as it is,
    # other layouts in C order (Ember: C for channels-last, the input's for a transpose)
    assert_like_torch(COMPOSITES[op], layout)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2])
@pytest.mark.parametrize("op", ["stack", "cat"])
@pytest.mark.parametrize("mixed", [False, True])
def test_stack_and_cat_are_laid_out_as_torch(op, layout, dim, mixed):
    # torch's cat: the inputs' channels-last format when all suggest it, else C (Ember kept
    # a transpose's order); its stack: that cat along ``dim`` split by a view, or (at the
    # end) of the inputs unsqueezed (Ember had NumPy's stack of unsqueezed inputs). With a
    # C input among them (``mixed``): C.
    def join(m, x):
        return getattr(m, op)([x, x.contiguous() + 1 if mixed else x * 2, x + 1], dim)
    assert_like_torch(join, layout)


@pytest.mark.parametrize("case", ["size_one_dim", "size_one_dim_stack", "legacy_empty"])
def test_cat_of_channels_last_inputs_is_channels_last_as_torch(case):
    # joined along a size-1 dim, NumPy's result was in neither layout (its order of size-1
    # dims is its own); a legacy empty (0,) operand counts (as C) when torch picks the format
    def join(m):
        x = m.arange(30.0, dtype=m.float64).reshape(2, 3, 1, 5).contiguous(
            memory_format=m.channels_last)
        if case == "legacy_empty":
            return m.cat([x, m.tensor([], dtype=m.float64)])
        return getattr(m, "stack" if case.endswith("stack") else "cat")([x, x + 1, x * 2], 2)
    mine, ref = join(ember), join(torch)
    assert mine.stride() == ref.stride()
    np.testing.assert_array_equal(mine.numpy(), ref.numpy())


POOL_INPUTS = {  # (name, rank of the pool, input in torch or Ember)
    "transposed_1d": (1, lambda m: m.arange(48.0, dtype=m.float64).reshape(2, 8, 3)
                      .transpose(1, 2)),
    "expanded_1d": (1, lambda m: m.arange(24.0, dtype=m.float64).reshape(1, 3, 8)
                    .expand(2, 3, 8)),
    "transposed_2d": (2, lambda m: m.arange(288.0, dtype=m.float64).reshape(2, 3, 8, 6)
                      .transpose(2, 3)),
    "expanded_2d": (2, lambda m: m.arange(24.0, dtype=m.float64).reshape(1, 3, 1, 8)
                    .expand(2, 3, 6, 8)),
    "channels_last_expanded": (2, lambda m: m.arange(144.0, dtype=m.float64)
                               .reshape(1, 3, 6, 8).contiguous(memory_format=m.channels_last)
                               .expand(2, 3, 6, 8)),
    "channels_last_3d": (3, lambda m: m.arange(576.0, dtype=m.float64).reshape(2, 3, 4, 6, 4)
                         .contiguous(memory_format=m.channels_last_3d)),
    "transposed_3d": (3, lambda m: m.arange(576.0, dtype=m.float64).reshape(2, 3, 4, 4, 6)
                      .transpose(3, 4)),
}
POOLS = {
    "max": lambda F, k, x: getattr(F, f"max_pool{k}d")(x, 2),
    "max_overlapping": lambda F, k, x: getattr(F, f"max_pool{k}d")(x, 3, 1, 1),
    "max_indices": lambda F, k, x: getattr(F, f"max_pool{k}d")(x, 2, return_indices=True),
    "avg": lambda F, k, x: getattr(F, f"avg_pool{k}d")(x, 2),
    "adaptive_avg": lambda F, k, x: getattr(F, f"adaptive_avg_pool{k}d")(x, 3),
    "adaptive_max": lambda F, k, x: getattr(F, f"adaptive_max_pool{k}d")(x, 3,
                                                                          return_indices=True),
}


@pytest.mark.parametrize("layout", list(POOL_INPUTS))
@pytest.mark.parametrize("op", list(POOLS))
@pytest.mark.parametrize("grad", [True, False])
def test_pools_are_laid_out_as_torch(op, layout, grad):
    # Ember kept odd layouts of transposed and expanded inputs where torch's max pools give
    # C; 1-D pools running torch's 2-D kernel (avg, adaptive, max with indices or for a
    # gradient) keep (N, L, C) transposed; max_pool3d with indices keeps channels_last_3d
    rank, make = POOL_INPUTS[layout]
    results = []
    for m in (ember, torch):
        x = (make(m) * 7 % 23 / 13).requires_grad_(grad)
        out = POOLS[op](m.nn.functional, rank, x)
        y = out[0] if isinstance(out, tuple) else out
        if grad:
            (y * m.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)).sum().backward()
        results.append(((*out,) if isinstance(out, tuple) else (out,), x.grad))
    (mine, mine_grad), (ref, ref_grad) = results
    for a, b in zip(mine, ref, strict=True):
        assert a.stride() == b.stride()
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    if grad:
        np.testing.assert_allclose(mine_grad.numpy(), ref_grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["float", "double", "half", "bfloat16", "int", "long", "short",
                                  "char", "byte", "bool", "cfloat", "cdouble"])
@pytest.mark.parametrize("fmt", ["channels_last", "contiguous_format", "preserve_format"])
def test_dtype_methods_take_memory_format_as_torch(name, fmt):
    """x.float(memory_format=...) raised a TypeError (op_db's samples pass it)."""
    results = []
    for m in (torch, ember):
        x = m.arange(24).reshape(1, 2, 3, 4).transpose(2, 3)
        out = getattr(x, name)(memory_format=getattr(m, fmt))
        results.append((str(out.dtype).split(".")[1], out.stride(), out.float().tolist()))
    assert results[0] == results[1]
    x = ember.ones(3)
    assert x.float(memory_format=ember.contiguous_format) is x
    with pytest.raises(TypeError):  # (keyword only, as torch's)
        x.float(ember.contiguous_format)
