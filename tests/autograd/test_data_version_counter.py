"""``Tensor.data`` has a version counter of its own, as PyTorch's: a write through it is not
seen by autograd's check of saved values (the backward silently uses the new values), while
``detach()`` shares the counter and the backward refuses. Each case against torch."""

import pytest
import torch

import ember
from ember import jit


def _saved_then_written(lib, alias):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * x  # saves x
    d = alias(x)
    before = (x._version, d._version)
    d.add_(1)
    after = (x._version, d._version, d[0:1].mul_(1)._version, d._version)
    try:
        y.sum().backward()
    except RuntimeError:
        return before, after, "raised"
    return before, after, x.grad.tolist()


@pytest.mark.parametrize("alias", [lambda t: t.data, lambda t: t.detach(),
                                   lambda t: t.data.detach(), lambda t: t.detach().data,
                                   lambda t: t[1:].data],
                         ids=["data", "detach", "data-detach", "detach-data", "view-data"])
def test_data_has_its_own_version_counter_as_torch(alias):
    assert _saved_then_written(ember, alias) == _saved_then_written(torch, alias)


def _non_leaf_and_view_cases(lib):
    a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with lib.no_grad():
        a.add_(1)
    b = a * 2
    v = a[1:]
    y = (b * b).sum() + (v * v).sum()
    b.data.add_(1)
    a.data.mul_(2)
    y.backward()
    return a._version, b._version, v._version, a.data._version, a.grad.tolist()


def test_writes_through_data_of_a_leaf_a_non_leaf_and_a_view_base_as_torch():
    assert _non_leaf_and_view_cases(ember) == _non_leaf_and_view_cases(torch)


def _assigned(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    o = lib.tensor([5.0, 6.0])
    o.add_(1)
    x.data = o
    o.add_(1)
    y.sum().backward()
    return x._version, o._version, x.tolist(), x.grad.tolist()


def test_data_assignment_keeps_the_counter_as_torch():
    assert _assigned(ember) == _assigned(torch)


def test_data_of_an_inference_tensor_is_one():
    with ember.inference_mode():
        x = ember.ones(2)
    assert x.data.is_inference() and x.data._version == 0


def test_a_compiled_function_sees_a_write_through_data():
    w = ember.ones(3)
    fast = jit.compile(lambda x: (x * w).sum())
    for k in range(3):
        assert fast(ember.ones(3)).item() == 3.0 * 2 ** k
        w.data.mul_(2)


def test_a_parameter_on_data_keeps_a_compiled_functions_state_cache(monkeypatch):
    # nn.Parameter(t.data) (weight tying): its writes and t's both reach the cache's stamp, so
    # the hoisted p.exp() is computed once, and again only after a write through either
    from ember.jit.codegen import HoistCache

    computed = []
    put = HoistCache.put
    monkeypatch.setattr(HoistCache, "put", lambda self, *a: computed.append(1) or put(self, *a))
    t = ember.arange(16.0).reshape(4, 4) / 16
    p = ember.nn.Parameter(t.data)
    fast = jit.compile(lambda x: x @ p.exp())
    x = ember.ones(1, 4)
    with ember.no_grad():
        for write in (None, None, lambda: t.mul_(2), None, lambda: p.data.add_(1), None):
            if write is not None:
                write()
            assert ember.allclose(fast(x), x @ p.exp())
    assert len(computed) == 3
    assert (t._version, p._version) == (1, 0)  # (as torch: p has t.data's own count)


def test_a_data_alias_given_other_data_leaves_its_sources_cache_alone(monkeypatch):
    # p = Parameter(t.data); p.data = new (loading weights): p is off t's memory, so a compiled
    # function reading t computes its hoisted t.exp() once, not at every call (t not shared)
    from ember.jit.codegen import HoistCache

    computed = []
    put = HoistCache.put
    monkeypatch.setattr(HoistCache, "put", lambda self, *a: computed.append(1) or put(self, *a))
    t = ember.nn.Parameter(ember.arange(16.0).reshape(4, 4) / 16)
    p = ember.nn.Parameter(t.data)
    p.data = ember.zeros(4, 4)
    fast = jit.compile(lambda x: x @ t.exp())
    x = ember.ones(1, 4)
    with ember.no_grad():
        for write in (None, None, None, lambda: t.mul_(2), None, lambda: p.add_(1), None):
            if write is not None:
                write()
            assert ember.allclose(fast(x), x @ t.exp())
    assert len(computed) == 2
    assert not t._vc.shared and p._vc.shared and (t._version, p._version) == (1, 1)
