"""Every layer against the same torch.nn layer on the same weights (float64): outputs,
gradients with respect to inputs and parameters, buffers, in train and eval mode; state-dict
keys identical to PyTorch's; default initialisation distributions."""

import math

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from tests.nn.helpers import compare, copy_state, pair

LAYERS = [
    ("Linear", (5, 3), {}, [(4, 5)]),
    ("Linear", (5, 3), {"bias": False}, [(2, 4, 5)]),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)]),
    ("Identity", (), {}, [(2, 3)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Unflatten", (1, (2, 3)), {}, [(4, 6)]),
    ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}, [(2, 2, 9)]),
    ("Conv2d", (2, 4, 3), {"padding": 1, "groups": 2, "dilation": 2}, [(2, 2, 7, 7)]),
    ("Conv2d", (2, 3, (3, 2)), {"padding": "same", "bias": False}, [(1, 2, 5, 6)]),
    ("Conv2d", (2, 3, 3), {"padding": 1, "padding_mode": "reflect"}, [(1, 2, 5, 5)]),
    ("Conv2d", (2, 3, 3), {"padding": 1, "padding_mode": "circular"}, [(1, 2, 5, 5)]),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     [(2, 4, 4, 4)]),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 2}, [(2, 4, 5)]),
    ("MaxPool2d", (2,), {}, [(2, 3, 6, 6)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, [(1, 2, 7, 7)]),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False},
     [(1, 2, 7, 7)]),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, [(2, 3, 7, 8)]),
    ("AdaptiveAvgPool2d", (1,), {}, [(2, 3, 5, 5)]),
    ("BatchNorm1d", (4,), {}, [(6, 4)]),
    ("BatchNorm1d", (4,), {"momentum": None}, [(3, 4, 5)]),
    ("BatchNorm2d", (3,), {}, [(4, 3, 2, 2)]),
    ("BatchNorm2d", (3,), {"affine": False, "track_running_stats": False}, [(4, 3, 2, 2)]),
    ("LayerNorm", (6,), {}, [(3, 6)]),
    ("LayerNorm", ((2, 3),), {"elementwise_affine": False}, [(4, 2, 3)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("InstanceNorm2d", (3,), {"track_running_stats": True, "momentum": None},
     [(2, 3, 4, 5)]),
    ("InstanceNorm3d", (3,), {"affine": True}, [(2, 3, 3, 4, 5)]),
    ("ZeroPad2d", (1,), {}, [(3, 5, 6)]), ("ConstantPad1d", (2, 1.5), {}, [(2, 3, 5)]),
    ("ReflectionPad2d", ((1, 2, 0, 3),), {}, [(2, 3, 5, 6)]),
    ("ReplicationPad3d", (1,), {}, [(1, 2, 3, 4, 5)]),
    ("CircularPad1d", ((2, 1),), {}, [(2, 3, 5)]),
    ("Dropout", (0.3,), {}, [(4, 5)]),
    ("Upsample", (), {"scale_factor": 2}, [(1, 2, 3, 3)]),
    ("Upsample", (), {"size": (5, 7), "mode": "bilinear", "align_corners": False},
     [(1, 2, 3, 3)]),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "bicubic", "align_corners": True},
     [(1, 2, 3, 3)]),
    ("ReLU", (), {}, [(3, 4)]), ("GELU", (), {"approximate": "tanh"}, [(3, 4)]),
    ("GELU", (), {}, [(3, 4)]), ("SiLU", (), {}, [(3, 4)]), ("Tanh", (), {}, [(3, 4)]),
    ("Sigmoid", (), {}, [(3, 4)]), ("Softmax", (), {"dim": 1}, [(3, 4)]),
    ("LogSoftmax", (), {"dim": -1}, [(3, 4)]), ("LeakyReLU", (0.2,), {}, [(3, 4)]),
    ("ELU", (), {"alpha": 0.5}, [(3, 4)]), ("Softplus", (), {"beta": 2.0}, [(3, 4)]),
    ("Hardtanh", (-0.5, 0.5), {}, [(3, 4)]), ("PReLU", (3,), {}, [(2, 3, 4)]),
    ("Mish", (), {}, [(3, 4)]), ("Hardswish", (), {}, [(3, 4)]), ("GLU", (), {}, [(3, 4)]),
]


def _id(case):
    name, args, kwargs, _ = case
    return name + ("-" + "-".join(f"{k}" for k in kwargs) if kwargs else "")


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("case", LAYERS, ids=[_id(c) for c in LAYERS])
def test_layer_matches_torch(case, train):
    name, args, kwargs, shapes = case
    t, e = pair(getattr(torch.nn, name), getattr(nn, name), *args, **kwargs)
    if name == "Dropout" and train:
        return  # random masks differ; statistics are tested below
    if getattr(t, "running_mean", None) is not None:  # statistics away from their defaults
        t.running_mean.uniform_(-1, 1), t.running_var.uniform_(0.5, 2)
        copy_state(t, e)
    compare(t, e, *shapes, train=train)
    compare(t, e, *shapes, train=train, seed=1)  # a second step: running stats move again
    assert repr(e) == repr(t)


def test_embedding_matches_torch():
    t, e = pair(torch.nn.Embedding, nn.Embedding, 7, 3, padding_idx=2)
    idx = np.array([[0, 2, 6], [2, 2, 1]])
    compare(t, e, inputs=[idx])
    assert float(e.weight.grad[2].abs().sum()) == 0.0
    assert repr(e) == repr(t)


def test_embedding_init_and_from_pretrained():
    emb = nn.Embedding(1000, 8, padding_idx=-1)
    assert emb.padding_idx == 999 and float(emb.weight[999].abs().sum()) == 0
    w = emb.weight.detach().numpy()[:-1]
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05
    pre = nn.Embedding.from_pretrained(ember.eye(3))
    assert not pre.weight.requires_grad
    assert pre(ember.tensor([2])).tolist() == [[0.0, 0.0, 1.0]]
    assert nn.Embedding.from_pretrained(ember.eye(3), freeze=False).weight.requires_grad


def test_conv_transpose_output_size():
    t, e = pair(torch.nn.ConvTranspose2d, nn.ConvTranspose2d, 3, 2, 3, stride=2, padding=1)
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 4))
    out_t = t(torch.tensor(x), output_size=(8, 8))
    out_e = e(ember.tensor(x), output_size=(8, 8))
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="output size"):
        e(ember.tensor(x), output_size=(12, 12))
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        e(ember.tensor(x), output_size=(8,))


def test_dropout_statistics_and_eval():
    d = nn.Dropout(0.25)
    y = d(ember.ones(200, 200)).numpy()
    assert abs((y == 0).mean() - 0.25) < 0.02
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.75], rtol=1e-6)
    assert (d.eval()(ember.ones(3)).numpy() == 1).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_batchnorm_errors_and_counter():
    bn = nn.BatchNorm2d(3)
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(ember.randn(2, 3))
    for _ in range(3):
        bn(ember.randn(2, 3, 2, 2))
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == ember.int64
    bn.eval()(ember.randn(2, 3, 2, 2))
    assert bn.num_batches_tracked.item() == 3


def test_batchnorm_loads_checkpoints_without_the_counter():
    # as PyTorch does for checkpoints older than 0.4.1: the current count is kept
    t, e = torch.nn.BatchNorm1d(3), nn.Sequential(nn.BatchNorm1d(3))
    e[0](ember.randn(4, 3))
    old = {"0." + k: v.numpy() + 1 for k, v in t.state_dict().items()
           if k != "num_batches_tracked"}
    assert repr(e.load_state_dict(old)) == "<All keys matched successfully>"
    assert e[0].num_batches_tracked.item() == 1 and e[0].running_var.tolist() == [2.0] * 3


def test_batchnorm_requires_the_counter_from_a_version_2_checkpoint():
    # a state dict whose _metadata says version 2 (num_batches_tracked's format) must have it
    for lib in (nn, torch.nn):
        bn = lib.Sequential(lib.BatchNorm1d(3))
        sd = bn.state_dict()
        del sd["0.num_batches_tracked"]
        with pytest.raises(RuntimeError, match='Missing key.*"0.num_batches_tracked"'):
            bn.load_state_dict(sd)
        assert bn.load_state_dict(sd, strict=False).missing_keys == ["0.num_batches_tracked"]
        sd._metadata["0"]["version"] = 1  # an old one: the current count is kept
        assert repr(bn.load_state_dict(sd)) == "<All keys matched successfully>"


@pytest.mark.parametrize("name,args", [("Linear", (300, 200)), ("Conv2d", (16, 32, 3)),
                                       ("ConvTranspose2d", (32, 16, 3)),
                                       ("Bilinear", (50, 20, 40))])
def test_default_init_bounds(name, args):
    """Weights from kaiming_uniform(a=√5) = U(±1/√fan_in), bias U(±1/√fan_in); Bilinear
    uses U(±1/√in1_features) for both."""
    m = getattr(nn, name)(*args)
    w = m.weight.detach().numpy()
    fan_in = w.shape[1] * (1 if name == "Bilinear" else int(np.prod(w.shape[2:])))
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    b = m.bias.detach().numpy()
    assert np.abs(b).max() <= bound


def test_layer_dtypes_and_devices_args():
    m = nn.Linear(2, 3, dtype=ember.float64)
    assert m.weight.dtype == ember.float64
    assert nn.Conv2d(1, 2, 3, device="cpu").weight.shape == (2, 1, 3, 3)
    assert nn.LayerNorm(4, dtype=ember.float64).weight.dtype == ember.float64


def test_small_network_training_step_matches_torch():
    layers = lambda lib: lib.Sequential(  # noqa: E731
        lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(), lib.MaxPool2d(2),
        lib.Flatten(), lib.Linear(4 * 3 * 3, 5), lib.LogSoftmax(dim=1))
    t = layers(torch.nn).double()
    e = layers(nn).double()
    assert list(e.state_dict()) == list(t.state_dict())
    e.load_state_dict({k: v.numpy().copy() for k, v in t.state_dict().items()})
    compare(t, e, (4, 1, 6, 6))


def _bn_training(compiled, dtype=np.float32):
    """Five SGD steps of a model with ``BatchNorm1d(momentum=None)`` (cumulative average):
    the losses and the batch norm's state after them."""
    ember.manual_seed(0)
    edtype = ember.float64 if dtype == np.float64 else ember.float32
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8, momentum=None),
                          nn.Linear(8, 2)).to(edtype)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    if compiled:
        step = ember.jit.compile(step)
    rng = np.random.default_rng(1)
    losses = [step(ember.tensor(rng.standard_normal((6, 4)).astype(dtype) + i),
                   ember.tensor(rng.standard_normal((6, 2)).astype(dtype))).item()
              for i in range(5)]
    return losses, {k: v.numpy().copy() for k, v in model[1].state_dict().items()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batchnorm_cumulative_average_compiled_matches_eager(dtype):
    (eager, e_state), (jit, j_state) = _bn_training(False, dtype), _bn_training(True, dtype)
    np.testing.assert_allclose(jit, eager, rtol=1e-5)
    assert j_state["num_batches_tracked"] == e_state["num_batches_tracked"] == 5
    for key in ("running_mean", "running_var"):
        np.testing.assert_allclose(j_state[key], e_state[key], rtol=1e-5, atol=1e-6)


def test_batchnorm_cumulative_average_matches_torch_over_many_batches():
    t, e = pair(torch.nn.BatchNorm2d, nn.BatchNorm2d, 3, momentum=None)
    rng = np.random.default_rng(0)
    for i in range(6):
        x = rng.standard_normal((4, 3, 2, 2)) * (i + 1) + i
        t(torch.tensor(x))
        e(ember.tensor(x))
    for key, value in t.state_dict().items():
        np.testing.assert_allclose(e.state_dict()[key].numpy(), value.numpy(), rtol=1e-12,
                                   err_msg=key)
