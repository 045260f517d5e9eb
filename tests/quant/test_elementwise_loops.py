"""Quantized add/add_relu/mul (QFunctional) and the quantized hardswish/leaky_relu/elu against
PyTorch bit for bit where its vector body and scalar kernel differ (ties, and values beyond
int32): broadcast, 0-d, 1-d, strided, transposed and channels-last operands, rows shorter
and longer than 64, and tensors long enough to be cut between threads."""

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as ennq
from ember.quant.loops import Loop
from tests.quant.helpers import same


@pytest.fixture
def threads(request):
    """Ember and PyTorch on ``request.param`` threads (restored after)."""
    before = ember.get_num_threads(), torch.get_num_threads()
    ember.set_num_threads(request.param)
    torch.set_num_threads(ember.get_num_threads())
    yield ember.get_num_threads()
    ember.set_num_threads(before[0])
    torch.set_num_threads(before[1])


def _pair(shape, storage, scale, zero_point, rng, channels_last=False):
    info = np.iinfo(storage)
    q = rng.integers(info.min, info.max + 1, shape).astype(storage)
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(q), scale, zero_point)
    if channels_last:
        t = t.contiguous(memory_format=torch.channels_last)
        q = np.ascontiguousarray(q.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    qdtype = ember.qint8 if storage == np.int8 else ember.quint8
    return t, ember.quant.QuantizedTensor(ember.from_numpy(q), qdtype, scale, zero_point)


def _same_layout(e, t):
    same(e.int_repr(), t.int_repr())
    if t.numel() > 1:
        assert e.int_repr().stride() == t.int_repr().stride()


def _view(kind, t, e):
    if kind == "transposed":
        return t.transpose(-1, -2), e.transpose(-1, -2)
    if kind == "sliced":  # (rows still contiguous)
        return t[..., 1:], e[..., 1:]
    if kind == "strided":
        return t[..., ::2], e[..., ::2]
    return t, e


_SHAPES = [((2, 65), (65,)), ((65,), (2, 65)), ((3, 100), (3, 1)), ((3, 1), (1, 100)),
           ((2, 130), (130,)), ((2, 30), (30,)), ((4, 40), (1, 40)), ((), ()), ((200,), ()),
           ((), (130,)), ((1,), (300,)), ((200,), (200,)), ((3, 64), (3, 64)), ((5, 0), (5, 0)),
           ((2, 70, 3, 4), (70, 1, 1)), ((1, 70, 1, 1), (2, 70, 3, 4)),
           ((2, 70, 1, 1), (2, 70, 3, 4)), ((2, 1, 3, 4), (2, 70, 3, 4))]
# (input scales, output scale): ties between the vector and scalar roundings, and products
# beyond int32 (and inf, NaN) where the two saturate differently
_SCALES = [(0.5, 0.25, 1.0), (0.5, 0.25, 0.5), (300.0, 300.0, 0.001), (1e4, 1e4, 1e-6),
           (3e38, 3e38, 1.0)]


@pytest.mark.parametrize("storage", [np.uint8, np.int8])  # (quint8, qint8)
def test_binary_ops_split_vector_and_scalar_elements_as_torch(storage):
    rng = np.random.default_rng(int(storage == np.int8))
    info = np.iinfo(storage)
    for (sa, sb), scales in ((s, c) for s in _SHAPES for c in _SCALES):
        zs = [int(z) for z in rng.integers(info.min, info.max + 1, 3)]
        layouts = [(False, False)] + [(x, y) for x in (False, True) for y in (False, True)
                                      if (x or y) and len(sa) == len(sb) == 4]
        for cl_a, cl_b in layouts:
            (ta, ea), (tb, eb) = (_pair(s, storage, c, z, rng, cl) for s, c, z, cl in
                                  ((sa, scales[0], zs[0], cl_a), (sb, scales[1], zs[1], cl_b)))
            tf, ef = tnnq.QFunctional(), ennq.QFunctional()
            tf.scale, tf.zero_point = ef.scale, ef.zero_point = scales[2], zs[2]
            for op in ("add", "add_relu", "mul"):
                _same_layout(getattr(ef, op)(ea, eb), getattr(tf, op)(ta, tb))


@pytest.mark.parametrize("kind", ["transposed", "sliced", "strided"])
@pytest.mark.parametrize("storage", [np.uint8, np.int8])
def test_binary_ops_on_non_contiguous_operands_as_torch(storage, kind):
    rng = np.random.default_rng(2)
    for shape, scales in ((s, c) for s in ((2, 130), (130, 2), (3, 5, 70)) for c in _SCALES):
        (ta, ea), (tb, eb) = (_pair(shape, storage, c, z, rng)
                              for c, z in ((scales[0], 3), (scales[1], -1 if storage == np.int8
                                                            else 201)))
        ta, ea = _view(kind, ta, ea)
        for (tb2, eb2) in (_view(kind, tb, eb), (tb, eb)):
            if tb2.shape != ta.shape:
                continue
            tf, ef = tnnq.QFunctional(), ennq.QFunctional()
            tf.scale, tf.zero_point = ef.scale, ef.zero_point = scales[2], 5
            for op in ("add", "add_relu", "mul"):
                _same_layout(getattr(ef, op)(ea, eb2), getattr(tf, op)(ta, tb2))


@pytest.mark.parametrize("threads", [1, 2, 3], indirect=True)
def test_long_operands_are_cut_between_threads_as_torch(threads):
    rng = np.random.default_rng(threads)
    for sa, sb in (((40000,), (40000,)), ((3, 20000), (20000,)), ((70000,), ()),
                   ((2, 33000), (2, 1))):
        (ta, ea), (tb, eb) = (_pair(s, np.uint8, c, z, rng)
                              for s, c, z in ((sa, 0.5, 30), (sb, 0.25, 102)))
        tf, ef = tnnq.QFunctional(), ennq.QFunctional()
        tf.scale, tf.zero_point = ef.scale, ef.zero_point = 1.0, 95
        _same_layout(ef.add(ea, eb), tf.add(ta, tb))


def test_requantization_beyond_int32_saturates_as_torch():
    """torch's vector body converts to int32 (overflow: its minimum; the zero point added
    with wraparound), its scalar kernel to 64 bits then clamps: 64 elements take the first,
    the last 10 the second."""
    for storage, qdtype, zero_points in ((np.uint8, ember.quint8, (0, 127, 128, 200, 255)),
                                         (np.int8, ember.qint8, (-128, -50, 0, 50, 127))):
        z = 128 if storage == np.uint8 else 0
        info = np.iinfo(storage)
        values = np.resize(np.array([info.min, z - 1, z, z + 1, info.max], storage), 74)
        for scales in ((1e4, 1.0, 1e-6), (300.0, 300.0, 0.001), (3e38, 3e38, 1.0),
                       (1e20, 1e20, 1.0), (2147483520.0, 1.0, 1.0), (2147483648.0, 1.0, 1.0)):
            for zo in zero_points:
                (ta, ea), (tb, eb) = (
                    (torch._make_per_tensor_quantized_tensor(torch.from_numpy(q), s, z),
                     ember.quant.QuantizedTensor(ember.from_numpy(q), qdtype, s, z))
                    for q, s in ((values, scales[0]), (values[::-1].copy(), scales[1])))
                tf, ef = tnnq.QFunctional(), ennq.QFunctional()
                tf.scale, tf.zero_point = ef.scale, ef.zero_point = scales[2], zo
                for op in ("add", "add_relu", "mul"):
                    same(getattr(ef, op)(ea, eb).int_repr(), getattr(tf, op)(ta, tb).int_repr())


_UNARY = [("Hardswish", ()), ("LeakyReLU", (0.01,)), ("LeakyReLU", (1.0,)), ("ELU", (1.0,))]


@pytest.mark.parametrize("threads", [2], indirect=True)
@pytest.mark.parametrize("storage", [np.uint8, np.int8])  # (quint8, qint8)
@pytest.mark.parametrize("name, options", _UNARY)
def test_unary_modules_on_any_layout_as_torch(name, options, threads, storage):
    """hardswish visits its output in the input's suggested layout, leaky_relu makes the
    input dense in it first, elu writes C order: each splits its elements as torch's."""
    rng = np.random.default_rng(3)
    info = np.iinfo(storage)
    for shape, cl in (((2, 65), False), ((65, 2), False), ((2, 130), False), ((), False),
                      ((200,), False), ((2, 70, 1, 2), True), ((2, 70, 3, 4), True),
                      ((2, 70, 3, 4), False), ((3, 20000), False)):
        for s_in, s_out in ((0.5, 1.0), (0.5, 0.25), (1e4, 1e-6), (3e38, 1.0)):
            z_in, z_out = (int(z) for z in rng.integers(info.min, info.max + 1, 2))
            tx, ex = _pair(shape, storage, s_in, z_in, rng, cl)
            tm = getattr(torch.ao.nn.quantized, name)(s_out, z_out, *options)
            em = getattr(ennq, name)(s_out, z_out, *options)
            for kind in ("plain", "transposed", "sliced", "strided")[:1 if len(shape) < 2
                                                                     else 4]:
                vt, ve = _view(kind, tx, ex)
                _same_layout(em(ve), tm(vt))


def test_loop_rows_and_blocks():
    a, b = np.broadcast_arrays(np.zeros((3, 100), np.uint8), np.zeros((3, 1), np.uint8))
    loop = Loop.binary(a, a, b, resized=True)  # (b: a broadcast scalar along the rows)
    assert loop.vector_mask().reshape(3, 100).sum(1).tolist() == [64, 64, 64]
    assert not Loop.binary(a.T, a.T, a.T, resized=True).vector_mask().any()  # (strided rows)
    assert Loop.unary("leaky_relu", a.T).vector_mask().sum() == 256  # (made dense first)


def test_c_contiguous_operands_whose_format_is_channels_last_as_torch():
    """A (N, 1, H, W) array with stride 1 along its channel is C-contiguous and, by PyTorch's
    suggest_memory_format, channels-last: the output takes that format (the one-row path of
    C-contiguous operands must not apply)."""
    rng = np.random.default_rng(4)
    for shape, strides in (((2, 1, 8, 8), (64, 1, 8, 1)), ((3, 1, 5, 70), (350, 1, 70, 1))):
        q = np.lib.stride_tricks.as_strided(rng.integers(0, 256, shape).astype(np.uint8),
                                            shape, strides)
        ta = torch._make_per_tensor_quantized_tensor(
            torch.from_numpy(q.copy()).as_strided(shape, strides), 0.5, 3)
        ea = ember.quant.QuantizedTensor(ember.from_numpy(q), ember.quint8, 0.5, 3)
        tb, eb = _pair(shape, np.uint8, 0.25, 201, rng)
        tf, ef = tnnq.QFunctional(), ennq.QFunctional()
        tf.scale, tf.zero_point = ef.scale, ef.zero_point = 1.0, 5
        for op in ("add", "add_relu", "mul"):
            for (tx, ex), (ty, ey) in (((ta, ea), (tb, eb)), ((tb, eb), (ta, ea))):
                _same_layout(getattr(ef, op)(ex, ey), getattr(tf, op)(tx, ty))
