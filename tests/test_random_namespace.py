"""ember.random: torch.random's names, the same objects as the top-level ones, and fork_rng
restoring the default generator's state (as a context manager and as a decorator)."""

import pytest
import torch

import ember


def test_names_are_the_top_level_objects():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
                 "Generator", "default_generator"):
        assert getattr(ember.random, name) is getattr(ember, name)
        assert hasattr(torch.random, name)


def test_fork_rng_restores_the_stream():
    ember.manual_seed(3)
    expected = ember.rand(4)
    ember.manual_seed(3)
    with ember.random.fork_rng():
        ember.manual_seed(99)
        ember.randn(10)
    assert ember.equal(ember.rand(4), expected)
    assert ember.initial_seed() == 3


def test_fork_rng_restores_after_an_exception_and_as_a_decorator():
    ember.manual_seed(5)
    state = ember.get_rng_state()

    @ember.random.fork_rng(devices=[])
    def draw():
        return ember.rand(3)

    first = draw()
    assert ember.equal(draw(), first)  # the decorator forks afresh on every call
    with pytest.raises(KeyError), ember.random.fork_rng():
        ember.rand(2)
        raise KeyError
    assert ember.equal(ember.get_rng_state(), state)


def test_fork_rng_disabled_and_bad_arguments():
    ember.manual_seed(0)
    with ember.random.fork_rng(enabled=False):
        inside = ember.rand(2)
    ember.manual_seed(0)
    ember.rand(2)
    assert not ember.equal(ember.rand(2), inside)  # the draw inside moved the stream
    with pytest.raises(TypeError), ember.random.fork_rng(devices=3):
        pass
    with pytest.raises(ValueError, match="fork_rng: device_type"), \
            ember.random.fork_rng(device_type="tpu"):
        pass
