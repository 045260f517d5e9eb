"""The legacy ``Module.register_backward_hook`` (and ``register_module_backward_hook``): hooks
on the autograd node of the module's output, PyTorch's FutureWarnings when that node's
gradients are not the module's, and the rule that a module (or the global registry) takes
legacy or full backward hooks, not both; each scenario runs on Ember and on torch."""

import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = (ember, torch)


def _plain(value):
    """Tensors as rounded lists, through tuples and lists (to compare Ember with torch; to 4
    places: NumPy's float32 exp, within ~2.4 ulp, and torch's, 0.5, differ in the last bits)."""
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return np.round(np.asarray(value.detach().double().numpy()), 4).tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _both(scenario):
    """The scenario's result on Ember and on torch, with the warnings each raised (equal; a
    warning by its category and first words: PyTorch words its ends unevenly)."""
    results = []
    for lib in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = _plain(scenario(lib))
        results.append((result, [(w.category, " ".join(str(w.message).split()[:12]))
                                 for w in caught]))
    assert results[0] == results[1]
    return results[0]


def _x(lib, *shape):
    return (lib.arange(float(np.prod(shape))).reshape(*shape) / 3 - 1).requires_grad_()


class _Mul:
    """A module of two inputs made of one op (so the node's gradients are the module's)."""

    @staticmethod
    def make(lib):
        class Mul(lib.nn.Module):
            def forward(self, a, b):
                return a * b
        return Mul()


@pytest.mark.parametrize("layer", ["Sigmoid", "Tanh", "ReLU", "GELU", "ELU", "Softplus"])
def test_legacy_hook_on_a_one_op_module_sees_its_gradients_and_may_replace_them(layer):
    def scenario(lib):
        m, log = getattr(lib.nn, layer)(), []

        def hook(mod, grad_input, grad_output):
            log.append((type(mod).__name__, grad_input, grad_output))
            return (grad_input[0] * 3,)

        m.register_backward_hook(hook)
        x = _x(lib, 2, 3)
        (m(x) ** 2).sum().backward()
        return log, x.grad

    (log, _), caught = _both(scenario)
    assert log[0][0] == layer
    # (the leaf input is not the node's input's grad_fn: PyTorch's check always warns here)
    assert [c for c, _ in caught] == [FutureWarning]
    assert "multiple autograd Nodes" in caught[0][1]


def test_legacy_hook_of_two_inputs_and_a_non_tensor_argument():
    def scenario(lib):
        m, log = _Mul.make(lib), []
        m.register_backward_hook(lambda mod, gi, go: log.append((gi, go)) or (gi[0] * 0, None))
        a, b = _x(lib, 3), _x(lib, 3)
        m(a, b).sum().backward()
        c = _x(lib, 3)
        m(c, 2.0).sum().backward()  # (warns: an input is not a tensor)
        return log, a.grad, b.grad, c.grad

    (log, *_), caught = _both(scenario)
    assert len(log) == 2 and len(caught) == 2
    assert "does not take as" in caught[1][1]


@pytest.mark.parametrize("output", ["dict", "two_nodes"])
def test_legacy_hook_warns_when_it_misses_output_gradients(output):
    def scenario(lib):
        class M(lib.nn.Module):
            def forward(self, x):
                return {"y": x * 2} if output == "dict" else (x * 2, x + 1)

        m, log = M(), []
        m.register_backward_hook(lambda mod, gi, go: log.append((gi, go)))
        x = _x(lib, 3)
        out = m(x)
        (out["y"] if output == "dict" else out[0] + 3 * out[1]).sum().backward()
        return log, x.grad

    _, caught = _both(scenario)
    assert [c for c, _ in caught] == [FutureWarning]


def test_legacy_and_full_hooks_do_not_mix_on_a_module():
    def scenario(lib):
        errors = []
        legacy, full = lib.nn.Tanh(), lib.nn.Tanh()
        legacy.register_backward_hook(lambda *a: None)
        full.register_full_backward_hook(lambda *a: None)
        for register in (legacy.register_full_backward_hook, full.register_backward_hook):
            with pytest.raises(RuntimeError) as info:
                register(lambda *a: None)
            errors.append(str(info.value))
        full.register_full_backward_pre_hook(lambda *a: None)  # (pre-hooks go with either)
        legacy.register_full_backward_pre_hook(lambda *a: None)
        return errors

    errors, _ = _both(scenario)
    assert "Cannot use both regular backward hooks and full backward hooks" in errors[0]


def test_once_its_hooks_are_removed_a_module_takes_the_other_kind():
    # (deliberately unlike PyTorch, whose flag stays: after one legacy global hook, no full
    # global hook could be registered again in the process)
    m = ember.nn.Tanh()
    m.register_backward_hook(lambda *a: None).remove()
    m.register_full_backward_hook(lambda *a: None)
    ember.nn.modules.module.register_module_backward_hook(lambda *a: None).remove()
    ember.nn.modules.module.register_module_full_backward_hook(lambda *a: None).remove()


def test_a_removed_legacy_hook_no_longer_runs_and_hooks_run_in_order():
    def scenario(lib):
        m, log = lib.nn.Tanh(), []
        h1 = m.register_backward_hook(lambda mod, gi, go: log.append(1))
        m.register_backward_hook(lambda mod, gi, go: log.append(2))
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", go)))
        m.register_forward_hook(lambda mod, args, out: out * 2)
        x = _x(lib, 3)
        m(x).sum().backward()
        h1.remove()
        m(x).sum().backward()
        with lib.no_grad():
            m(x)
        return log, x.grad

    _both(scenario)


def test_global_legacy_hook_runs_for_every_module_and_excludes_global_full_hooks():
    def scenario(lib):
        mm, log = lib.nn.modules.module, []
        if lib is torch:  # (PyTorch's flag outlives the hooks: other tests' full ones set it)
            mm._global_is_full_backward_hook = None
        h = mm.register_module_backward_hook(lambda mod, gi, go: log.append(type(mod).__name__))
        try:
            with pytest.raises(RuntimeError, match="as a global Module hook"):
                mm.register_module_full_backward_hook(lambda *a: None)
            net = lib.nn.Sequential(lib.nn.Sigmoid(), lib.nn.Tanh())
            net(_x(lib, 3)).sum().backward()
        finally:
            h.remove()
            if lib is torch:
                mm._global_is_full_backward_hook = None
        net(_x(lib, 3)).sum().backward()
        return log

    log, _ = _both(scenario)
    assert log == ["Tanh", "Sequential", "Sigmoid"]


def test_full_backward_hook_warnings_as_pytorchs():
    def scenario(lib):
        log = []
        fc = lib.nn.Linear(2, 1)
        fc.register_full_backward_hook(lambda mod, gi, go: log.append(gi))
        fc(lib.ones(1, 2)).sum().backward()  # no input needs grad: the hook fires on outputs

        class Dict(lib.nn.Module):
            def forward(self, x):
                return {"y": x * 2}

        d = Dict()
        d.register_full_backward_hook(lambda mod, gi, go: log.append(gi))
        d(_x(lib, 2))["y"].sum().backward()  # a dict output: the hook never runs
        return log

    log, caught = _both(scenario)
    assert log == [[None]] and [c for c, _ in caught] == [UserWarning, UserWarning]
