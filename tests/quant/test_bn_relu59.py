"""BatchNorm + ReLU fusion (``torch.ao.nn.intrinsic.BNReLU2d/3d``) and its quantized module
(``torch.ao.nn.intrinsic.quantized.BNReLU2d/3d``), against PyTorch."""

import numpy as np
import pytest
import torch
import torch.ao.nn.intrinsic.quantized as tnniq
import torch.ao.nn.quantized as tnnq
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import quantized as nnq

from .helpers import copy_weights


def _stats(rng, dims):
    return {"weight": rng.standard_normal(4).astype(np.float32),
            "bias": rng.standard_normal(4).astype(np.float32),
            "running_mean": rng.standard_normal(4).astype(np.float32),
            "running_var": rng.uniform(0.3, 2.0, 4).astype(np.float32),
            "num_batches_tracked": np.array(0)}


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("qat", [False, True])
def test_fuse_bn_relu_as_torch(dims, qat):
    rng = np.random.default_rng(dims)
    models = []
    for lib, q in ((torch, tq), (ember, eq)):
        bn = getattr(lib.nn, f"BatchNorm{dims}d")(4)
        bn.load_state_dict({k: lib.tensor(v) for k, v in _stats(rng, dims).items()})
        m = lib.nn.Sequential(bn, lib.nn.ReLU())
        m = q.fuse_modules_qat(m.train(), [["0", "1"]]) if qat else q.fuse_modules(m.eval(),
                                                                                   [["0", "1"]])
        models.append(m)
        rng = np.random.default_rng(dims)
    assert type(models[1][0]) is getattr(nni, f"BNReLU{dims}d")
    assert isinstance(models[1][1], ember.nn.Identity)
    x = np.random.default_rng(0).standard_normal((2, 4) + (3,) * dims).astype(np.float32)
    np.testing.assert_allclose(models[1](ember.tensor(x)).detach().numpy(),
                               models[0](torch.tensor(x)).detach().numpy(), atol=1e-6)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("zero_point", [0, 10, 200])
def test_quantized_bn_relu_integers_as_torch(dims, zero_point):
    rng = np.random.default_rng(zero_point + dims)
    stats = _stats(rng, dims)
    t = getattr(tnniq, f"BNReLU{dims}d")(4)
    e = getattr(nnq, f"BNReLU{dims}d")(4)
    for m, lib in ((t, torch), (e, ember)):
        for k in ("weight", "bias", "running_mean", "running_var"):
            getattr(m, k).data.copy_(lib.tensor(stats[k])) if k in ("weight", "bias") else \
                getattr(m, k).copy_(lib.tensor(stats[k]))
        m.scale, m.zero_point = lib.tensor(0.03), lib.tensor(zero_point)
    x = rng.standard_normal((2, 4) + (4,) * dims).astype(np.float32) * 2
    qt = torch.quantize_per_tensor(torch.tensor(x), 0.04, 120, torch.quint8)
    qe = ember.quantize_per_tensor(ember.tensor(x), 0.04, 120, ember.quint8)
    np.testing.assert_array_equal(e(qe).int_repr().numpy(), t(qt).int_repr().numpy())


@pytest.mark.parametrize("engine", ["fbgemm", "qnnpack"])
def test_post_training_bn_relu_as_torch(engine):
    def build(lib, q):
        return lib.nn.Sequential(q.QuantStub(), lib.nn.BatchNorm2d(4), lib.nn.ReLU(),
                                 q.DeQuantStub()).eval()
    t, e = build(torch, tq), build(ember, eq)
    t[1].load_state_dict({k: torch.tensor(v) for k, v in
                          _stats(np.random.default_rng(5), 2).items()})
    copy_weights(t, e)
    xs = [np.random.default_rng(i).standard_normal((2, 4, 5, 5)).astype(np.float32) * 2
          for i in range(3)]
    outs = []
    old = torch.backends.quantized.engine
    try:
        for lib, q, m in ((torch, tq, t), (ember, eq, e)):
            lib.backends.quantized.engine = engine
            m = q.fuse_modules(m, [["1", "2"]])
            m.qconfig = q.get_default_qconfig(engine)
            q.prepare(m, inplace=True)
            for x in xs:
                m(lib.tensor(x))
            q.convert(m, inplace=True)
            outs.append((type(m[1]).__name__, m(lib.tensor(xs[1])).numpy()))
    finally:
        torch.backends.quantized.engine = old
    assert outs[0][0] == outs[1][0] == "BNReLU2d"
    np.testing.assert_allclose(outs[1][1], outs[0][1], atol=2e-6)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("bn_training", [True, False])
def test_fuse_mixed_mode_bn_relu_as_torch(dims, bn_training):
    # torch's (BatchNorm, ReLU) fuser checks no modes (only conv/linear + BN ones do)
    x = np.random.default_rng(1).standard_normal((2, 4) + (3,) * dims).astype(np.float32)
    outs = []
    for lib, q in ((torch, tq), (ember, eq)):
        bn = getattr(lib.nn, f"BatchNorm{dims}d")(4).train(bn_training)
        m = q.fuse_modules(lib.nn.Sequential(bn, lib.nn.ReLU().train(not bn_training)),
                           [["0", "1"]])
        outs.append((type(m[0]).__name__, m(lib.tensor(x)).detach().numpy()))
    assert outs[1][0] == outs[0][0] == f"BNReLU{dims}d"
    np.testing.assert_allclose(outs[1][1], outs[0][1], atol=1e-6)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("fused", [False, True])
def test_from_float_plain_or_fused_bn_as_torch(dims, fused):
    # torch takes mod[0] only of its own dimension's fused BNReLU: BNReLU{n}d.from_float of a
    # plain batch norm builds a BNReLU, BatchNorm{n}d.from_float of a fused one a BatchNorm
    x = np.random.default_rng(2).standard_normal((2, 4) + (3,) * dims).astype(np.float32)
    got = []
    for lib, q, quantized in ((torch, tq, tnniq), (ember, eq, nnq)):
        float_bn = getattr(lib.nn, f"BatchNorm{dims}d")(4)
        mod = (getattr(lib.ao.nn.intrinsic, f"BNReLU{dims}d")(float_bn, lib.nn.ReLU())
               if fused else float_bn).eval()
        mod.qconfig = q.default_qconfig
        q.prepare(lib.nn.Sequential(mod), inplace=True)
        mod(lib.tensor(x))
        target = getattr(lib.ao.nn.quantized if fused else quantized,
                         f"{'BatchNorm' if fused else 'BNReLU'}{dims}d")
        new = target.from_float(mod)
        got.append((type(new).__name__, float(new.scale), int(new.zero_point)))
    assert got[1] == got[0]


@pytest.mark.parametrize("name", ["BatchNorm2d", "BatchNorm3d", "BNReLU2d", "BNReLU3d"])
@pytest.mark.parametrize("dtype, in_zp, out_zp", [("qint8", 0, -10), ("qint8", -100, 50),
                                                  ("qint32", 7, -3000), ("qint32", 0, 0)])
@pytest.mark.parametrize("channels", [4, 40])
def test_quantized_bn_signed_input_as_torch(name, dtype, in_zp, out_zp, channels):
    # torch's quantized::batch_norm(_relu) runs on qint8 and qint32 as on quint8, clamping
    # to the dtype's range (the ReLU from below at the output zero point)
    rng = np.random.default_rng(channels + abs(in_zp))
    dims = int(name[-2])
    stats = {"weight": rng.standard_normal(channels), "bias": rng.standard_normal(channels),
             "running_mean": rng.standard_normal(channels),
             "running_var": rng.uniform(0.3, 2.0, channels)}
    x = rng.standard_normal((2, channels) + (3,) * dims).astype(np.float32) * 4
    got = []
    for lib, quantized in ((torch, tnniq if "ReLU" in name else tnnq), (ember, nnq)):
        m = getattr(quantized, name)(channels)
        for k, v in stats.items():
            getattr(m, k).data.copy_(lib.tensor(v.astype(np.float32)))
        m.scale, m.zero_point = lib.tensor(0.02), lib.tensor(out_zp)
        y = m(lib.quantize_per_tensor(lib.tensor(x), 0.03, in_zp, getattr(lib, dtype)))
        got.append((str(y.dtype).split(".")[1], y.q_scale(), y.q_zero_point(),
                    y.int_repr().numpy()))
    assert got[1][:3] == got[0][:3]
    np.testing.assert_array_equal(got[1][3], got[0][3])


@pytest.mark.parametrize("name", ["BatchNorm2d", "BatchNorm3d", "BNReLU2d", "BNReLU3d"])
@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
def test_quantized_bn_of_an_empty_batch_keeps_the_input_qparams_as_torch(name, dtype):
    shape = (0, 3) + (2,) * int(name[-2])
    t = getattr(tnniq if "ReLU" in name else tnnq, name)(3).eval()
    e = getattr(nni.quantized if "ReLU" in name else nnq, name)(3).eval()
    t.scale, t.zero_point = torch.tensor(0.5), torch.tensor(7)
    e.scale, e.zero_point = ember.tensor(0.5), ember.tensor(7)
    yt = t(torch.quantize_per_tensor(torch.zeros(shape), 0.1, 3, getattr(torch, dtype)))
    ye = e(ember.quantize_per_tensor(ember.zeros(*shape), 0.1, 3, getattr(ember, dtype)))
    assert (ye.q_scale(), ye.q_zero_point(), tuple(ye.shape)) == (
        yt.q_scale(), yt.q_zero_point(), tuple(yt.shape))


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 2), (1, 20, 3, 3)])
@pytest.mark.parametrize("dtype, zero_point", [("quint8", 3), ("qint8", -4), ("qint32", 7)])
def test_quantized_batch_norm_function_as_torch(shape, dtype, zero_point):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    stats = [rng.standard_normal(shape[1]).astype(np.float32) for _ in range(3)]
    stats.append(rng.uniform(0.3, 2, shape[1]).astype(np.float32))
    qt = torch.quantize_per_tensor(torch.tensor(x), 0.05, zero_point, getattr(torch, dtype))
    qe = ember.quantize_per_tensor(ember.tensor(x), 0.05, zero_point, getattr(ember, dtype))
    yt = torch.quantized_batch_norm(qt, *map(torch.tensor, stats), 1e-5, 0.07, zero_point + 1)
    ye = ember.quantized_batch_norm(qe, *map(ember.tensor, stats), 1e-5, 0.07, zero_point + 1)
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())
    assert (ye.q_scale(), ye.q_zero_point()) == (yt.q_scale(), yt.q_zero_point())


def test_quantized_batch_norm_function_names_missing_statistics():
    x = ember.quantize_per_tensor(ember.zeros(2, 3), 0.1, 0, ember.quint8)
    one = ember.ones(3)
    with pytest.raises(ember.errors.ArgumentError, match="weight of C = 3 elements"):
        ember.quantized_batch_norm(x, None, one, one, one, 1e-5, 0.1, 0)
    with pytest.raises(ember.errors.ArgumentError, match=r"var of C = 3 .*got input shape"):
        ember.quantized_batch_norm(x, one, one, one, ember.ones(4), 1e-5, 0.1, 0)


def _qbn(lib, shape=(2, 3), zero_point=2, **stats):
    x = lib.quantize_per_tensor(lib.linspace(-1, 1, int(np.prod(shape))).reshape(shape),
                                0.1, 3, lib.quint8)
    one, zero = lib.ones(3), lib.zeros(3)
    args = {"weight": one * 1.5, "bias": zero + 0.25, "mean": zero + 0.1, "var": one * 0.5}
    args.update({k: v(lib) for k, v in stats.items()})
    return lib.quantized_batch_norm(x, *args.values(), 1e-5, 0.1, zero_point)


_ARG, _DTYPE = ember.errors.ArgumentError, ember.errors.DTypeError


@pytest.mark.parametrize("case, error, message", [
    ({"shape": (1, 3, 1, 1, 1, 2)}, _ARG, "expected a 2-D to 5-D"),
    ({"shape": (3,)}, _ARG, "expected a 2-D to 5-D"),
    ({"weight": lambda L: L.ones(3, dtype=L.float64)}, _DTYPE, "weight must be float32"),
    ({"var": lambda L: L.ones(3, dtype=L.float16)}, _DTYPE, "var must be float32"),
    ({"mean": lambda L: L.zeros(3, dtype=L.int64)}, _DTYPE, "mean must be float32"),
    ({"zero_point": 2.7}, ember.errors.ArgumentTypeError, "output_zero_point must be an int"),
    ({"zero_point": True}, ember.errors.ArgumentTypeError, "output_zero_point must be an int"),
], ids=["6-D", "1-D", "float64 weight", "float16 var", "int64 mean", "zero point 2.7", "True"])
def test_quantized_batch_norm_function_refuses_what_torch_refuses(case, error, message):
    with pytest.raises((RuntimeError, TypeError)):
        _qbn(torch, **case)
    with pytest.raises(error, match=f"^quantized_batch_norm: {message}"):
        _qbn(ember, **case)


@pytest.mark.parametrize("name", ["weight", "bias", "mean", "var"])
@pytest.mark.parametrize("shape", [(1, 3), (3, 1)])
def test_quantized_batch_norm_function_takes_statistics_of_c_elements_as_torch(name, shape):
    value = {"weight": 1.5, "bias": 0.25, "mean": 0.1, "var": 0.5}[name]
    yt, ye = (_qbn(lib, **{name: lambda L: L.full(shape, value)}) for lib in (torch, ember))
    np.testing.assert_array_equal(ye.int_repr().numpy(), yt.int_repr().numpy())


def test_quantized_batch_norm_function_error_names_the_op_once():
    q = ember.quantize_per_channel(ember.zeros(2, 3), ember.tensor([0.1, 0.1]),
                                   ember.tensor([0, 0]), 0, ember.quint8)
    one = ember.ones(3)
    with pytest.raises(ember.errors.DTypeError, match="^quantized batch_norm: expected"):
        ember.quantized_batch_norm(q, one, one, one, one, 1e-5, 0.1, 0)
