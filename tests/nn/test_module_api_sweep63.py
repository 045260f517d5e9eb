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
