"""``nn.utils.rnn`` (packing, padding) and packed inputs to RNN/LSTM/GRU, against torch on the
same data and weights: values, lengths, permutations, final states and gradients."""

import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as trnn

import ember
import ember.nn as nn
import ember.nn.utils.rnn as ernn
from tests.nn.helpers import pair

RNG = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy()


def _both(a):
    return torch.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)


def _close(e, t, **kw):
    np.testing.assert_allclose(_np(e), _np(t), rtol=1e-10, atol=1e-12, **kw)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce", [([5, 3, 3, 2], True), ([2, 5, 3, 3, 1], False)])
def test_pack_pad_roundtrip(batch_first, lengths, enforce):
    shape = (len(lengths), 5, 3) if batch_first else (5, len(lengths), 3)
    tx, ex = _both(RNG.standard_normal(shape))
    tp = trnn.pack_padded_sequence(tx, lengths, batch_first, enforce)
    ep = ernn.pack_padded_sequence(ex, lengths, batch_first, enforce)
    _close(ep.data, tp.data)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert str(ep.batch_sizes.dtype) == "ember.int64"
    for a, b in ((ep.sorted_indices, tp.sorted_indices),
                 (ep.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None) and (a is None or a.tolist() == b.tolist())
    for total in (None, 7):
        (tout, tlen), (eout, elen) = (
            lib.pad_packed_sequence(p, batch_first, padding_value=-1.5, total_length=total)
            for lib, p in ((trnn, tp), (ernn, ep)))
        _close(eout, tout)
        assert elen.tolist() == tlen.tolist()
    w = RNG.standard_normal(tuple(tout.shape))
    (tout * torch.tensor(w)).sum().backward()
    (eout * ember.tensor(w)).sum().backward()
    _close(ex.grad, tx.grad)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_unpad(batch_first, side):
    arrays = [RNG.standard_normal((n, 2, 3)) for n in (3, 5, 1)]
    ts, es = zip(*(_both(a) for a in arrays))
    tout = trnn.pad_sequence(ts, batch_first, 7.0, side)
    eout = ernn.pad_sequence(es, batch_first, 7.0, side)
    _close(eout, tout)
    eout.sum().backward()
    assert all(float(e.grad.sum()) == e.numel() for e in es)
    if side == "right":
        for a, b in zip(ernn.unpad_sequence(eout, [3, 5, 1], batch_first),
                        trnn.unpad_sequence(tout, torch.tensor([3, 5, 1]), batch_first)):
            _close(a, b)


def test_pack_and_unpack_sequence():
    arrays = [RNG.standard_normal((n, 4)) for n in (2, 4, 1)]
    tp = trnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    ep = ernn.pack_sequence([ember.tensor(a) for a in arrays], enforce_sorted=False)
    _close(ep.data, tp.data)
    for a, b in zip(ernn.unpack_sequence(ep), arrays):
        np.testing.assert_array_equal(a.numpy(), b)
    assert ep.double().data.dtype == ember.float64 and not ep.cpu().is_cuda


def test_errors():
    x = ember.randn(5, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        ernn.pack_padded_sequence(x, [2, 5, 1])
    with pytest.raises(RuntimeError, match="greater than 0"):
        ernn.pack_padded_sequence(x, [5, 0, 1], enforce_sorted=False)
    with pytest.raises(ValueError, match=r"len\(lengths\)"):
        ernn.pack_padded_sequence(x, [5, 1])
    with pytest.raises(ValueError, match="exceeds the 5 time steps"):
        ernn.pack_padded_sequence(x, [6, 2, 1])
    with pytest.raises(ValueError, match="total_length=3"):
        ernn.pad_packed_sequence(ernn.pack_padded_sequence(x, [5, 2, 1]), total_length=3)
    with pytest.raises(ValueError, match="padding_side"):
        ernn.pad_sequence([x], padding_side="middle")
    with pytest.raises(ValueError, match=r"sequence 1 has shape \(2, 3\)"):
        ernn.pad_sequence([ember.ones(2, 2), ember.ones(2, 3)])
    with pytest.raises(TypeError, match="PackedSequence"):
        ernn.pad_packed_sequence(x)


def _flat(out, name):
    y, h = out
    return [y, *(h if name == "LSTM" else (h,))]


@pytest.mark.parametrize("cfg", [{}, {"num_layers": 2, "bidirectional": True},
                                 {"bidirectional": True, "batch_first": True}],
                         ids=lambda c: "-".join(c) or "default")
@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("enforce", [True, False])
def test_packed_rnn_matches_torch(name, cfg, enforce):
    t, e = pair(getattr(torch.nn, name), getattr(nn, name), 3, 4, **cfg)
    lengths = [5, 4, 2, 2, 1] if enforce else [2, 5, 1, 4, 2]
    bf = cfg.get("batch_first", False)
    tx, ex = _both(RNG.standard_normal((5, 5, 3)))
    layers = cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1)
    h0 = RNG.standard_normal((layers, 5, 4))
    th, eh = _both(h0)
    states_t = (th, torch.tensor(-h0)) if name == "LSTM" else th
    states_e = (eh, ember.tensor(-h0)) if name == "LSTM" else eh
    tout = t(trnn.pack_padded_sequence(tx, lengths, bf, enforce), states_t)
    eout = e(ernn.pack_padded_sequence(ex, lengths, bf, enforce), states_e)
    assert isinstance(eout[0], ernn.PackedSequence)
    _close(eout[0].data, tout[0].data)
    assert eout[0].batch_sizes.tolist() == tout[0].batch_sizes.tolist()
    tflat = [trnn.pad_packed_sequence(tout[0], bf)[0], *_flat(tout, name)[1:]]
    eflat = [ernn.pad_packed_sequence(eout[0], bf)[0], *_flat(eout, name)[1:]]
    tl, el = 0, 0
    for a, b in zip(eflat, tflat):
        _close(a, b)
        w = RNG.standard_normal(tuple(b.shape))
        tl, el = tl + (b * torch.tensor(w)).sum(), el + (a * ember.tensor(w)).sum()
    tl.backward()
    el.backward()
    _close(ex.grad, tx.grad)
    _close(eh.grad, th.grad)
    ep = dict(e.named_parameters())
    for k, p in t.named_parameters():
        _close(ep[k].grad, p.grad, err_msg=k)


def test_packed_rnn_default_state_and_errors():
    t, e = pair(torch.nn.GRU, nn.GRU, 2, 3)
    x = RNG.standard_normal((4, 3, 2))
    tout, th = t(trnn.pack_padded_sequence(torch.tensor(x), [1, 4, 2], enforce_sorted=False))
    eout, eh = e(ernn.pack_padded_sequence(ember.tensor(x), [1, 4, 2], enforce_sorted=False))
    _close(eh, th)
    _close(eout.data, tout.data)
    with pytest.raises(ValueError, match=r"Expected hidden size \(1, 3, 3\)"):
        e(ernn.pack_sequence([ember.ones(3, 2, dtype=ember.float64)] * 3),
          ember.zeros(1, 2, 3, dtype=ember.float64))
    with pytest.raises(ValueError, match="input_size"):
        e(ernn.pack_sequence([ember.ones(3, 5, dtype=ember.float64)]))


def test_lengths_tensor_of_any_real_dtype():
    x = ember.ones(3, 2, 1)
    for lengths in (ember.tensor([3.0, 1.0]), ember.tensor([3, 1], dtype=ember.int32), [3, 1]):
        assert ernn.pack_padded_sequence(x, lengths).batch_sizes.tolist() == [2, 1, 1]
    with pytest.raises(ValueError, match="'lengths' should be a 1-D tensor"):
        ernn.pack_padded_sequence(x, ember.tensor(3))


def test_empty_batch_and_zero_dim_errors():
    with pytest.raises(ValueError, match="pack_padded_sequence: Cannot pack empty tensors"):
        ernn.pack_padded_sequence(ember.ones(3, 0, 2), [])
    with pytest.raises(ValueError, match="sequence 1 is a 0-D tensor"):
        ernn.pad_sequence([ember.ones(1), ember.tensor(2.0)])


def test_pad_sequence_takes_the_first_dtype():
    seqs = [np.ones(2, np.float32), np.ones(1, np.float64)]
    out = ernn.pad_sequence([ember.tensor(s) for s in seqs])
    assert str(out.dtype).split(".")[-1] == str(
        trnn.pad_sequence([torch.tensor(s) for s in seqs]).dtype).split(".")[-1] == "float32"


def test_packed_sequence_conversions():
    p = ernn.pack_sequence([ember.ones(2, 1), ember.ones(1, 1)])
    assert [getattr(p, m)().data.dtype for m in ("long", "int", "short", "char", "byte")] == \
        [ember.int64, ember.int32, ember.int16, ember.int8, ember.uint8]
    assert p.int().batch_sizes is p.batch_sizes and p.is_pinned() is False


def test_packed_sequence_pin_memory_refuses_as_tensor_pin_memory():
    # PackedSequence had no pin_memory (an AttributeError); torch's, without an accelerator,
    # refuses as Tensor.pin_memory does
    t = trnn.pack_sequence([torch.ones(2, 1)])
    with pytest.raises(RuntimeError):
        t.pin_memory()
    packed = ernn.pack_sequence([ember.ones(2, 1)])
    with pytest.raises(ember.errors.DeviceError, match="pin_memory"):
        packed.pin_memory()
