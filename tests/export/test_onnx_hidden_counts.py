"""ONNX export of strided counts that no trace shows changing: refused only where an op reads
the count as a size the exported graph keeps, with a hint naming sizes that show it; a check
trace that never repeats the second trace's size of an axis; slice bounds that a rounding
down puts at the traced size (against eager in onnxruntime)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
import ember.onnx.exporter as exporter
from ember.errors import ArgumentError
from ember.export.errors import ExportError
from tests.export.onnx_helpers import eager, run_onnx


def _export(fn, shape, axes):
    return ember.onnx.to_model(fn, (ember.randn(*shape),), input_names=["x"],
                               dynamic_axes=axes)


def _same_as_eager(proto, fn, shapes):
    for shape in shapes:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
        got, want = run_onnx(proto, x), eager(fn, ember.tensor(x))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _batch_clamp(x):  # (a GPT's block size, a cut, and a clamp of the batch)
    if x.shape[1] > 32:
        raise ArgumentError("block size 32")
    return x[:min(x.shape[0], 3)] * 2, x[:, ::16] * 3


def test_the_check_trace_never_moves_an_axis_to_the_second_traces_size():
    # (the strides' moves alone moved the batch by 1, as the second trace: B = 2, 3, 3 and
    # min(B, 3) looked like B; exported, onnxruntime gave 4, 5, 8 rows where eager gives 3)
    with pytest.raises(ExportError, match="follow no rule(.|\n)*min\\(x.shape\\[0\\], 3\\)"):
        _export(_batch_clamp, (2, 20, 4), {"x": {0: "b", 1: "t"}})


class _Encoder(ember.nn.Module):
    """wav2vec2's feature encoder, narrow: 7 strided convolutions, total stride 320."""

    def __init__(self):
        super().__init__()
        kernels, steps = (10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2)
        self.convs = ember.nn.ModuleList(
            [ember.nn.Conv1d(1 if i == 0 else 4, 4, k, stride=s)
             for i, (k, s) in enumerate(zip(kernels, steps))])

    def forward(self, x):
        for conv in self.convs:
            x = F.gelu(conv(x))
        return x


def test_a_conv_count_that_nothing_reads_is_computed_at_run_time():
    # (refused at L = 16080: the last conv's count, 50, was the same in every trace (the
    # spread is capped at 256 < 320), though ONNX Conv counts its windows itself)
    ember.manual_seed(0)
    model = _Encoder().eval()
    proto = _export(model, (2, 1, 16080), {"x": {0: "b", 2: "t"}})
    assert proto.graph.output[0].type.tensor_type.shape.dim[2].dim_param  # (not a fixed 50)
    _same_as_eager(proto, model, [(2, 1, 16080), (1, 1, 16001), (3, 1, 9999), (1, 1, 800),
                                  (2, 1, 24003)])


def _conv_read(x):  # (a stride-4 conv whose count an arange reads)
    y = F.conv1d(x.transpose(1, 2), ember.ones(4, 4, 3) / 12, stride=4)
    return y * ember.arange(y.shape[2]).float()


def test_a_count_read_as_a_size_is_refused_with_the_sizes_that_show_it():
    # (the hint said "just at a multiple of the step", where a conv's count does not change:
    # T = 16 was refused again; the count grows from T to T + 1 where T % 4 == 2)
    with pytest.raises(ExportError, match=r"conv at .*its step 4 leaves 4 entries(.|\n)*"
                                          r"n % 4 == 2; trace with x's dimension 1 at 14 or 18"):
        _export(_conv_read, (2, 16, 4), {"x": {1: "t"}})
    proto = _export(_conv_read, (2, 14, 4), {"x": {1: "t"}})
    _same_as_eager(proto, _conv_read, [(2, t, 4) for t in (14, 3, 16, 17, 30, 48)])


def _bounded_read(x):  # (a block size of 32; the count of a ::16 cut read by an arange)
    if x.shape[1] > 32:
        raise ArgumentError("block size 32")
    y = x[:, ::16]
    return y * ember.arange(y.shape[1]).float()[None, :, None]


def _bounded_sum(x):  # (every check size past the step refused; the count summed over)
    if x.shape[1] > 32:
        raise ArgumentError("block size 32")
    return x + x[:, ::16].sum(1, keepdim=True)


@pytest.mark.parametrize("fn, length, refusal", [
    (_bounded_read, 20, r"follow no rule(.|\n)*slice at .*its step 16 leaves 2 entries .* in the "
                        r"traces \(x \(2, 20, 4\), \(3, 22, 4\)\), and another count resized "
                        r"farther\nHint: its count grows"),
    (_bounded_sum, 17, r"slice at .*its step 16 leaves 2 entries(.|\n)*sum at .* reads it where "
                       r"the exported model may keep the traced count(.|\n)*Hint: its count")])
def test_the_hint_for_a_slice_names_sizes_where_its_count_grows(fn, length, refusal):
    # (it said "just at a multiple of the step (T = 16)": there the count is 1, and an arange
    # of 1 is refused as ambiguous; one hint per error (the refusal of sizes that follow no
    # rule added one per cut, after its own))
    with pytest.raises(ExportError, match=refusal) as caught:
        _export(fn, (2, length, 4), {"x": {0: "b", 1: "t"}})
    assert str(caught.value).count("Hint") == 1
    assert "n % 16 == 0; trace with x's dimension 1 at 16 or 32, or" in str(caught.value)
    if fn is _bounded_sum:  # (_bounded_read has no such size: 32 goes past the bound in the
        # second trace, and an arange of 1 at 16 is ambiguous)
        proto = _export(fn, (2, 16, 4), {"x": {0: "b", 1: "t"}})
        _same_as_eager(proto, fn, [(3, t, 4) for t in (32, 17, 31, 16, 3)])


def _tail(x):  # (the last 10 steps, every 4th: 3 from T = 9 on, fewer below)
    y = x[:, -10::4]
    return y * ember.arange(y.shape[1]).float()[None, :, None]


def _patchify(x):  # (patches of 16 steps: T rounded down to a multiple of 16)
    b, t, c = x.shape
    return x[:, :t // 16 * 16].reshape(b, t // 16, 16 * c)


@pytest.mark.parametrize("fn, shape, refusal", [
    (_tail, (2, 20, 4), r"slice at .*its step 4 leaves 3 entries(.|\n)*other sizes give other"),
    (_patchify, (2, 32, 4), r"slice at .*the index \(None, 32, None\) moves with a dynamic "
                            "size")])
def test_a_count_that_only_smaller_or_much_larger_sizes_change_is_refused(fn, shape, refusal):
    # (exported: onnxruntime gave (1, 3, 4) at T = 1..3 where eager gives (1, 1, 4) (the
    # arange of 3 broadcast over 1 row); the patches, 2 at every T, were 2 at T = 48 .. 100
    # where eager makes 3 .. 6)
    with pytest.raises(ExportError, match=refusal):
        _export(fn, shape, {"x": {0: "b", 1: "t"}})


def test_a_fixed_crop_traced_where_it_cuts_is_exported():
    def crop(x):
        return x[:, :32] * 2
    proto = _export(crop, (2, 40, 4), {"x": {0: "b", 1: "t"}})
    _same_as_eager(proto, crop, [(1, t, 4) for t in (40, 3, 32, 33, 100)])


class _Flattened(ember.nn.Module):
    """The encoder's output flattened: a reshape reads the last conv's count."""

    def __init__(self):
        super().__init__()
        self.encoder = _Encoder()

    def forward(self, x):
        y = self.encoder(x)
        return y.reshape(y.shape[0], -1)


def test_a_refusal_names_the_module_the_input_sizes_and_one_hint():
    # (the 7 convs shared one line, the sizes quoted were the cut's (100, 100, 101), and the
    # message said "but another count at other sizes, and the exported model would keep it")
    ember.manual_seed(0)
    with pytest.raises(ExportError) as caught:
        _export(_Flattened().eval(), (2, 1, 16080), {"x": {0: "b", 2: "t"}})
    text = str(caught.value)
    assert "conv at " in text and "(in encoder.convs.6): its step 2 leaves 50 entries" in text
    assert "in the traces (x (2, 1, 16080), (3, 1, 16082)" in text
    assert "; other sizes give other counts, and reshape at " in text
    assert text.count("Hint") == 1 and "n % 2 == 1" in text


def _shuffle(x):  # (ShuffleNet's channel shuffle after a stride of 32)
    y = x[..., ::32, ::32]
    b, c, h, w = y.shape
    return y.reshape(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w) * 2


def test_a_reshape_reads_equal_sized_height_and_width_each_from_its_own_axis():
    # (H and W had the same sizes in every trace, 2, 3 and 4: the reshapes read W's size from
    # the input's axis at W's position, H in (B, C, H, W), and failed in onnxruntime at
    # 96 x 50, as torchvision's shufflenet_v2 exported at 64 x 64)
    proto = _export(_shuffle, (2, 4, 64, 64), {"x": {0: "b", 2: "h", 3: "w"}})
    _same_as_eager(proto, _shuffle, [(3, 4, 96, 50), (1, 4, 50, 96), (2, 4, 33, 97)])


@pytest.mark.parametrize("t", [32, 40, 47])
def test_a_stop_rounded_from_a_dynamic_size_is_refused_at_any_traced_size(t):
    # (traced at T = 40, x[:, :T // 16 * 16] was exported as x[:, :32]: onnxruntime gave 32
    # columns at T = 50 where eager gives 48; a check trace moved by the stop shows it move)
    def rounded(x):
        return x[:, :x.shape[1] // 16 * 16] * 2
    with pytest.raises(ExportError, match=r"slice at .*moves with a dynamic size"):
        _export(rounded, (2, t, 4), {"x": {1: "t"}})


@pytest.mark.parametrize("crop", [lambda x: x[:, :32] + 1, lambda x: x[:, 4:32] + 1,
                                  lambda x: x.narrow(1, 0, 32) * 2])
def test_a_fixed_crop_traced_at_its_stop_is_exported(crop):
    # (was refused as a possible rounding: the check trace now reaches twice the stop)
    proto = _export(crop, (2, 32, 4), {"x": {1: "t"}})
    _same_as_eager(proto, crop, [(2, t, 4) for t in (32, 33, 50, 100)])


@pytest.mark.parametrize("t", [10, 40, 63])
@pytest.mark.parametrize("start", [None, 8])
def test_a_stop_rounded_to_0_below_the_multiple_is_refused(t, start):
    # (traced at T = 40, x[:, :T // 64 * 64] has stop 0: it was exported as an empty slice,
    # 0 columns in onnxruntime at T = 70 where eager gives 64)
    def rounded(x):
        return x[:, start:x.shape[1] // 64 * 64] * 2
    with pytest.raises(ExportError, match=r"slice at .*moves with a dynamic size"):
        _export(rounded, (2, t, 4), {"x": {1: "t"}})


def test_an_empty_crop_of_a_fixed_stop_is_exported():
    def empty(x):
        return x[:, :0] * 2, x[:, 5:3] + 1
    proto = _export(empty, (2, 40, 4), {"x": {1: "t"}})
    _same_as_eager(proto, empty, [(2, t, 4) for t in (40, 3, 70, 300)])


def _center_crop(x):
    return x[..., 16:208, 16:208] * 2


def _check_sizes(monkeypatch, fn, shape, axes):
    sizes = []
    retrace = exporter.retrace_resized
    monkeypatch.setattr(exporter, "retrace_resized",
                        lambda *a, **k: sizes.append(k.get("sizes")) or retrace(*a, **k))
    proto = _export(fn, shape, axes)
    return proto, sizes[1]


def test_the_check_trace_moves_a_crop_only_as_far_as_a_rounding_needs(monkeypatch):
    # (each crop moved its axis by its bound: a 224 x 224 center crop to 16:208 traced again
    # at 435 x 440, a crop to :32 at T = 100 at 135; a stop b in the upper half may be a
    # rounding to a multiple up to b, seen at 2b; one in the lower half cannot be)
    proto, sizes = _check_sizes(monkeypatch, _center_crop, (1, 3, 224, 224),
                                {"x": {2: "h", 3: "w"}})
    assert sizes == {"h": 224 + 3 + 192, "w": 224 + 12 + 192}
    _same_as_eager(proto, _center_crop, [(1, 3, 224, 224), (1, 3, 300, 250)])

    def low(x):
        return x[:, :32] * 2
    proto, sizes = _check_sizes(monkeypatch, low, (2, 100, 4), {"x": {1: "t"}})
    assert sizes == {"t": 100 + 3}
    _same_as_eager(proto, low, [(2, t, 4) for t in (100, 33, 32, 70)])
