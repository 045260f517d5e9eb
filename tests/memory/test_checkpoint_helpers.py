"""torch.utils.checkpoint's helpers for checkpoints of one's own (check_backward_validity,
get_device_states/set_device_states, DefaultDeviceType) in ember.utils.checkpoint, against
torch on the CPU (AttributeError before)."""

import warnings

import pytest
import torch
import torch.utils.checkpoint as tc

import ember
import ember.utils.checkpoint as ec


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("grads", [(False, False), (True, False), ()])
def test_check_backward_validity_warns_as_torch(grads):
    def inputs(lib):
        return [lib.ones(2, requires_grad=g) for g in grads] + [3, None]

    assert (_warnings(lambda: ec.check_backward_validity(inputs(ember)))
            == _warnings(lambda: tc.check_backward_validity(inputs(torch))))


def test_device_states_of_cpu_tensors_are_empty_and_restore_nothing():
    args = ([ember.ones(2)], {"k": ember.zeros(1, device="meta")}, 3)
    assert ec.get_device_states(*args) == ([], []) == tc.get_device_states(
        [torch.ones(2)], {"k": torch.zeros(1, device="meta")}, 3)
    state = ember.get_rng_state()
    ec.set_device_states([], [])
    ec.set_device_states([0], [None], device_type="meta")  # (as torch: meta has no states)
    assert ember.equal(ember.get_rng_state(), state)


def test_default_device_type_is_settable_as_torch():
    assert ec.DefaultDeviceType.get_device_type() == "cpu"
    try:
        ec.DefaultDeviceType.set_device_type()
        assert ec.DefaultDeviceType.get_device_type() == "cuda"
    finally:
        ec.DefaultDeviceType.set_device_type("cpu")
