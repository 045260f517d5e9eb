"""Views and memory queries of quantized tensors, against PyTorch's (per tensor and, where
PyTorch has them, per channel: the channels' parameters follow as indexing's do)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ShapeError
from tests.quant.helpers import TORCH_NAMES

X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32) * 3


def both(per_channel: bool, qdtype: ember.dtype = ember.quint8) -> tuple:
    if per_channel:
        s, z = np.array([0.1, 0.2, 0.05]), np.array([1, 2, 3])
        return (ember.quantize_per_channel(ember.tensor(X), ember.tensor(s), ember.tensor(z), 1,
                                           qdtype),
                torch.quantize_per_channel(torch.tensor(X), torch.tensor(s), torch.tensor(z), 1,
                                           TORCH_NAMES[qdtype]))
    return (ember.quantize_per_tensor(ember.tensor(X), 0.1, 3, qdtype),
            torch.quantize_per_tensor(torch.tensor(X), 0.1, 3, TORCH_NAMES[qdtype]))


def same_q(e: ember.quant.QuantizedTensor, t: torch.Tensor) -> None:
    np.testing.assert_array_equal(e.int_repr().numpy(), t.int_repr().numpy())
    assert str(e.qscheme()).split(".")[-1] == str(t.qscheme()).split(".")[-1]
    if e.qscheme() is ember.per_tensor_affine:
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
    else:
        assert e.q_per_channel_axis() == t.q_per_channel_axis()
        np.testing.assert_array_equal(e.q_per_channel_scales().numpy(),
                                      t.q_per_channel_scales().numpy())


VIEWS = ["unsqueeze(0)", "unsqueeze(-1)", "select(1, 0)", "select(0, 1)", "select(-1, 2)",
         "narrow(1, 1, 2)", "narrow(2, 1, 2)", "narrow(1, -2, 1)", "chunk(2, 1)[1]",
         "chunk(2, 2)[0]", "split(2, 1)[1]", "split([1, 2], 1)[1]", "unbind(0)[1]",
         "unbind(1)[2]", "view_as(q)", "reshape_as(q)", "cpu()", "to('cpu')"]
PER_TENSOR_ONLY = ["t_2d", "q.T", "q.mT", "movedim(0, 2)", "swapaxes(0, 1)", "flip(1)",
                   "repeat(2, 1, 1)", "index_select(2, idx)", "view_as(q.reshape(6, 4))"]


def apply(q, op: str, lib):
    idx = lib.tensor([0, 3])  # noqa: F841 - used by eval
    if op == "t_2d":
        return q[0].t()
    return eval(op if op.startswith("q.") else "q." + op)


@pytest.mark.parametrize("op", VIEWS + PER_TENSOR_ONLY)
@pytest.mark.parametrize("qdtype", [ember.quint8, ember.qint8])
def test_views_per_tensor_as_torch(op: str, qdtype: ember.dtype) -> None:
    e, t = both(False, qdtype)
    same_q(apply(e, op, ember), apply(t, op, torch))


@pytest.mark.parametrize("op", [v for v in VIEWS if v != "select(-1, 2)"])
def test_views_per_channel_as_torch(op: str) -> None:
    e, t = both(True)
    same_q(apply(e, op, ember), apply(t, op, torch))


def test_select_negative_dim_per_channel_keeps_the_axis() -> None:
    """A dim after the channel axis: PyTorch 2.13's select moves the axis to 0, giving a
    tensor its own repr refuses; the axis stays at 1, as indexing ``q[:, :, 2]`` has it."""
    e, _ = both(True)
    for picked in (e.select(-1, 2), e.select(2, 2)):
        assert picked.q_per_channel_axis() == 1
        np.testing.assert_array_equal(picked.int_repr().numpy(), e[:, :, 2].int_repr().numpy())


@pytest.mark.parametrize("op", ["t_2d", "q.T", "movedim(0, 2)", "flip(1)", "repeat(2, 1, 1)"])
def test_reordering_views_refused_per_channel_as_torch(op: str) -> None:
    e, t = both(True)
    with pytest.raises(RuntimeError):
        apply(t, op, torch)
    with pytest.raises(ember.errors.ArgumentError, match="per-channel"):
        apply(e, op, ember)


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("qdtype", [ember.quint8, ember.qint32])
def test_memory_queries_as_torch(per_channel: bool, qdtype: ember.dtype) -> None:
    if per_channel and qdtype is ember.qint32:
        qdtype = ember.qint8
    e, t = both(per_channel, qdtype)
    assert e.stride() == t.stride() and e.stride(1) == t.stride(1)
    assert e.element_size() == t.element_size()
    assert e.is_contiguous() == t.is_contiguous()
    assert e.nelement() == t.nelement()
    assert e.cpu() is e and e.to("cpu") is e and e.to(qdtype) is e
    assert e.to(copy=True) is not e


def test_chunk_and_split_edges_as_torch() -> None:
    e, t = both(False)
    for op in ["chunk(5, 1)", "chunk(2, 0)", "split(5, 1)", "q[:, :0].chunk(2, 1)",
               "q[:, :0].split(2, 1)"]:
        es, ts = eval(op.replace("q", "e") if op.startswith("q") else "e." + op), \
            eval(op.replace("q", "t") if op.startswith("q") else "t." + op)
        assert [tuple(a.shape) for a in es] == [tuple(b.shape) for b in ts], op


@pytest.mark.parametrize("bad", ["chunk(0)", "split(0)", "split([1, 2], 0)",
                                 "narrow(0, 1, 5)", "select(3, 0)", "unsqueeze(4)",
                                 "to(ember.float32)"])
def test_bad_views_are_clear_errors(bad: str) -> None:
    e, _ = both(False)
    with pytest.raises(ember.errors.EmberError):
        eval("e." + bad)


@pytest.mark.parametrize("shape", [(0, 4), (2, 0, 3), (0,), (), (3,)])
def test_repr_as_torch_empty_ones_say_their_size_once(shape: tuple) -> None:
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    e = ember.quantize_per_tensor(ember.tensor(x), 0.5, 2, ember.quint8)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.5, 2, torch.quint8)
    assert repr(e).replace("ember", "torch") == repr(t)


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparisons_compare_real_values_as_torch(op: str) -> None:
    """``q == q2`` was ``False`` (identity) for equal tensors; PyTorch compares the values."""
    x = np.array([1.0, 2.0, 0.3, -0.2], np.float32)
    out = []
    for lib in (ember, torch):
        a = lib.quantize_per_tensor(lib.tensor(x), 0.1, 3, lib.quint8)  # noqa: F841 - eval's
        b = lib.quantize_per_tensor(lib.tensor(x[::-1].copy()), 0.05, 3, lib.quint8)  # noqa: F841
        out.append([eval(f"a {op} b").numpy(), eval(f"a {op} a.clone()").numpy(),
                    eval(f"a {op} 1.0").numpy(), eval(f"a {op} lib.tensor(x)").numpy()])
    for e, t in zip(*out, strict=True):
        np.testing.assert_array_equal(e, t)
    q = both(False)[0]
    assert len({q, q.clone()}) == 2  # (hashed by identity, as tensors)


def test_make_quantized_tensors_from_integers_as_torch() -> None:
    ints = np.array([[1, 2, 250], [0, 7, 3]], np.uint8)
    e = ember._make_per_tensor_quantized_tensor(ember.tensor(ints), 0.5, 3)
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(ints), 0.5, 3)
    same_q(e, t)
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    i8 = np.array([[1, -2], [3, 4]], np.int8)
    s, z = np.array([0.5, 0.25]), np.array([0, 1])
    e = ember._make_per_channel_quantized_tensor(ember.tensor(i8), ember.tensor(s),
                                                 ember.tensor(z), 1)
    t = torch._make_per_channel_quantized_tensor(torch.tensor(i8), torch.tensor(s),
                                                 torch.tensor(z), 1)
    same_q(e, t)
    np.testing.assert_array_equal(e.dequantize().numpy(), t.dequantize().numpy())
    source = ember.tensor(ints)
    q = ember._make_per_tensor_quantized_tensor(source, 0.5, 3)
    source[0, 0] = 9  # (a copy, as PyTorch's)
    assert q.int_repr()[0, 0].item() == 1


@pytest.mark.parametrize("bad", [
    "ember._make_per_tensor_quantized_tensor(ember.tensor([1, 2]), 0.5, 1)",
    "ember._make_per_tensor_quantized_tensor(ember.tensor([1], dtype=ember.uint8), 0.5, 300)",
    "ember._make_per_channel_quantized_tensor(ember.ones(2, 2, dtype=ember.int8), "
    "ember.ones(1, dtype=ember.float64), ember.zeros(1, dtype=ember.int64), 1)",
    "ember._make_per_channel_quantized_tensor(ember.ones(2, 2, dtype=ember.int8), "
    "ember.ones(2, dtype=ember.float64), ember.zeros(2, dtype=ember.int64), 2)"])
def test_make_quantized_tensors_refuse_bad_input(bad: str) -> None:
    with pytest.raises(ember.errors.EmberError, match="_make_per_"):
        eval(bad)


@pytest.mark.parametrize("qdtype", [ember.quint8, ember.qint8])
def test_relu_as_torch(qdtype: ember.dtype) -> None:
    e, t = both(False, qdtype)
    same_q(e.relu(), t.relu())
    e = both(True, qdtype)[0]  # (PyTorch 2.13 refuses per channel; the real values' relu)
    r = e.relu()
    assert r.q_per_channel_axis() == 1
    np.testing.assert_array_equal(r.dequantize().numpy(),
                                  np.maximum(e.dequantize().numpy(), 0))


@pytest.mark.parametrize("op", ["max()", "min()", "max(1)", "min(2, True)", "max(-1)"])
def test_max_min_as_torch(op: str) -> None:
    e, t = both(False)
    re, rt = eval("e." + op), eval("t." + op)
    if "(" in op and op[4] != ")":
        same_q(re.values, rt.values)
        np.testing.assert_array_equal(re.indices.numpy(), rt.indices.numpy())
    else:
        same_q(re, rt)
    with pytest.raises(ember.errors.ArgumentError, match="per-channel"):
        eval("both(True)[0]." + op)


def test_equal_as_torch() -> None:
    out = []
    for lib in (ember, torch):
        a = lib.quantize_per_tensor(lib.tensor(X), 0.1, 3, lib.quint8)
        others = [a.clone(), lib.quantize_per_tensor(lib.tensor(X), 0.1, 4, lib.quint8),
                  lib.quantize_per_tensor(lib.tensor(X), 0.1, 3, lib.qint8), a[:1], a.dequantize(),
                  lib.quantize_per_tensor(lib.tensor(X), 0.2, 3, lib.quint8)]
        out.append([a.equal(o) for o in others])
    assert out[0] == out[1]
    e, t = both(True)
    assert e.equal(e.clone()) == t.equal(t.clone()) is True


@pytest.mark.parametrize("shape", [(2, 3, 4), (5,), ()])
def test_T_of_a_quantized_non_matrix_warns_at_the_callers_line(shape):
    # QuantizedTensor.T read its integer tensor's .T, so the warning named qtensor.py
    import warnings
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    q = ember.quantize_per_tensor(ember.tensor(x), 0.5, 0, ember.qint8)
    t = torch.quantize_per_tensor(torch.tensor(x), 0.5, 0, torch.qint8)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = q.T
    assert [w.filename for w in seen] == [__file__]
    assert tuple(got.shape) == tuple(t.T.shape) == shape[::-1]
    np.testing.assert_array_equal(got.int_repr().numpy(), t.T.int_repr().numpy())


@pytest.mark.parametrize("view", [lambda q: q.permute(0, 2, 3, 1), lambda q: q.transpose(0, 2),
                                  lambda q: q.permute(3, 2, 1, 0), lambda q: q[0].transpose(0, 1),
                                  lambda q: q.permute(0, 2, 3, 1).permute(0, 3, 1, 2),
                                  lambda q: q[:, :2], lambda q: q])
@pytest.mark.parametrize("memory_format", [None, "preserve_format", "contiguous_format",
                                           "channels_last"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_clone_lays_out_as_torch_quantized_clone(view, memory_format, channels_last):
    # (PyTorch's quantized clone keeps only channels-last strides; ember kept any: sweep65c;
    # with no memory_format it copies in C order, even channels-last: ember kept those, mend65e)
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 10
    kept = {"memory_format": ember.channels_last} if channels_last else {}
    tkept = {"memory_format": torch.channels_last} if channels_last else {}
    e = view(ember.quantize_per_tensor(ember.tensor(x).contiguous(**kept), 0.1, 3, ember.quint8))
    t = view(torch.quantize_per_tensor(torch.tensor(x).contiguous(**tkept), 0.1, 3,
                                       torch.quint8))
    kw = {} if memory_format is None else {"memory_format": getattr(ember, memory_format)}
    tkw = {} if memory_format is None else {"memory_format": getattr(torch, memory_format)}
    if e.ndim != 4 and memory_format == "channels_last":
        with pytest.raises(ShapeError, match="channels_last needs a 4-d"):
            e.clone(**kw)
        with pytest.raises(RuntimeError, match="rank 4"):
            t.clone(**tkw)
        return
    ec, tc = e.clone(**kw), t.clone(**tkw)
    assert tuple(ec.stride()) == tc.stride()
    np.testing.assert_array_equal(ec.int_repr().numpy(), tc.int_repr().numpy())


@pytest.mark.parametrize("layout", [lambda t: t.permute(0, 2, 3, 1), lambda t: t[0, 0].t(),
                                    lambda t: t.contiguous(memory_format=_module(t).channels_last),
                                    lambda t: t[:, ::2]])
@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_lays_out_as_torch(layout, per_channel):
    # (PyTorch quantizes into the input's suggested format: channels-last or C order; ember
    # kept the input's strides: sweep65c)
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 10
    out = []
    for lib in (ember, torch):
        v = layout(lib.tensor(x))
        if per_channel:
            n = v.shape[1]
            q = lib.quantize_per_channel(v, lib.ones(n) * 0.1, lib.zeros(n, dtype=lib.int64), 1,
                                         lib.quint8)
        else:
            q = lib.quantize_per_tensor(v, 0.1, 3, lib.quint8)
        out.append((tuple(q.stride()), tuple(q.dequantize().stride()), q.is_contiguous(),
                    q.int_repr().numpy().tolist()))
    assert out[0] == out[1]


def _module(t):
    return torch if isinstance(t, torch.Tensor) else ember
