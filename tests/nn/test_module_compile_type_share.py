"""Module.compile (in place, as torch's), Module.type and Module.share_memory."""

import numpy as np
import torch

import ember
from ember import nn


def _pair():
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in net.state_dict().items()})
    return net, ref


def test_compile_in_place_runs_the_graph_and_trains_as_torch():
    net, ref = _pair()
    net.compile()
    ref.compile(backend="eager")
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for _ in range(3):  # the first call traces; the later ones run the graph
        out, tout = net(ember.tensor(x)), ref(torch.tensor(x))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    assert net._compiled_call.graph is not None and len(net._compiled_call.entries) == 1
    out.pow(2).sum().backward()
    tout.pow(2).sum().backward()
    np.testing.assert_allclose(net[0].weight.grad.numpy(), ref[0].weight.grad.numpy(),
                               rtol=1e-4, atol=1e-6)
    assert net.compile(mode="debug") is None  # compiling again replaces the graph


def test_type_casts_every_tensor_and_share_memory_shares_them():
    bn = nn.BatchNorm1d(3)
    assert bn.type(ember.float64).weight.dtype == ember.float64
    assert bn.num_batches_tracked.dtype == ember.float64  # integer buffers too, as torch's
    assert torch.nn.BatchNorm1d(3).type(torch.float64).num_batches_tracked.dtype \
        == torch.float64
    lin = nn.Linear(2, 3).share_memory()
    assert all(t.is_shared() for t in (*lin.parameters(), *lin.buffers()))
    assert isinstance(lin.weight, nn.Parameter)


def test_share_memory_of_a_module_searches_the_heap_once(monkeypatch):
    # each parameter has an alias alive, so each needs a search for the tensors on its memory:
    # one pass over the heap for all (one each took ~10 ms per 150k objects per parameter)
    import gc

    from ember.ops import storage
    net = nn.Sequential(*[nn.Linear(4, 4) for _ in range(30)])
    aliases = [p.detach() for p in net.parameters()]
    net[0].weight.grad = ember.ones(4, 4)
    passes = []

    def counted(fn):
        return lambda *a: passes.append(fn) or fn(*a)
    monkeypatch.setattr(storage.gc, "get_referrers", counted(gc.get_referrers))
    monkeypatch.setattr(storage.gc, "get_objects", counted(gc.get_objects))
    net.share_memory()
    assert len(passes) == 1
    assert all(t.is_shared() for t in (*net.parameters(), *aliases, net[0].weight.grad))
    aliases[0].fill_(3)
    assert net[0].weight.tolist() == [[3.0] * 4] * 4


def test_share_memory_with_a_dead_weak_proxy_on_the_heap():
    # (the heap scan met a weakref.proxy whose object had died: isinstance raised
    # ReferenceError, found by the full suite)
    import weakref

    class Anything:
        pass

    thing = Anything()
    dead = weakref.proxy(thing)
    del thing
    net = nn.Sequential(*[nn.Linear(4, 4) for _ in range(30)])  # (60 tensors: a heap scan)
    aliases = [p.detach() for p in net.parameters()]
    net.share_memory()
    assert all(a.is_shared() for a in aliases) and dead is not None
