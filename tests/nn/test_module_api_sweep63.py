"""The ``nn.Module`` API against torch 2.13 (sweep 63): each scenario runs on Ember and on
torch and must give the same record."""


import torch

import ember


def _both(scenario):
    ours, theirs = scenario(ember), scenario(torch)
    assert ours == theirs
    return ours


def test_load_pre_hooks_see_strict_true_even_when_the_load_is_not_strict():
    # PyTorch runs each module's own load strictly and hands its pre-hooks strict=True; a
    # hook that skips its conversion when not strict must behave the same on both
    def scenario(lib):
        net = lib.nn.Sequential(lib.nn.Linear(2, 3))
        seen = []
        for mod in net.modules():
            mod.register_load_state_dict_pre_hook(
                lambda m, sd, prefix, meta, strict, *_: seen.append((prefix, strict)))
        net.load_state_dict(net.state_dict(), strict=False)
        net.load_state_dict(net.state_dict())
        return seen

    assert _both(scenario) == [("", True), ("0.", True)] * 2


def test_zero_grad_keeps_zeroes_and_detaches_the_same_gradient_tensor():
    # set_to_none=False zeroes the gradient in place: who holds it sees the zeros, and it no
    # longer requires grad (a leaf one) or has history (one from create_graph=True)
    def scenario(lib):
        leaf = lib.nn.Linear(2, 1)
        held = lib.ones(1, 2, requires_grad=True)
        leaf.weight.grad = held
        leaf.zero_grad(set_to_none=False)
        mod = lib.nn.Module()
        mod.p = lib.nn.Parameter(lib.ones(3))
        (mod.p ** 3).sum().backward(create_graph=True)
        graph = mod.p.grad
        mod.zero_grad(set_to_none=False)
        return [(t is g.grad, t.requires_grad, t.grad_fn is None, t.tolist())
                for t, g in ((held, leaf.weight), (graph, mod.p))]

    assert _both(scenario) == [(True, False, True, [[0.0, 0.0]]),
                               (True, False, True, [0.0, 0.0, 0.0])]


def test_dtype_conversions_keep_the_gradient_tensor():
    # Module.double()/float()/to() convert .grad through its .data, as PyTorch: a reference
    # to the gradient (a hook's, a logger's) sees the converted values
    def scenario(lib):
        net = lib.nn.Linear(2, 2)
        net.weight.grad = lib.ones(2, 2)
        held = net.weight.grad
        net.double()
        net.to(lib.float16)
        return net.weight.grad is held, str(held.dtype).split(".")[-1], held.tolist()

    assert _both(scenario) == (True, "float16", [[1.0, 1.0], [1.0, 1.0]])


def test_unexpected_keys_are_listed_in_linear_time_as_torch_lists_them():
    # a checkpoint under another prefix ("module." of DataParallel) has every key unexpected
    # at the root: each was looked up in the list so far (20k keys: 3 s, torch 0.04 s); a
    # module whose _load_from_state_dict runs twice lists them twice, as torch's
    def scenario(lib):
        class Twice(lib.nn.Module):
            def _load_from_state_dict(self, *args):
                super()._load_from_state_dict(*args)
                super()._load_from_state_dict(*args)

        return Twice().load_state_dict({"zz": lib.zeros(1)}, strict=False).unexpected_keys

    assert _both(scenario) == ["zz", "zz"]
    net = ember.nn.Linear(1, 1)  # (20k unexpected keys: linear, no timing asserted)
    state = {f"module.layer{i}.weight": ember.zeros(1) for i in range(20000)}
    assert len(net.load_state_dict(state, strict=False).unexpected_keys) == 20000


def test_zero_grad_in_place_keeps_a_create_graph_linear_gradient_as_torch():
    # Ember's Linear weight gradient under create_graph was a transposed view: zero_grad then
    # replaced it, and a held reference kept its history and stopped following .grad
    def scenario(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 2)
        m(lib.ones(4, 3)).pow(2).sum().backward(create_graph=True)
        held = m.weight.grad
        m.zero_grad(set_to_none=False)
        same, tracked = held is m.weight.grad, held.requires_grad
        m.double()
        m.weight.grad.add_(1)
        return same, tracked, str(held.dtype).split(".")[1], held.tolist()

    assert _both(scenario)
