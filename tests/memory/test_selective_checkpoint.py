"""Selective activation checkpointing and the other torch.utils.checkpoint extras."""

import functools

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp

import ember
from ember.ops.primitive import PRIMITIVES
from ember.utils import checkpoint as cp

MATMUL = PRIMITIVES["matmul"]


@pytest.fixture
def matmul_runs(monkeypatch):
    """How many times the matmul primitive computes."""
    runs = []
    forward = type(MATMUL).forward

    def counted(self, xp, *arrays, **params):
        runs.append(1)
        return forward(self, xp, *arrays, **params)

    monkeypatch.setattr(type(MATMUL), "forward", counted)
    return runs


def block(lib, w1, w2):
    return lambda x: ((x @ w1).sin() @ w2).tanh()


def grads(lib, x, w1, w2, **checkpoint_kwargs):
    x, w1, w2 = (lib.tensor(a, requires_grad=True) for a in (x, w1, w2))
    fn = block(lib, w1, w2)
    if checkpoint_kwargs:
        ckpt = tcp.checkpoint if lib is torch else cp.checkpoint
        out = ckpt(fn, x, use_reentrant=False, **checkpoint_kwargs)
    else:
        out = fn(x)
    (out ** 2).sum().backward()
    return [t.grad.numpy() for t in (x, w1, w2)]


def arrays():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((5, 2))


def test_saved_matmuls_are_not_recomputed(matmul_runs):
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append(ctx.is_recompute)
        return cp.CheckpointPolicy.MUST_SAVE if op is MATMUL else \
            cp.CheckpointPolicy.PREFER_RECOMPUTE

    plain = grads(ember, *arrays())
    assert len(matmul_runs) == 2 + 4  # (and 4 in backward)
    matmul_runs.clear()
    recomputed = grads(ember, *arrays(), context_fn=cp.noop_context_fn)
    assert len(matmul_runs) == 2 + 2 + 4  # forward, recompute, backward
    matmul_runs.clear()
    selective = grads(ember, *arrays(), context_fn=functools.partial(
        cp.create_selective_checkpoint_contexts, policy))
    assert len(matmul_runs) == 2 + 4  # the recompute computed none
    assert seen and not any(seen)  # the policy decides during the forward pass
    t_grads = grads(torch, *arrays())  # (torch's own selective checkpoint gives these too;
    #                                     its dispatch mode takes seconds to load)
    for p, r, s, t in zip(plain, recomputed, selective, t_grads):
        np.testing.assert_array_equal(s, p)
        np.testing.assert_array_equal(r, p)
        np.testing.assert_allclose(s, t, rtol=1e-10)


@pytest.mark.parametrize("ops", [[MATMUL], ["matmul"]])
def test_list_policy_and_bool_policy(matmul_runs, ops):
    for policy in (ops, lambda ctx, op, *a, **k: op.name == "matmul"):
        matmul_runs.clear()
        g = grads(ember, *arrays(), context_fn=functools.partial(
            cp.create_selective_checkpoint_contexts, policy))
        assert len(matmul_runs) == 6
        for a, b in zip(g, grads(ember, *arrays())):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Expected op in `op_list`"):
        cp.create_selective_checkpoint_contexts([3])
    with pytest.raises(TypeError, match="either a function or a list of ops"):
        cp.create_selective_checkpoint_contexts(3)


def test_mutated_cache_entry():
    for allow in (False, True):
        x = ember.randn(2, 3, requires_grad=True)
        w = ember.randn(3, 3, requires_grad=True)
        out = cp.checkpoint(lambda t, w=w: t.sin() @ w, x, context_fn=functools.partial(
            cp.create_selective_checkpoint_contexts, ["matmul"], allow))
        out.add_(1)  # the matmul's kept output, written in place
        if not allow:
            with pytest.raises(RuntimeError, match="modified in place after the forward pass"):
                out.sum().backward()
            continue
        out.sum().backward()
        expected = x.detach().cos() * w.detach().sum(dim=1)
        np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), rtol=1e-6)


def test_checkpoint_arguments_like_torch():
    x = ember.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        cp.checkpoint(lambda t: t.sin(), x, use_reentrant=True, context_fn=lambda: (None, None))
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        cp.checkpoint(lambda t: t.sin(), x, determinism_check="all")
    assert issubclass(cp.CheckpointError, RuntimeError)
    # one class per name: ember.errors.CheckpointError is about checkpoint files
    assert cp.CheckpointError is ember.errors.RecomputeError
    assert cp.CheckpointError.__name__ != ember.errors.CheckpointError.__name__
    assert [p.value for p in cp.CheckpointPolicy] == [p.value for p in tcp.CheckpointPolicy]
    assert [p.name for p in cp.CheckpointPolicy] == [p.name for p in tcp.CheckpointPolicy]


def test_early_stop_and_determinism_check():
    runs = []

    def fn(t):
        a = t.exp()
        runs.append("after exp")
        return a.sum()

    x = ember.randn(3, requires_grad=True)
    cp.checkpoint(fn, x).backward()
    assert runs == ["after exp"]  # the recompute stopped inside exp
    runs.clear()
    x.grad = None
    with cp.set_checkpoint_early_stop(False):
        y = cp.checkpoint(fn, x)
    y.backward()
    assert runs == ["after exp", "after exp"]
    np.testing.assert_allclose(x.grad.numpy(), x.detach().exp().numpy())

    calls = []

    def changing(t):
        calls.append(1)
        return (t if len(calls) == 1 else t[:2]).exp().sum()

    y = cp.checkpoint(changing, x)
    with pytest.raises(cp.CheckpointError, match="shape"):
        y.backward()


def test_detach_variable():
    a = ember.ones(2, requires_grad=True) * 2
    b = ember.ones(2)
    da, db, c = cp.detach_variable((a, b, 3))
    assert da.grad_fn is None and da.requires_grad and not db.requires_grad and c == 3
    with pytest.raises(RuntimeError, match="Only tuple of tensors is supported"):
        cp.detach_variable([a])


@pytest.mark.parametrize("name", ["checkpoint", "selective_checkpoint"])
def test_docstring_examples(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"ember.utils.{name}")
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("entry, match", [("mm", "'mm', which is not the name of a primitive"),
                                          ("matmull", "did you mean 'matmul'"),
                                          (ember.matmul, "of type function; did you mean "
                                                         "'matmul'")])
def test_op_list_entry_that_names_no_primitive_raises(entry, match):
    # (torch refuses anything but an OpOverload; Ember takes a primitive or its name, and a
    # name that is none, which would never match and so save nothing, is refused with a hint)
    with pytest.raises(ValueError, match="Expected op in `op_list`"):
        tcp.create_selective_checkpoint_contexts(["mm"])
    with pytest.raises(ValueError, match=match):
        cp.create_selective_checkpoint_contexts(["matmul", entry])
