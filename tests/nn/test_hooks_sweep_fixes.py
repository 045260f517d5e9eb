"""What the differential sweep of module hooks against torch found, each scenario run on
Ember and on torch."""

import collections

import torch

import ember

Pair = collections.namedtuple("Pair", "a b")


def _plain(value):
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return value.detach().tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def test_a_namedtuple_output_stays_one_under_backward_hooks():
    def scenario(lib):
        class Split(lib.nn.Module):
            def forward(self, x):
                return Pair(x * 2, x * 3)

        m, log = Split(), []
        m.register_full_backward_hook(lambda mod, gi, go: log.append((gi, go)))
        m.register_full_backward_pre_hook(lambda mod, go: log.append(go))
        x = lib.ones(2, requires_grad=True)
        out = m(x)
        (out.a + 2 * out.b).sum().backward()
        return type(out).__name__, _plain(log), _plain(x.grad)

    ours, theirs = scenario(ember), scenario(torch)
    assert ours == theirs and ours[0] == "Pair"
