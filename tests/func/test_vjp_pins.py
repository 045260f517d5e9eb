"""What ``func.vjp`` pins (mend54c; review54c #1): only its level's nodes, found without
walking the graph behind its primals, and the pin counts stay right when two ``vjp_fn``
sharing nodes are dropped in two threads at once."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import torch

import ember
from ember.autograd import graph


class _Watched(tuple):
    """A node's edges that record being walked."""

    walked = False

    def __iter__(self):
        type(self).walked = True
        return super().__iter__()


def test_vjp_does_not_walk_the_graph_behind_its_primal():
    # (it walked all of it, ~2.5 us a node: 23x slower with 2000 nodes behind the primal)
    w = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    first = w * 1.5
    x = first
    for _ in range(50):
        x = x * 1.01
    first._node.edges = _Watched(first._node.edges)
    _Watched.walked = False
    out, vjp_fn = ember.func.vjp(lambda t: (t * t).sin(), x)
    assert not _Watched.walked
    (g,) = vjp_fn(ember.ones(2, dtype=ember.float64))
    tw = torch.tensor([0.5, -1.0], dtype=torch.float64) * 1.5 * 1.01 ** 50
    np.testing.assert_allclose(g.detach().numpy(), (2 * tw * (tw * tw).cos()).numpy(), rtol=1e-12)
    g.sum().backward()  # (the outer graph is still there, and differentiable)
    assert w.grad is not None


class _SlowPop(dict):
    """``_KEPT`` whose pops give the other thread time to run."""

    def pop(self, *args):
        value = super().pop(*args)
        time.sleep(0.02)
        return value


class _Holder:
    """What pins nodes (a vjp_fn)."""


def test_two_holders_sharing_nodes_dropped_in_two_threads_unpin_them(monkeypatch):
    # (_unpin pops and re-inserts the count: without a lock the other thread's pop found no
    # entry, a KeyError in the finalizer, and the node stayed pinned for good)
    monkeypatch.setattr(graph, "_KEPT", _SlowPop())
    x = ember.ones(2, requires_grad=True)
    nodes = [(x * 2)._node, (x.sin())._node]
    boxes = [[_Holder()], [_Holder()]]
    for box in boxes:
        graph.pin_saved(nodes, box[0])
    assert all(graph._KEPT[n] == 2 for n in nodes)
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    threads = [threading.Thread(target=box.clear) for box in boxes]  # (each drops its holder)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not unraisable
    assert not graph._KEPT
