"""FloatFunctional / QFunctional: the quantized add, add_relu, mul, add_scalar, mul_scalar and
cat against PyTorch's CPU kernels, and a small residual network quantized end to end."""

import numpy as np
import pytest
import torch
import torch.ao.nn.intrinsic.quantized as tniq
import torch.ao.nn.quantized as tnnq
import torch.ao.quantization as tq

import ember
import ember.ao.nn.quantized as ennq
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same


def _pair(q, scale, zero_point):
    qdtype = ember.qint8 if q.dtype == np.int8 else ember.quint8
    return (torch._make_per_tensor_quantized_tensor(torch.from_numpy(q), scale, zero_point),
            ember.quant.QuantizedTensor(ember.from_numpy(q), qdtype, scale, zero_point))


@pytest.mark.parametrize("storage", [np.uint8, np.int8])  # (quint8, qint8)
@pytest.mark.parametrize("structured", [False, True])  # (structured scales: exact ties)
def test_quantized_ops_equal_torch(structured, storage):
    rng = np.random.default_rng(int(structured))
    low, high = np.iinfo(storage).min, np.iinfo(storage).max + 1
    for _ in range(12):
        n = int(rng.integers(1, 200))
        scales = [0.5, 0.25, 1.0] if structured else [float(s) for s in rng.uniform(0.01, 0.2, 3)]
        za, zb, zo = (int(z) for z in rng.integers(low, high, 3))
        (ta, ea), (tb, eb) = (_pair(rng.integers(low, high, n).astype(storage), s, z)
                              for s, z in ((scales[0], za), (scales[1], zb)))
        tf, ef = tnnq.QFunctional(), ennq.QFunctional()
        tf.scale, tf.zero_point = ef.scale, ef.zero_point = scales[2], zo
        for op in ("add", "add_relu", "mul"):
            same(getattr(ef, op)(ea, eb).int_repr(), getattr(tf, op)(ta, tb).int_repr())
        same(ef.cat([ea, eb], 0).int_repr(), tf.cat([ta, tb], 0).int_repr())
        for c in (float(rng.normal() * 3), float(rng.normal() * 40), -0.75, 0.0):
            for op in ("add_scalar", "mul_scalar"):
                e, t = getattr(ef, op)(ea, c), getattr(tf, op)(ta, c)
                assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point())
                same(e.int_repr(), t.int_repr())
                assert repr(e.dtype) == repr(t.dtype).replace("torch", "ember")


@pytest.mark.parametrize("op", ["add", "add_relu", "mul", "cat"])
def test_operands_of_two_quantized_dtypes_are_refused_as_torch(op):
    f = ennq.QFunctional()
    a = ember.quantize_per_tensor(ember.zeros(3), 0.1, 0, ember.qint8)
    b = ember.quantize_per_tensor(ember.zeros(3), 0.1, 128, ember.quint8)
    with pytest.raises(ember.DTypeError, match=rf"quantized {op}: the operands should have one "
                                               r"dtype, got ember.qint8 and ember.quint8"):
        f.cat([a, b]) if op == "cat" else getattr(f, op)(a, b)
    with pytest.raises(ember.DTypeError, match="quint8 or ember.qint8"):
        f.add(ember.quantize_per_tensor(ember.zeros(3), 0.1, 0, ember.qint32), a)


def test_broadcast_add_and_cat_along_a_dim():
    rng = np.random.default_rng(0)
    (ta, ea), (tb, eb) = (_pair(rng.integers(0, 256, s).astype(np.uint8), 0.05, 7)
                          for s in ((3, 4), (1, 4)))
    tf, ef = tnnq.QFunctional(), ennq.QFunctional()
    tf.scale, tf.zero_point = ef.scale, ef.zero_point = 0.07, 100
    same(ef.add(ea, eb).int_repr(), tf.add(ta, tb).int_repr())
    same(ef.cat([ea, eb], 0).int_repr(), tf.cat([ta, tb], 0).int_repr())
    with pytest.raises(ValueError, match=r"cannot concatenate shapes \(3, 4\), \(1, 4\) along "
                                         "dim 1"):
        ef.cat([ea, eb], 1)
    with pytest.raises(ember.DTypeError, match="quantized add: expected per-tensor"):
        ef.add(ember.ones(2), eb)
    with pytest.raises(RuntimeError, match="not intended to use the 'forward'"):
        ef(ea)


def _residual(nn, stubs, functional):
    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.relu = nn.ReLU()
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.skip = functional.FloatFunctional()

        def forward(self, x):
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.skip.add_relu(out, x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = stubs.QuantStub(), stubs.DeQuantStub()
            self.stem = nn.Conv2d(2, 4, 3, padding=1)
            self.block1, self.block2 = Block(4), Block(4)
            self.join = functional.FloatFunctional()
            self.scale = functional.FloatFunctional()
            self.fc = nn.Linear(8 * 5 * 5, 3)

        def forward(self, x):
            x = self.stem(self.quant(x))
            y = self.block2(self.block1(x))
            z = self.join.cat([x, self.scale.mul_scalar(self.scale.add_scalar(y, 0.3), 0.5)], 1)
            return self.dequant(self.fc(z.flatten(1)))
    return Net().eval()


def test_residual_network_quantizes_like_torch():
    torch.manual_seed(0)
    t, e = _residual(torch.nn, tq, tnnq), _residual(ember.nn, eq, ennq)
    with torch.no_grad():
        for m in t.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 2)
    copy_weights(t, e)
    groups = [[f"block{i}.conv1", f"block{i}.bn1", f"block{i}.relu"] for i in (1, 2)] + [
        [f"block{i}.conv2", f"block{i}.bn2"] for i in (1, 2)]
    t, e = tq.fuse_modules(t, groups), eq.fuse_modules(e, groups)
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.get_default_qconfig("x86"), eq.get_default_qconfig("x86")
    tp, ep = tq.prepare(t), eq.prepare(e)
    x = np.random.default_rng(1).normal(size=(4, 2, 5, 5)).astype(np.float32)
    tp(torch.from_numpy(x))
    ep(ember.from_numpy(x))
    assert type(ep.block1.skip.activation_post_process).__name__ == "HistogramObserver"
    copy_weights(tp, ep)  # the same observed ranges (the histograms' too)
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert type(ec.block1.skip).__name__ == "QFunctional"
    same(ec(ember.from_numpy(x)), tc(torch.from_numpy(x)))
    state = ec.state_dict()
    assert float(state["join.scale"].item()) == tc.join.scale


def test_add_scalar_whose_shift_leaves_int32_is_refused_as_torch():
    q = ember.quantize_per_tensor(ember.tensor([0.5, -1.0]), 1.0, 128, ember.quint8)
    f = ennq.QFunctional()
    assert f.add_scalar(q, 2.0**31 - 1).q_zero_point() == 0  # (still an int32 shift)
    for c in (2.0**31, -(2.0**31) - 1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="add_scalar"):
            f.add_scalar(q, c)


@pytest.mark.parametrize("op", ["add", "add_relu", "mul"])
def test_quantized_binary_ops_name_shapes_that_do_not_broadcast(op):
    f = ennq.QFunctional()
    a = ember.quantize_per_tensor(ember.zeros(2, 3), 0.1, 128, ember.quint8)
    b = ember.quantize_per_tensor(ember.zeros(4), 0.1, 128, ember.quint8)
    with pytest.raises(ember.ShapeError, match=rf"quantized {op}: .*\(2, 3\) and \(4,\)"):
        getattr(f, op)(a, b)


@pytest.mark.parametrize("qdtype", ["quint8", "qint8"])
def test_every_op_on_zero_dim_operands_as_torch(qdtype):
    z = 128 if qdtype == "quint8" else 0
    t = torch.quantize_per_tensor(torch.tensor(0.5), 0.1, z, getattr(torch, qdtype))
    e = ember.quantize_per_tensor(ember.tensor(0.5), 0.1, z, getattr(ember, qdtype))
    tf, ef = tnnq.QFunctional(), ennq.QFunctional()
    tf.scale, tf.zero_point = ef.scale, ef.zero_point = 0.3, 3
    for op, other in (("add", None), ("add_relu", None), ("mul", None), ("add_scalar", 2.0),
                      ("add_scalar", 100.0), ("mul_scalar", -2.0), ("mul_scalar", 0.0)):
        r, s = (getattr(f, op)(x, x if other is None else other) for f, x in ((tf, t), (ef, e)))
        assert tuple(s.shape) == () and (s.q_scale(), s.q_zero_point()) == (r.q_scale(),
                                                                             r.q_zero_point())
        same(s.int_repr(), r.int_repr())
    with pytest.raises(ValueError, match=r"cannot concatenate shapes \(\), \(\)"):
        ef.cat([e, e])  # (torch: zero-dimensional tensor cannot be concatenated)


@pytest.mark.parametrize("storage", [np.uint8, np.int8])
def test_matmul_equals_torch(storage):
    """quantized::matmul (torch 2.13): matmul of the dequantized inputs (any ranks, batch
    broadcasting), quantized in the inputs' dtype."""
    rng = np.random.default_rng(7)
    low, high = np.iinfo(storage).min, np.iinfo(storage).max + 1
    for sa, sb in (((2, 3), (3,)), ((3,), (3, 6)), ((3,), (3,)), ((5, 7), (7, 4)),
                   ((2, 3, 64), (64, 9)), ((1, 4, 30), (3, 30, 5)), ((16, 300), (300, 20))):
        for scales in ((0.25, 0.5, 2.0), tuple(float(s) for s in rng.uniform(0.01, 0.2, 3))):
            za, zb, zo = (int(z) for z in rng.integers(low, high, 3))
            (ta, ea), (tb, eb) = (_pair(rng.integers(low, high, s).astype(storage), c, z)
                                  for s, c, z in ((sa, scales[0], za), (sb, scales[1], zb)))
            tf, ef = tnnq.QFunctional(), ennq.QFunctional()
            tf.scale, tf.zero_point = ef.scale, ef.zero_point = scales[2], zo
            e, t = ef.matmul(ea, eb), tf.matmul(ta, tb)
            assert repr(e.dtype) == repr(t.dtype).replace("torch", "ember")
            same(e.int_repr(), t.int_repr())
    bad = _pair(np.zeros((5, 7), storage), 0.1, 0)[1]
    with pytest.raises(ember.ShapeError, match=r"quantized matmul: cannot multiply shapes "
                                               r"\(5, 7\) and \(5, 7\)"):
        ef.matmul(bad, bad)  # (torch: mat1 and mat2 shapes cannot be multiplied)


def test_matmul_refuses_mixed_dtypes_and_float_functional_observes_it():
    a = ember.quantize_per_tensor(ember.zeros(2, 3), 0.1, 0, ember.qint8)
    b = ember.quantize_per_tensor(ember.zeros(3, 2), 0.1, 128, ember.quint8)
    with pytest.raises(ember.DTypeError, match="quantized matmul: the operands should have one"):
        ennq.QFunctional().matmul(a, b)  # (torch: MatMul operands should have same data type)
    f = ember.ao.nn.quantized.FloatFunctional()
    f.activation_post_process = ember.ao.quantization.MinMaxObserver()
    x, y = ember.tensor([[1.0, -2.0]]), ember.tensor([[3.0], [4.0]])
    assert f.matmul(x, y).tolist() == [[-5.0]]
    assert float(f.activation_post_process.min_val) == -5.0


def test_state_dict_round_trip_rounds_the_scale_to_float32_as_torch():
    t, e = tnnq.QFunctional(), ennq.QFunctional()
    t.scale, e.scale = 0.1, 0.1
    t.zero_point, e.zero_point = 3, 3
    t2, e2 = tnnq.QFunctional(), ennq.QFunctional()
    t2.load_state_dict(t.state_dict())
    e2.load_state_dict(e.state_dict())
    assert e.state_dict()["scale"].dtype == ember.float32
    assert e2.scale == t2.scale == 0.10000000149011612
    x = torch.rand(6)
    qt = torch.quantize_per_tensor(x, 0.05, 2, torch.quint8)
    qe = ember.quantize_per_tensor(ember.tensor(x.numpy()), 0.05, 2, ember.quint8)
    ye, yt = e2.add(qe, qe), t2.add(qt, qt)
    same(ye.int_repr(), yt.int_repr())
    assert ye.q_scale() == yt.q_scale()


@pytest.mark.parametrize("name", ["Linear", "Conv2d", "ConvTranspose2d", "LinearReLU"])
def test_weighted_modules_save_a_float32_0d_scale_as_torch(name):
    args = (3, 4) if "Linear" in name else (2, 2, 1)
    mods = [getattr(tniq if name == "LinearReLU" else tnnq, name)(*args),
            getattr(ember.ao.nn.intrinsic.quantized if name == "LinearReLU" else ennq, name)(*args)]
    loaded = []
    for m in mods:
        m.scale, m.zero_point = 0.1, 3
        state = m.state_dict()
        assert (str(state["scale"].dtype)[-7:], tuple(state["scale"].shape),
                tuple(state["zero_point"].shape)) == ("float32", (), ())
        again = type(m)(*args)
        again.load_state_dict(state)
        loaded.append((again.scale, again.zero_point))
    assert loaded[0] == loaded[1] == (0.10000000149011612, 3)
    old = mods[1].state_dict()  # (what Ember saved before: (1,) float64 scale and zero point)
    old["scale"], old["zero_point"] = ember.tensor([0.1], dtype=ember.float64), ember.tensor([3])
    mods[1].load_state_dict(old)
    assert (mods[1].scale, mods[1].zero_point) == (0.1, 3)
