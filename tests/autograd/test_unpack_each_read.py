"""Saved-tensor hooks: the unpack hook runs at each read of a saved value (each backward
under ``retain_graph``, each ``ctx.saved_tensors``, each ``grad_fn._saved_*``), as PyTorch's,
and what it gave back is not held by the graph between reads."""

import gc
import weakref

import pytest
import torch

import ember
from tests.concurrent_grads import grads_agree_in_threads


def _calls(lib, run):
    """The pack/unpack calls ``run(lib)`` makes with counting hooks open around its forward."""
    calls = []

    def pack(t):
        calls.append("p")
        return t

    def unpack(t):
        calls.append("u")
        return t

    run(lib, lambda: lib.autograd.graph.saved_tensors_hooks(pack, unpack), calls)
    return calls


def _two_backwards(lib, hooks, calls):
    x = lib.ones(3, requires_grad=True)
    with hooks():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    calls.append("|")
    y.backward()


def _function_reads(lib, hooks, calls):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * x
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, _ = ctx.saved_tensors
            ctx.saved_tensors  # noqa: B018 (a second read unpacks again)
            return 2 * x * g

    x = lib.ones(3, requires_grad=True)
    with hooks():
        y = Square.apply(x).sum()
    y.backward(retain_graph=True)
    calls.append("|")
    y.backward()
    calls.append(x.grad.tolist())


def _saved_attribute_reads(lib, hooks, calls):
    x = lib.ones(3, requires_grad=True)
    with hooks():
        z = x.exp()
    calls.append("|")
    z.grad_fn._saved_result  # noqa: B018
    z.grad_fn._saved_result  # noqa: B018


@pytest.mark.parametrize("run", [_two_backwards, _function_reads, _saved_attribute_reads])
def test_unpack_hook_runs_at_each_read_as_torch(run):
    assert _calls(ember, run) == _calls(torch, run)


def test_unpacked_values_are_not_held_between_backwards():
    made = []

    def unpack(t):
        fresh = t.clone()  # (a new tensor each read, as save_on_cpu's copy back)
        made.append(weakref.ref(fresh._data))  # (its memory: the graph keeps the array)
        return fresh

    x = ember.ones(3, requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        y = (x * x).sum()
    y.backward(retain_graph=True)
    gc.collect()
    assert made and all(r() is None for r in made)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]


def test_backwards_in_threads_over_one_packed_graph():
    # (between one thread filling a node's slots and reading them, another thread's backward
    # empties them)
    ember.manual_seed(0)
    w = [ember.randn(16, 16, requires_grad=True) for _ in range(6)]
    h = ember.randn(8, 16)
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t.clone()):
        for wi in w:
            h = (h @ wi).tanh()
        y = h.square().sum()
    grads_agree_in_threads(y, w)
