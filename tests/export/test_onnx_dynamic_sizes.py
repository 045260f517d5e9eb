"""Sizes that follow a dynamic axis: constants made from a size (aranges, causal masks) are
rebuilt from the run-time shape, and slices keep their bounds as written."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.models
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, run_onnx


def _check_at_sizes(fn, args, dynamic_axes, feeds, rtol=1e-5, atol=1e-6):
    """Exports ``fn`` with ``dynamic_axes`` ({input index: {axis: name}}) and compares
    onnxruntime with eager on the example and on each of ``feeds``."""
    names = [f"in{i}" for i in range(len(args))]
    proto = ember.onnx.to_model(fn, tuple(args), input_names=names,
                                dynamic_axes={names[i]: axes for i, axes in dynamic_axes.items()})
    for inputs in [args, *feeds]:
        for got, want in zip(run_onnx(proto, *(a.numpy() for a in inputs)), eager(fn, *inputs)):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return proto


@pytest.mark.parametrize("flash", [False, True])
def test_gpt_runs_at_several_sequence_lengths(flash):
    ember.manual_seed(0)
    model = ember.models.gpt(n_layer=1, n_head=2, d_model=16, block_size=12, flash=flash).eval()
    feeds = [[ember.randint(0, 256, shape)] for shape in [(1, 3), (3, 12), (2, 1)]]
    proto = _check_at_sizes(model, [ember.randint(0, 256, (2, 6))], {0: {0: "batch", 1: "seq"}},
                            feeds, rtol=1e-4, atol=1e-5)
    ops = {node.op_type for node in proto.graph.node}
    assert "Range" in ops and "Trilu" in ops
    assert [d.dim_param for d in proto.graph.output[0].type.tensor_type.shape.dim[:2]] == \
        ["batch", "seq"]


def test_aranges_and_triangular_masks_follow_the_run_time_size():
    def fn(x):
        n = x.shape[1]
        steps = ember.arange(3, 3 + 2 * n, 2, dtype=ember.float32)
        above = ember.full((n, n), 2.5).triu(1) - 1.0  # (2.5 - 1 above, -1 elsewhere)
        below = ember.ones(n, n, dtype=ember.bool).tril(-1)
        return x * steps, x @ above, below.int() + x[:1, :, None].long()

    _check_at_sizes(fn, [ember.randn(2, 4)], {0: {1: "n"}},
                    [[ember.randn(2, 7)], [ember.randn(2, 2)]])


def test_causal_attention_kernel_over_a_dynamic_sequence_length(monkeypatch):
    monkeypatch.setattr(ember.ops.attention, "MEMORY_EFFICIENT_MIN", 1)  # (the primitive)

    def fn(q, k):
        return F.scaled_dot_product_attention(q, k, k, is_causal=True)

    _check_at_sizes(fn, [ember.randn(2, 5, 4), ember.randn(2, 6, 4)],
                    {0: {1: "t"}, 1: {1: "s"}},
                    [[ember.randn(2, 3, 4), ember.randn(2, 9, 4)]])


@pytest.mark.parametrize("key", ["[:, :5]", "[:, -3:]", "[:, 1:-1]", "[:, 1::2]",
                                 "[:, :100]", "[:, -1]"])
def test_slice_bounds_survive_as_written(key):
    """Traced at a size below the bound, ``x[:, :5]`` still means "up to 5" at other sizes."""
    fn = eval(f"lambda x: x{key} * 2")  # noqa: S307 - (the key as a user writes it)
    _check_at_sizes(fn, [ember.randn(2, 3)], {0: {1: "n"}},
                    [[ember.randn(2, 4)], [ember.randn(2, 9)]])


def test_slices_that_move_with_the_size_and_padding_of_a_dynamic_axis():
    def fn(x):
        n = x.shape[1]
        return x[:, : n - 1] + x[:, 1:n], F.pad(x, (1, 2)), x[:, n - 2]

    _check_at_sizes(fn, [ember.randn(2, 4)], {0: {1: "n"}}, [[ember.randn(2, 8)]])


def test_slices_keep_eager_results_and_indices_as_written():
    x = ember.arange(6)
    assert x[:100].tolist() == x[-100:].tolist() == list(range(6))
    assert x[4:2].shape == (0,) and x[-2:].tolist() == [4, 5] and x[::4].tolist() == [0, 4]
    with pytest.raises(ValueError, match="slice step must be greater than zero"):
        x[::-1]


def test_a_mask_made_from_a_size_in_no_pattern_is_refused():
    def fn(x):
        n = x.shape[1]
        return x @ (ember.arange(n * n).reshape(n, n) % 3).float()

    with pytest.raises(ExportError, match="none of the patterns"):
        ember.onnx.to_model(fn, ember.randn(2, 4), input_names=["x"],
                            dynamic_axes={"x": {1: "n"}})


@pytest.mark.parametrize("build, axis", [
    (lambda: ember.nn.LSTM(3, 4, batch_first=True, proj_size=2), 0),
    (lambda: ember.nn.GRU(3, 4, num_layers=2, bidirectional=True), 1),
])
def test_recurrent_layers_with_a_dynamic_batch(build, axis):
    """Each step reads rows t·B to (t+1)·B of the flattened time-and-batch rows: slice
    bounds that are multiples of the one dynamic size."""
    ember.manual_seed(0)
    model = build().eval()
    shapes = [[4, 4, 3] for _ in range(3)]
    for shape, batch in zip(shapes, (2, 3, 1)):
        shape[axis] = batch
    x, *others = (ember.randn(*shape) for shape in shapes)
    _check_at_sizes(lambda t: _flat(model(t)), [x], {0: {axis: "batch"}}, [[o] for o in others])


@pytest.mark.parametrize("build, axis", [
    (lambda: ember.nn.LSTM(3, 4), 0),
    (lambda: ember.nn.GRU(3, 4, batch_first=True, bidirectional=True), 1),
])
def test_recurrent_layers_over_a_dynamic_sequence_length_are_refused(build, axis):
    """The scans are unrolled over the traced steps: a longer sequence ran only those (its
    last state silently wrong), so a dynamic time axis is refused naming the layer."""
    model = build().eval()
    shape = [2, 2, 3]
    with pytest.raises(ExportError, match="sequence of dynamic length"):
        ember.onnx.to_model(lambda t: _flat(model(t)), ember.randn(*shape), input_names=["x"],
                            dynamic_axes={"x": {axis: "time"}})


def _flat(out):
    y, state = out
    return (y, *state) if isinstance(state, tuple) else (y, state)


def test_a_slice_that_moves_otherwise_with_two_dynamic_sizes_is_refused():
    with pytest.raises(ExportError, match=r"the index \(None, 4, None\) moves with a dynamic"):
        ember.onnx.to_model(lambda a, b: a.reshape(-1)[: b.shape[0] * 2],
                            (ember.randn(2, 3), ember.randn(2)), input_names=["a", "b"],
                            dynamic_axes={"a": {0: "n"}, "b": {0: "m"}})


def test_slice_bounds_beyond_int64_saturate():
    """Python slices take any int; ONNX's Slice takes int64 bounds (clamped as Python does)."""
    def fn(x):
        return x[:, :2**100], x[:, -2**70:2], x[:, 1:2**63:2**64]

    _check_at_sizes(fn, [ember.randn(2, 4)], {0: {1: "n"}}, [[ember.randn(2, 7)]])


@pytest.mark.parametrize("fn", [
    lambda x: x * ember.arange(x.shape[1]).clamp(max=5),  # an arange at sizes 4 and 5 only
    lambda x: x[:, :min(x.shape[1], 5)] * 2,  # "to the end" at sizes 4 and 5 only
    lambda x: x[:, :x.shape[1] // 2] * 2,  # a fixed 2 at sizes 4 and 5 only
])
def test_a_size_that_follows_a_rule_at_the_traced_sizes_only_is_refused(fn):
    """The second trace grows the axis by 1: a third one, farther, must give the same model."""
    with pytest.raises(ExportError, match="follow no rule"):
        ember.onnx.to_model(fn, ember.randn(2, 4), input_names=["x"],
                            dynamic_axes={"x": {1: "n"}})


@pytest.mark.parametrize("fn, t", [
    (lambda x: x[:, x.shape[1] // 16 * 16:] * 2, 10),  # a start of 0 below 16: no slice
    (lambda x: x * ember.arange(x.shape[1]).clamp(max=25), 20),  # folded: an arange to 25
])
def test_a_rule_that_changes_far_from_the_traced_sizes_is_refused(fn, t):
    """Each dynamic axis is traced again far away (2T + k). These exported silently and
    onnxruntime was wrong at T = 40: 40 rows where eager keeps 8, an arange past the
    clamp."""
    with pytest.raises(ExportError, match="follow no rule"):
        ember.onnx.to_model(fn, ember.randn(2, t), input_names=["x"],
                            dynamic_axes={"x": {1: "n"}})


def test_a_model_that_refuses_the_farther_size_still_exports():
    def fn(x):
        if x.shape[1] > 6:
            raise ValueError("at most 6 steps")
        return x[:, 1:] * 2, x * ember.arange(x.shape[1])

    _check_at_sizes(fn, [ember.randn(2, 4)], {0: {1: "n"}}, [[ember.randn(2, 6)]])


class _Counted(ember.nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body, self.calls = body, 0

    def forward(self, x):
        self.calls += 1
        return self.body(x)


class _MeanPool(ember.nn.Module):
    def forward(self, x):
        return x.mean((2, 3))


def test_the_far_trace_runs_for_every_dynamic_model_and_sees_a_rounded_scalar():
    """A scalar rounded from a dynamic size (x / max(T // 16 * 16, 1), 1 below T = 16) was
    exported as the constant 1 where the far trace ran only for slices, sized constants and
    split axes: onnxruntime gave 1.0 at T = 40 where eager gives 1/32 (mend55e's blind spot).
    Every model with a dynamic axis pays the far trace (forward runs 4 times)."""
    with pytest.raises(ExportError, match="follow no rule"):
        ember.onnx.to_model(lambda x: x / max(x.shape[1] // 16 * 16, 1), (ember.randn(2, 10),),
                            input_names=["x"], dynamic_axes={"x": {1: "t"}})
    conv = _Counted(ember.nn.Sequential(
        ember.nn.Conv2d(3, 4, 3, stride=2), ember.nn.BatchNorm2d(4), ember.nn.ReLU(),
        _MeanPool(), ember.nn.Linear(4, 2)))
    ember.onnx.to_model(conv, (ember.randn(2, 3, 16, 16),), input_names=["x"],
                        dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}})
    assert conv.calls == 4


@pytest.mark.parametrize("fn", [
    lambda x: F.adaptive_avg_pool1d(x.transpose(1, 2), x.shape[1] // 16 + 1),
    lambda x: ember.topk(x, x.shape[1] // 16 + 1, dim=1)[0],
    lambda x: F.interpolate(x.transpose(1, 2), size=x.shape[1] // 16 + 1),
], ids=["adaptive_pool", "topk", "interpolate"])
def test_an_output_size_rounded_from_a_dynamic_axis_gets_the_far_check(fn):
    """An output size rounded from T (T // 16 + 1 is 1 at the traced sizes) skipped the far
    trace, which only slices and constants called for: it exported with an output of 1 and
    onnxruntime gave (3, 4, 1) at T = 20, eager (3, 4, 2) (review55j 1); a constant size 1
    (resnet's pool) stays right."""
    with pytest.raises(ExportError, match="follow no rule"):
        ember.onnx.to_model(fn, (ember.randn(3, 10, 4),), input_names=["x"],
                            dynamic_axes={"x": {1: "t"}})
    pooled = _Counted(ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.AdaptiveAvgPool2d(1),
                                          ember.nn.Flatten(), ember.nn.Linear(4, 2)))
    proto = ember.onnx.to_model(pooled, (ember.randn(2, 3, 9, 9),), input_names=["x"],
                                dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}})
    assert pooled.calls == 4
    x = ember.randn(3, 3, 30, 20)
    np.testing.assert_allclose(run_onnx(proto, x.numpy())[0], eager(pooled, x)[0], rtol=1e-5,
                               atol=1e-6)


def test_a_model_that_refuses_the_far_size_is_checked_halfway_or_warned_of():
    """T = 64 of a model bounded at 128 (a GPT's block size) was refused at 2T + 1 and the
    check skipped without a word: x[:, T // 96 * 96:] exported with every row (100 rows at
    T = 100 in onnxruntime, eager 4). Halfway (T = 96) shows the rule; a model that refuses
    that too gets a warning."""
    def bounded(x, limit=128):
        assert x.shape[1] <= limit
        return x[:, x.shape[1] // 96 * 96:] * 2

    with pytest.raises(ExportError, match="follow no rule"):
        ember.onnx.to_model(bounded, ember.randn(2, 64, 3), input_names=["x"],
                            dynamic_axes={"x": {0: "b", 1: "t"}})
    with pytest.warns(UserWarning, match=r"refused the far check sizes .*'t': 96"):
        ember.onnx.to_model(lambda x: bounded(x, 70), ember.randn(2, 64, 3),
                            input_names=["x"], dynamic_axes={"x": {0: "b", 1: "t"}})


def test_a_model_bounded_near_the_traced_size_is_checked_at_smaller_sizes():
    """The check trace grows the second dim name by 12, past a bound of 23 (a GPT's
    block_size); it shrinks it instead (to 9), where this rule no longer holds. The check
    was skipped: the model exported with arange(T) and was wrong at T = 9."""
    def fn(x):
        if x.shape[1] > 23:
            raise ValueError("at most 23 steps")
        return x * (ember.arange(x.shape[1]) + max(0, 20 - x.shape[1]))

    with pytest.raises(ExportError, match="follow no rule"):
        ember.onnx.to_model(fn, ember.randn(2, 21), input_names=["x"],
                            dynamic_axes={"x": {0: "b", 1: "n"}})


def test_a_gpt_traced_near_its_block_size_gets_the_check_trace(monkeypatch):
    import ember.onnx.exporter as exporter
    made = []
    farther = exporter._farther_trace
    monkeypatch.setattr(exporter, "_farther_trace", lambda *a: made.append(farther(*a)) or made[-1])
    model = ember.models.gpt(vocab_size=50, block_size=32, n_layer=1, n_head=2).eval()
    ember.onnx.to_model(model, (ember.randint(0, 50, (2, 21)),), input_names=["x"],
                        dynamic_axes={"x": {0: "b", 1: "t"}})
    assert made[0] is not None


def test_a_model_that_refuses_every_check_size_exports_with_a_warning():
    def fn(x):
        if not 4 <= x.shape[1] <= 5:
            raise ValueError("4 or 5 steps")
        return x * 2

    with pytest.warns(UserWarning, match="refused every size of the check trace"):
        _check_at_sizes(fn, [ember.randn(2, 4)], {0: {1: "n"}}, [[ember.randn(2, 5)]])


def test_a_size_that_follows_another_axis_by_chance_is_refused():
    """adaptive_avg_pool2d to (2, 3) of a 6x6 input reshapes W to (3, W / 3): the second
    trace grows the batch by 1 and W by 3, so W / 3 grew as the batch did; read from it, a
    batch of 3 at 6x6 reshaped W to (3, 3): wrong numbers, and 7x5 failed in onnxruntime.
    The farther trace grows the axes in other proportions, in which W / 3 follows no input
    size, and the model is refused."""
    with pytest.raises(ExportError, match="no input dimension gives"):
        ember.onnx.to_model(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), ember.randn(2, 3, 6, 6),
                            input_names=["x"], dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}})


def test_sizes_that_are_multiples_of_a_dynamic_size():
    """repeat and tile of dynamic axes reshape to 2·B and 3·W, which no input dimension is
    (two such sizes were refused: Reshape infers one)."""
    def fn(a):
        return a.repeat(2, 1, 3), a.tile((2, 1, 1)), ember.cat([a, a], 0).reshape(-1, 5, a.shape[2])

    _check_at_sizes(fn, [ember.randn(4, 5, 6)], {0: {0: "b", 2: "w"}},
                    [[ember.randn(3, 5, 2)], [ember.randn(7, 5, 9)]])


def test_a_multiple_that_another_size_matches_in_two_traces_is_read_from_the_right_one():
    """Traced at B = 2, W = 4, the second trace has B = 3, W = 6: 2·B is W in both, and was
    read from W (refused by the check trace, where B = 5 and W = 16, with a message blaming
    a clamped size). A size is read from a dimension that follows it in all three traces."""
    _check_at_sizes(lambda x: x.repeat(2, 1, 3), [ember.randn(2, 3, 4)], {0: {0: "b", 2: "w"}},
                    [[ember.randn(3, 3, 2)], [ember.randn(5, 3, 7)]])


def test_a_model_taking_other_ops_at_the_far_size_is_warned_of():
    """x.repeat(1, T // 16 + 1, 1) traced at T = 10 runs no repeat there and one at 2T: the far
    trace's other graph sent the check halfway (T = 15, the same graph) without a word, and
    onnxruntime gave 40 rows at T = 40 where eager gives 120."""
    with pytest.warns(UserWarning, match="runs other ops than at the traced sizes"):
        ember.onnx.to_model(lambda x: x.repeat(1, x.shape[1] // 16 + 1, 1),
                            (ember.randn(3, 10, 4),), input_names=["x"],
                            dynamic_axes={"x": {1: "t"}})


@pytest.mark.parametrize("fn", [
    lambda x: x.sum() / x.shape[0],  # (a mean over a dynamic batch, written out)
    lambda x: x * x.shape[1],
    lambda x: F.kl_div(F.log_softmax(x, 1), x.softmax(1), reduction="batchmean"),
])
def test_a_scalar_that_is_a_dynamic_size_is_read_from_the_shape(fn):
    """torch.onnx reads ``x.shape[0]`` with Shape; it was refused (a constant of shape ())."""
    rng = np.random.default_rng(0)
    x, y, z = (ember.tensor(rng.standard_normal(s).astype(np.float32))
               for s in ((3, 4, 2), (6, 4, 2), (5, 7, 2)))
    _check_at_sizes(fn, [x], {0: {0: "batch", 1: "n"}}, [[y], [z]])


def test_a_reason_given_for_each_layer_is_listed_once_with_its_count():
    """Two bidirectional LSTM layers refused for the same reason on one line: the error
    said it twice. The count follows the place, not the hint."""
    model = ember.nn.LSTM(3, 4, num_layers=2, bidirectional=True).eval()
    with pytest.raises(ExportError) as error:
        ember.onnx.to_model(lambda t: model(t)[0], ember.randn(2, 2, 3), input_names=["x"],
                            dynamic_axes={"x": {0: "time"}})
    lines = str(error.value).splitlines()[1:]
    assert len(lines) == 1 and lines[0].count("(2x)") == 1
    assert "(in model) (2x): lstm_scan (an LSTM" in lines[0]


@pytest.mark.parametrize("fn", [
    lambda x: x * ember.tensor(x.shape[0] - 4.0).reciprocal(),  # (inf at the traced size)
    lambda x: x * (ember.tensor(x.shape[0] - 4.0) / ember.tensor(0.0)),  # (NaN there)
])
def test_a_scalar_of_a_dynamic_size_not_finite_in_one_trace_is_refused_clearly(fn):
    """A one-element constant that is inf or NaN in one trace raised a bare OverflowError or
    ValueError (int() of it) instead of the constant's refusal."""
    with pytest.raises(ExportError, match="depends on the size of a dynamic axis"):
        ember.onnx.to_model(fn, (ember.randn(4, 3),), input_names=["x"],
                            dynamic_axes={"x": {0: "b"}})


@pytest.mark.parametrize("fn", [
    lambda x: x * (min(x.shape[0], 8) + 1),
    lambda x: x / max(x.shape[0], 3) ** 2,
    lambda x: x * (x.shape[0] + 1 if x.shape[0] < 7 else 2 * x.shape[0]),
])
def test_a_scalar_computed_from_a_dynamic_size_is_refused_rather_than_guessed(fn):
    """A clamp or branch on the size that the traced sizes never cross fits ``T + c`` or
    ``c / T`` there and is wrong past it, so such scalars are refused (review58md 1)."""
    with pytest.raises(ExportError):
        ember.onnx.to_model(fn, (ember.randn(4, 3),), input_names=["x"],
                            dynamic_axes={"x": {0: "batch"}})
