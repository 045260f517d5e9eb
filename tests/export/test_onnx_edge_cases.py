"""Edge cases of ONNX export that once gave wrong answers or spurious refusals: 0-d results,
reductions of non-bool tensors to bools, NaN in max reductions, and dynamic axes through
negative indices, padding, repeated arguments and views that copy at one size only."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import check_export, eager, run_onnx


def test_zero_dim_results_stay_zero_dim():
    x = ember.randn(3, 4)
    check_export(lambda t: (t.mean(), t.var(), t.sum() / 2, F.mse_loss(t, t * 2)), x)


def test_argmax_over_everything_keeps_every_dim():
    x = ember.randn(3, 4)
    check_export(lambda t: (t.argmax(dim=None, keepdim=True), t.argmin(dim=None, keepdim=True),
                            t.argmax()), x)


def test_all_and_any_of_numbers_test_for_nonzero():
    x = ember.tensor([[0.5, 1.0, -0.3], [0.0, 2.0, 0.1]])
    check_export(lambda t: (t.all(1), t.any(0), t.all(), (t * 4).to(ember.int64).all(1)), x,
                 dynamic_batch=True)


def test_max_reductions_propagate_nan():
    x = ember.tensor([[1.0, float("nan"), 0.0, float("nan")], [1.0, 3.0, -1.0, 2.0]])
    check_export(lambda t: (t.amax(1), t.amin(1, keepdim=True), t.max(), t.argmax(1),
                            t.argmin(0), t.max(dim=1).values, t.min(dim=1).indices), x,
                 dynamic_batch=True)


def _dynamic_check(fn, args, dynamic_axes, feeds):
    names = [f"in{i}" for i in range(len(args))]
    proto = ember.onnx.to_model(fn, tuple(args), input_names=names,
                                dynamic_axes={names[i]: axes for i, axes in dynamic_axes.items()})
    for inputs in feeds:
        for got, want in zip(run_onnx(proto, *(a.numpy() for a in inputs)), eager(fn, *inputs)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_tensor_indexed_along_a_dynamic_axis_by_negative_indices():
    i = ember.tensor([-1, 0, -2])
    _dynamic_check(lambda a, j: a[j], [ember.randn(5, 2), i], {0: {0: "n"}},
                   [[ember.randn(7, 2), i]])


def test_constant_padding_of_dynamic_axes():
    def fn(a):
        return F.pad(a, (1, 2, 3, 0), value=0.5)

    _dynamic_check(fn, [ember.randn(2, 3, 4)], {0: {0: "b", 1: "h", 2: "w"}},
                   [[ember.randn(3, 5, 2)]])


def test_one_tensor_passed_as_several_arguments_with_dynamic_axes():
    ember.manual_seed(0)
    attention = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = ember.randn(2, 4, 8)
    axes = {0: "batch", 1: "time"}
    _dynamic_check(attention, [x, x, x], {0: axes, 1: axes, 2: axes},
                   [[y, y, y] for y in [ember.randn(3, 6, 8)]])


def test_a_view_that_copies_at_one_size_only():
    def fn(a):  # (batch 1: the reshape is a view; batch 2: a copy)
        return a.transpose(0, 2).permute(1, 2, 0).transpose(-1, -2).reshape(-1, 3)

    _dynamic_check(fn, [ember.randn(1, 3, 4)], {0: {0: "batch"}}, [[ember.randn(4, 3, 4)]])


def test_export_puts_every_submodule_in_eval_mode_and_restores_each_flag():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
    model.eval()
    model[1].train()  # (a submodule left in training mode: exported in eval mode, as torch)
    x = ember.randn(3, 4)
    proto = ember.onnx.to_model(model, x)
    assert [m.training for m in model.modules()] == [False, False, True, False]
    model.eval()
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(model, x)[0], rtol=1e-6)
    model.train()
    model[2].eval()
    ember.onnx.to_model(model, x)
    assert [m.training for m in model.modules()] == [True, True, True, False]


def test_a_rank_that_changes_with_a_dynamic_size_is_refused():
    with pytest.raises(ExportError, match=r"has shape \(3,\) against \(2, 3\).* size 1"):
        ember.onnx.to_model(lambda a: a.squeeze() * 2, ember.randn(1, 3), input_names=["a"],
                            dynamic_axes={"a": {0: "batch"}})


def test_sign_of_nan_is_zero_and_max_of_bools_is_a_bool():
    x = ember.tensor([[float("nan"), -0.0, -2.0, 3.0]])
    check_export(lambda t: (t.sign(), (t > 0).amax(1), (t > 0).amin(), t.to(ember.int64).sign()),
                 x, dynamic_batch=True)


@pytest.mark.parametrize("opset", [17, 18])
def test_reductions_give_their_axes_as_each_opset_wants(opset):
    norm = nn.GroupNorm(1, 3)  # (built outside: its constructor initialises in place)

    def fn(t):
        return (t.amax(1), t.amin(-1, keepdim=True), t.prod(2), *t.max(dim=1), t.argmin(2),
                (t > 0).all(1), (t > 0).any(), t.sum(1), norm(t))

    check_export(fn, ember.randn(2, 3, 4), opset_version=opset)


def test_integer_bitwise_ops_before_opset_18_are_refused():
    i = ember.tensor([[3, 5]])
    with pytest.raises(ExportError, match="bitwise ops on integers need opset 18"):
        ember.onnx.to_model(lambda a: a & 6, i, opset_version=17)
    check_export(lambda a: (a & 6, a | 2, a ^ 1, ~a, (a > 3) & (a < 5)), i)


def test_a_filled_constant_sized_by_a_dynamic_axis_is_expanded_at_run_time():
    def fn(a, b):
        return (ember.zeros_like(a) + a, ember.ones(a.shape[0], 1) * a, a.norm(dim=1),
                a.logsumexp(1), ember.cdist(a, b))

    _dynamic_check(fn, [ember.randn(2, 5), ember.randn(3, 5)], {0: {0: "n"}, 1: {0: "m"}},
                   [[ember.randn(4, 5), ember.randn(1, 5)]])


def test_log1p_and_expm1_keep_their_digits_near_zero():
    x = ember.tensor([1e-30, 1e-8, -1e-7, 1e-3, 0.5, -20.0, 100.0, 0.0, float("inf"),
                      float("-inf"), float("nan"), -1.0, -2.0])
    proto = ember.onnx.to_model(lambda t: (t.log1p(), t.expm1()), x)
    for got, want in zip(run_onnx(proto, x.numpy()), (x.log1p().numpy(), x.expm1().numpy())):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_the_blockwise_attention_kernel_gives_zeros_for_a_fully_masked_row(monkeypatch):
    monkeypatch.setattr(ember.ops.attention, "MEMORY_EFFICIENT_MIN", 1)
    q = ember.randn(1, 3, 4)
    mask = ember.ones(3, 3, dtype=ember.bool)
    mask[1] = False
    additive = ember.where(mask, 0.0, float("-inf"))
    check_export(lambda t, m, a: (F.scaled_dot_product_attention(t, t, t, attn_mask=m),
                                  F.scaled_dot_product_attention(t, t, t, attn_mask=a)),
                 q, mask, additive)


def test_a_row_masked_only_at_run_time_gives_zeros_as_eager():
    """The matmul-and-softmax form checks each call's mask, not the example's."""
    q = ember.randn(1, 3, 4)
    proto = ember.onnx.to_model(
        lambda t, m: F.scaled_dot_product_attention(t, t, t, attn_mask=m),
        (q, ember.ones(3, 3, dtype=ember.bool)))
    mask = ember.ones(3, 3, dtype=ember.bool)
    mask[1] = False
    (got,) = run_onnx(proto, q.numpy(), mask.numpy())
    expected = F.scaled_dot_product_attention(q, q, q, attn_mask=mask).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert not got[0, 1].any()


def test_input_and_output_names_must_differ_from_weights_and_each_other():
    model, x = nn.Linear(3, 3).eval(), ember.randn(2, 3)
    with pytest.raises(ValueError, match=r"\['bias'\] also name parameters or buffers"):
        ember.onnx.to_model(model, x, input_names=["bias"])
    with pytest.raises(ValueError, match=r"\['x'\] name both an input and an output"):
        ember.onnx.to_model(model, x, input_names=["x"], output_names=["x"])


def test_half_precision_infinity_tests_are_valid_before_opset_20():
    x = ember.tensor([[0.5, float("inf"), -float("inf"), float("nan"), 1e-4]]).half()
    check_export(lambda t: (t.isinf(), t.isfinite(), t.log1p(), t.expm1()), x, rtol=2e-3)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "bool"])
def test_ops_on_narrow_integers_and_bools_make_valid_models(dtype):
    x = ember.tensor([[1, 2, 0], [3, 1, 2]], dtype=getattr(ember, dtype))
    if dtype == "bool":
        fn = lambda t: (t + t, t * t, ember.maximum(t, t.flip(0)), t.sign(), t @ t.T)  # noqa: E731
    else:
        fn = lambda t: (t ** 2, t.square(), t @ t.T, -t, F.relu(t), t.amax(0))  # noqa: E731
    if dtype == "int16":  # (valid ONNX, but onnxruntime's CPU provider has no int16 Max)
        onnx.checker.check_model(ember.onnx.to_model(fn, x), full_check=True)
    else:
        check_export(fn, x)


@pytest.mark.parametrize("dtype", ["int64", "int8", "float32"])
def test_floor_and_truncated_division(dtype):
    a = ember.tensor([[-7, 7, -7, 7, 6, -6, 0, 5]], dtype=getattr(ember, dtype))
    b = ember.tensor([[2, 2, -2, -2, 4, 4, 3, -5]], dtype=getattr(ember, dtype))
    check_export(lambda x, y: (x // y, ember.div(x, y, rounding_mode="trunc"),
                               ember.div(x, y, rounding_mode="floor"), x // 3), a, b)


def test_a_model_failing_at_the_resized_sizes_says_why():
    with pytest.raises(ExportError, match=r"traced again with them resized \(inputs of shapes "
                                          r"\[\(5, 3\)\]\), and failed: ShapeError"):
        ember.onnx.to_model(lambda a: a.view(-1, 2, 3).sum(1), ember.randn(4, 3),
                            input_names=["a"], dynamic_axes={"a": {0: "batch"}})


def test_round_with_decimals():
    x = ember.tensor([[1.2345, -2.5551, 125.0, 0.125, 1e-3, 3150.0]])
    check_export(lambda t: (t.round(decimals=2), t.round(decimals=-2), t.round(decimals=1)), x,
                 atol=0, rtol=0)


def test_a_constant_shared_by_a_dynamic_and_a_fixed_use_is_checked_per_use():
    def fn(a):  # (the tracer shares the 4.0 of mean(0) over 4 rows and std(-1)'s 5 - 1)
        return a.mean(0), a.std(-1)

    _dynamic_check(fn, [ember.randn(4, 5)], {0: {0: "n"}}, [[ember.randn(7, 5)]])


def test_means_and_variances_over_dynamic_axes_count_at_run_time():
    def fn(a):
        return (a.mean(), a.var(1, correction=0), a.std(0, correction=2), a.var(),
                F.mse_loss(a, a * 2), nn.AdaptiveAvgPool2d(1)(a[:, None, :, None]))

    _dynamic_check(fn, [ember.randn(4, 5)], {0: {0: "n", 1: "t"}},
                   [[ember.randn(7, 3)], [ember.randn(3, 9)]])


@pytest.mark.parametrize("dims", [(1,), ()])
def test_float32_variances_whose_squares_overflow_are_finite_as_eager(dims):
    # (float32 squares overflow past ~1.8e19; eager and torch sum in float64 there)
    x = ember.tensor([[2e19, -2e19, 0.0, 1.0], [3e38, -3e38, 3e38, -3e38],
                      [3e38, 3e38, 3e38, 0.0], [1.0, 2.0, 3.0, 4.5]])
    check_export(lambda t: (t.std(dims), t.var(dims, correction=0), t.std(0, keepdim=True)), x,
                 dynamic_batch=True)
    assert np.isfinite(x.std(1).numpy()[[0, 2]]).all()  # (row 1's std, 3.5e38, is not float32)


def test_blockwise_causal_attention_with_a_dynamic_batch(monkeypatch):
    monkeypatch.setattr(ember.ops.attention, "MEMORY_EFFICIENT_MIN", 1)
    q, k = ember.randn(2, 4, 3, 8), ember.randn(2, 2, 5, 8)
    check_export(lambda a, b: (F.scaled_dot_product_attention(a, b, b, is_causal=True,
                                                              enable_gqa=True),
                               F.scaled_dot_product_attention(b, a[:, :2], a[:, :2],
                                                              is_causal=True)),
                 q, k, dynamic_batch=True)


def test_index_tensors_of_one_dynamic_shape_on_the_leading_dims():
    a = ember.randn(4, 5, 2)
    i, j = ember.tensor([0, 3, -1]), ember.tensor([1, 4, 2])
    _dynamic_check(lambda t, p, q: t[p, q], [a, i, j], {1: {0: "k"}, 2: {0: "k"}},
                   [[a, ember.tensor([2, 0, 1, 3, -2]), ember.tensor([0, 1, 2, 3, 4])]])


def test_ember_onnx_is_listed_by_dir_imported_on_first_use_and_names_its_extra():
    code = ("import sys; sys.modules['onnx'] = None; import ember\n"
            "print('onnx' in dir(ember), 'ember.onnx' in sys.modules)\n"
            "try:\n    ember.onnx\nexcept ModuleNotFoundError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "True False"  # (listed for tab completion, not imported by import ember)
    assert "pip install 'ember[export]'" in out[1]  # (onnx missing: the extra to install)


def test_group_norm_exports_with_dynamic_batch_and_spatial_axes():
    norm = nn.GroupNorm(2, 4)
    norm.weight.data, norm.bias.data = ember.randn(4), ember.randn(4)
    _dynamic_check(lambda a: norm(a) * 2, [ember.randn(2, 4, 3, 5)],
                   {0: {0: "n", 3: "w"}}, [[ember.randn(3, 4, 3, 7)], [ember.randn(1, 4, 3, 2)]])
