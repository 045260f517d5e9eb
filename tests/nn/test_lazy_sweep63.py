"""Lazy modules' ``initialize_parameters``, ``reset_parameters`` and ``reset_running_stats``
against torch 2.13 (sweep layers63)."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.errors import ShapeError

CASES = [("LazyLinear", (3,), (2, 5)), ("LazyConv2d", (4, 3), (1, 2, 5, 5)),
         ("LazyConvTranspose2d", (4, 3), (1, 4, 5, 5)), ("LazyBatchNorm1d", (), (4, 3)),
         ("LazyInstanceNorm2d", (), (2, 3, 4, 4))]


def _summary(lib, name, args, shape):
    m = getattr(lib.nn, name)(*args)
    m.reset_parameters()  # before the shapes are known: a no-op
    out = [type(m).__name__, m.has_uninitialized_params()]
    m.initialize_parameters(lib.ones(*shape))
    out += [type(m).__name__, m.has_uninitialized_params(), repr(m),
            {k: tuple(v.shape) for k, v in m.state_dict().items()}]
    weight = m.weight
    m.initialize_parameters(lib.ones(*shape))  # a no-op now
    with lib.no_grad():
        m.weight.fill_(0.5)
    m.reset_parameters()
    out.append(bool((m.weight != 0.5).any()) or name.startswith("LazyBatch")
               or name.startswith("LazyInstance"))
    y = m(lib.ones(*shape))
    out += [m.weight is weight, type(m).__name__, tuple(y.shape), repr(m)]
    return out


@pytest.mark.parametrize("name,args,shape", CASES, ids=[c[0] for c in CASES])
def test_initialize_parameters_then_forward_as_torch(name, args, shape):
    assert _summary(ember, name, args, shape) == _summary(torch, name, args, shape)


def test_norm_reset_parameters_resets_the_statistics():
    m = nn.LazyBatchNorm1d()
    m.initialize_parameters(ember.ones(4, 3))
    m.running_mean.fill_(2.0)
    m.num_batches_tracked.fill_(5)
    m.reset_parameters()
    assert m.running_mean.tolist() == [0.0] * 3 and int(m.num_batches_tracked) == 0


def test_reset_parameters_after_loading_keeps_the_loaded_values_as_torch():
    src = torch.nn.Linear(4, 3)
    t, e = torch.nn.LazyLinear(3), nn.LazyLinear(3)
    t.load_state_dict(src.state_dict())
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in src.state_dict().items()})
    t.reset_parameters()
    e.reset_parameters()
    np.testing.assert_array_equal(e.weight.detach().numpy(), t.weight.detach().numpy())


def test_forward_after_initialize_parameters_with_another_size_is_an_error():
    m = nn.LazyLinear(3)
    m.initialize_parameters(ember.ones(2, 5))
    with pytest.raises(ShapeError, match=r"has shape \(3, 5\), but the input \(2, 4\)"):
        m(ember.ones(2, 4))


def test_lazy_modules_are_instances_of_their_layers_as_torch():
    # code that picks layers by class before the first call (e.g. batch norms out of weight
    # decay) saw Ember's lazy modules as none of them
    checks = [("LazyLinear", (3,), "Linear"), ("LazyConv2d", (3, 2), "Conv2d"),
              ("LazyConv1d", (3, 2), "modules.conv._ConvNd"),
              ("LazyConvTranspose3d", (3, 2), "ConvTranspose3d"),
              ("LazyBatchNorm2d", (), "modules.batchnorm._BatchNorm"),
              ("LazyBatchNorm2d", (), "BatchNorm2d"),
              ("LazyInstanceNorm1d", (), "modules.instancenorm._InstanceNorm"),
              ("LazyInstanceNorm1d", (), "InstanceNorm1d"),
              ("LazyBatchNorm3d", (), "modules.batchnorm._NormBase")]

    def isinstances(lib):
        out = []
        for name, args, cls in checks:
            base = lib.nn
            for part in cls.split("."):
                base = getattr(base, part)
            out.append(isinstance(getattr(lib.nn, name)(*args), base))
        return out

    assert isinstances(ember) == isinstances(torch)
    m = nn.LazyBatchNorm2d()
    assert m.state_dict()._metadata[""]["version"] == 2  # (_NormBase's, as torch's)
