"""``Tracer.to_bool``, ``Tracer.iter`` and ``Tracer.keys``: the hooks torch.fx's proxies call
for ``bool(proxy)``, ``iter(proxy)`` and ``proxy.keys()``, so a Tracer subclass can trace one
branch or iterate a known length (Ember's proxies raised without asking the tracer)."""

import pytest
import torch
import torch.fx

import ember


def _traced(lib, fx):
    class OneBranch(fx.Tracer):
        def to_bool(self, obj):
            return True

        def iter(self, obj):
            return iter([obj[0], obj[1]])

    class Branchy(lib.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                x = x * 2
            return sum(row for row in x)

    return fx.GraphModule(Branchy(), OneBranch().trace(Branchy()))


def test_a_tracer_subclass_decides_bool_and_iter_as_torch_fx():
    x = [[1.0, -2.0, 0.5], [-3.0, 0.25, 1.0]]
    ours = _traced(ember, ember.fx)(ember.tensor(x)).tolist()
    assert ours == _traced(torch, torch.fx)(torch.tensor(x)).tolist() == [-4.0, -3.5, 3.0]


def test_the_default_hooks_refuse_as_before():
    with pytest.raises(ember.fx.TraceError, match="control flow"):
        ember.fx.Tracer().to_bool(_proxy())
    with pytest.raises(ember.fx.TraceError, match="cannot be iterated"):
        ember.fx.symbolic_trace(lambda x: list(x))
    assert "keys = x.keys()" in ember.fx.symbolic_trace(lambda x: x.keys()).code


def _proxy():
    tracer = ember.fx.Tracer()
    return ember.fx.Proxy(tracer.graph.placeholder("x"), tracer)
