"""State-dict hooks as PyTorch's: the order pre-hooks, post-hooks and load hooks run in over
nested modules, and the private ``_register_state_dict_hook``, whose hook may return a new
state dict (respected at the root only); each scenario runs on Ember and on torch."""

import weakref

import pytest
import torch

import ember
from ember import nn
from tests.gc_off import gc_off


def _both(scenario):
    ours, theirs = scenario(ember), scenario(torch)
    assert ours == theirs
    return ours


def test_state_dict_and_load_hooks_run_in_pytorchs_order():
    def scenario(lib):
        net = lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.Sequential(lib.nn.Linear(1, 1)))
        log = []
        for name, mod in net.named_modules():
            mod.register_state_dict_pre_hook(
                lambda m, prefix, keep, name=name: log.append(("pre", name, prefix, keep)))
            mod.register_state_dict_post_hook(
                lambda m, sd, prefix, meta, name=name: log.append(("post", name, len(sd))))
            mod.register_load_state_dict_pre_hook(
                lambda m, sd, prefix, *a, name=name: log.append(("load_pre", name, prefix)))
            mod.register_load_state_dict_post_hook(
                lambda m, keys, name=name: log.append(("load_post", name)))
        net.load_state_dict(net.state_dict(keep_vars=True))
        return log

    _both(scenario)


def test_a_private_state_dict_hook_may_return_a_new_state_dict_at_the_root():
    def scenario(lib):
        net = lib.nn.Sequential(lib.nn.Linear(1, 1))
        net._register_state_dict_hook(lambda m, sd, prefix, meta: {"root": 1})
        net[0]._register_state_dict_hook(lambda m, sd, prefix, meta: {"child": 2})  # ignored
        return dict(net.state_dict()), sorted(net[0].state_dict())

    assert _both(scenario) == ({"root": 1}, ["child"])


def test_a_public_state_dict_post_hook_may_not_return_nor_be_registered_privately():
    def scenario(lib):
        fc, errors = lib.nn.Linear(1, 1), []

        def hook(m, sd, prefix, meta):
            return {}

        fc.register_state_dict_post_hook(hook)
        for action in (fc.state_dict, lambda: fc._register_state_dict_hook(hook)):
            with pytest.raises(RuntimeError) as info:
                action()
            errors.append("must return None" in str(info.value) or str(info.value))
        return errors

    assert _both(scenario)[0] is True


def test_load_state_dict_frees_the_state_dict_without_the_gc():
    # its recursive loader referred to itself: a loaded checkpoint stayed until the gc ran
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    with gc_off():
        state = {k: v.clone() for k, v in net.state_dict().items()}
        ref = weakref.ref(state["0.weight"])
        net.load_state_dict(state)
        del state
        assert ref() is None


def test_load_state_dict_assign_keeps_the_checkpoints_tensors_as_torch():
    """assign=True: a buffer is the state dict's tensor itself, and so is a Parameter (with
    the module's requires_grad), as torch.nn.Module.load_state_dict(assign=True)."""
    for lib in (torch, ember):
        m = lib.nn.BatchNorm1d(2)
        m.weight.requires_grad_(False)
        mean, weight = lib.ones(2), lib.nn.Parameter(lib.full((2,), 3.0))
        sd = {"weight": weight, "bias": lib.zeros(2), "running_mean": mean,
              "running_var": lib.ones(2), "num_batches_tracked": lib.tensor(4)}
        m.load_state_dict(sd, assign=True)
        assert m.running_mean is mean and m.weight is weight, lib.__name__
        assert not m.weight.requires_grad and m.bias.requires_grad
        assert isinstance(m.bias, lib.nn.Parameter) and m.num_batches_tracked.item() == 4


def test_load_state_dict_pre_hook_of_a_child_sees_its_own_keys_as_torch():
    """A child's load pre-hook gets the entries under its prefix only (torch hands each child
    a filtered dict), so a hook that renames by pattern leaves its siblings' keys alone."""
    def scenario(lib):
        m = lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.Linear(1, 1))
        seen = []

        def rename(module, sd, prefix, *rest):
            seen.append(sorted(sd))
            for key in [k for k in sd if k.endswith(".w")]:
                sd[key[:-2] + ".weight"] = sd.pop(key)
        m[0].register_load_state_dict_pre_hook(rename)
        sd = {"0.w": lib.ones(1, 1), "0.bias": lib.zeros(1), "1.w": lib.ones(1, 1),
              "1.bias": lib.zeros(1)}
        keys = m.load_state_dict(sd, strict=False)
        return seen, sorted(keys.missing_keys), sorted(keys.unexpected_keys)
    assert _both(scenario) == ([["0.bias", "0.w"]], ["1.weight"], ["1.w"])


def test_load_state_dict_assign_sets_attributes_as_torch():
    """assign=True sets each entry as an attribute (torch's setattr), so the global parameter
    and buffer registration hooks fire and a Parameter given for a buffer key becomes a
    parameter; Ember wrote the stores directly (no hooks, a Parameter among the buffers)."""
    def scenario(lib):
        registry = torch.nn.modules.module if lib is torch else lib.nn
        m = lib.nn.BatchNorm1d(2)
        seen = []
        hooks = [registry.register_module_parameter_registration_hook(
                     lambda mod, name, value: seen.append(("parameter", name))),
                 registry.register_module_buffer_registration_hook(
                     lambda mod, name, value: seen.append(("buffer", name)))]
        sd = {k: v.clone() for k, v in m.state_dict().items()}
        sd["running_var"] = lib.nn.Parameter(sd["running_var"])
        try:
            m.load_state_dict(sd, assign=True)
        finally:
            for hook in hooks:
                hook.remove()
        return (seen, [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()],
                m.running_var is sd["running_var"])
    assert _both(scenario) == (
        [("parameter", "weight"), ("parameter", "bias"), ("buffer", "running_mean"),
         ("parameter", "running_var"), ("buffer", "num_batches_tracked")],
        ["weight", "bias", "running_var"], ["running_mean", "num_batches_tracked"], True)
