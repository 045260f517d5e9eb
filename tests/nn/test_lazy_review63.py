"""Review fixes of the lazy modules against torch 2.13: ``replace_all_batch_norm_modules_``
before the first call, attributes set before it, ``initialize_parameters`` then a call (one
random init), ``reset_running_stats`` before the shapes are known."""

import numpy as np
import pytest
import torch

import ember

X = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def test_replace_all_batch_norm_modules_on_a_lazy_batch_norm_as_torch():
    def run(lib):
        m = lib.nn.Sequential(lib.nn.LazyBatchNorm1d())
        lib.func.replace_all_batch_norm_modules_(m)
        y = m(lib.tensor(X))
        bn = m[0]
        return (y.detach().numpy(), bn.running_mean, bn.running_var, bn.num_batches_tracked,
                bn.track_running_stats, type(bn).__name__, bn.has_uninitialized_params()
                if hasattr(bn, "has_uninitialized_params") else False, sorted(m.state_dict()))

    e, t = run(ember), run(torch)
    np.testing.assert_allclose(e[0], t[0], rtol=1e-6, atol=1e-6)
    assert e[1:] == t[1:]


def test_attributes_set_before_the_first_call_stay_as_torch():
    def run(lib):
        m = lib.nn.LazyBatchNorm1d()
        m.momentum, m.eps = None, 0.5
        m.register_buffer("extra", lib.ones(2))
        x = lib.tensor(X)
        m(x)
        m(2 * x)
        return (m.momentum, m.eps, m.num_features, m.running_mean.numpy(),
                m.running_var.numpy(), int(m.num_batches_tracked), list(m.state_dict()))

    e, t = run(ember), run(torch)
    assert e[:3] == t[:3] == (None, 0.5, 3) and e[5:] == t[5:]
    np.testing.assert_allclose(e[3], t[3], rtol=1e-6)  # a cumulative average
    np.testing.assert_allclose(e[4], t[4], rtol=1e-6)


@pytest.mark.parametrize("name,args,shape", [("LazyLinear", (3,), (2, 5)),
                                             ("LazyConv2d", (4, 3), (1, 2, 5, 5))])
def test_initialize_parameters_then_a_call_initializes_once_as_torch(name, args, shape):
    # the call after initialize_parameters drew a second, discarded init from the RNG
    def run(lib, first):
        lib.manual_seed(0)
        m = getattr(lib.nn, name)(*args)
        if first:
            m.initialize_parameters(lib.ones(*shape))
        m(lib.ones(*shape))
        return m.weight.detach().numpy().copy(), lib.rand(4).numpy()

    for lib in (ember, torch):
        (w1, r1), (w2, r2) = run(lib, True), run(lib, False)
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_array_equal(r1, r2)


@pytest.mark.parametrize("kwargs", [{}, {"affine": False}, {"track_running_stats": False}])
@pytest.mark.parametrize("name", ["LazyBatchNorm2d", "LazyInstanceNorm1d"])
def test_reset_running_stats_before_the_first_call_as_torch(name, kwargs):
    def outcome(lib):
        m = getattr(lib.nn, name)(**kwargs)
        try:
            m.reset_running_stats()
        except ValueError as err:
            return "ValueError", "uninitialized" in str(err)
        m.reset_parameters()  # a no-op before the shapes are known, in both
        return "ok", m.has_uninitialized_params()

    assert outcome(ember) == outcome(torch)


def test_building_a_lazy_layer_draws_no_random_numbers_as_torch():
    # its probe layer's init drew from the generator: LazyLinear(4)'s weights after a seed
    # were not Linear(5, 4)'s, as they are in torch
    for lib in (torch, ember):
        lib.manual_seed(1)
        lazy = lib.nn.LazyLinear(4)(lib.ones(2, 5)).detach().numpy()
        lib.manual_seed(1)
        plain = lib.nn.Linear(5, 4)(lib.ones(2, 5)).detach().numpy()
        np.testing.assert_array_equal(lazy, plain)
