"""Every batching rule against a Python loop over the batch, on the op tables' samples.

For each row of each family's ``CASES`` (tests/ops), the floating inputs get a batch of
independent samples; ``vmap(op)`` must equal stacking ``op`` applied sample by sample, with
all floating inputs batched, with only the first one batched (the rest shared), and along a
last-axis in_dim. Per-sample gradients (``vmap`` of ``autograd.grad``) batch the vjp rules.
"""

from __future__ import annotations

import importlib
import zlib

import numpy as np
import pytest
import torch

import ember
from ember.errors import OpError
from ember.func.vmap import vmap
from tests.ops.optable import Arg

FAMILIES = ["activations", "arithmetic", "attention", "compare", "conv", "embedding",
            "indexing", "interpolate", "linalg", "linalg_decomp", "loss", "margin_loss",
            "normalization", "pool", "reduce", "rnn_gates", "select", "shape", "softmax", "sort",
            "unary"]
B = 3
# output size depends on each sample's data: vmap refuses, as torch.func.vmap does
# (x[mask] = number is where(mask, number, x) under a transform: not data-dependent)
DATA_DEPENDENT = {"get_mask", "nonzero", "argwhere", "nonzero_tuple"}


def _rows() -> list:
    rows = []
    for fam in FAMILIES:
        for case in importlib.import_module(f"tests.ops.test_{fam}").CASES:
            for k, sample in enumerate(case.samples):
                rows.append(pytest.param(case, sample, id=f"{fam}.{case.name}[{k}]"))
    return rows


ROWS = _rows()


def _inputs(case, sample, batch: int) -> tuple[list, list]:
    """Per argument: a batch of ``batch`` arrays (floating Args) or the constant."""
    rng = np.random.default_rng(zlib.crc32(f"vmap{case.name}{sample!r}".encode()))
    stacks, shared = [], []
    for a in sample.args:
        if isinstance(a, Arg):
            stacks.append([a.make(rng) for _ in range(batch)])
            shared.append(True)
        else:
            stacks.append(a.make(rng))
            shared.append(False)
    return stacks, shared


def _ember(v):
    if isinstance(v, np.ndarray):
        return ember.from_numpy(np.array(v))
    return v


def _call(case, sample, args):
    kwargs = case.ember_kwargs(sample.kwargs) if case.ember_kwargs else sample.kwargs
    return case.ember_fn(*args, **kwargs)


def _outs(x) -> list:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _compare(case, got, want_per_sample, out_dim=0):
    got = _outs(got)
    per = [_outs(w) for w in want_per_sample]
    assert len(got) == len(per[0]), f"{case.name}: {len(got)} outputs vs {len(per[0])}"
    for i, g in enumerate(got):
        if not isinstance(g, ember.Tensor):
            continue
        want = np.stack([np.asarray(p[i].detach()._data) for p in per], axis=out_dim)
        have = np.asarray(g.detach()._data)
        assert have.shape == want.shape, f"{case.name}: output {i} {have.shape} vs {want.shape}"
        assert have.dtype == want.dtype, f"{case.name}: output {i} {have.dtype} vs {want.dtype}"
        np.testing.assert_allclose(have, want, rtol=1e-6, atol=1e-9,
                                   err_msg=f"{case.name} output {i}")


def _loop(case, sample, stacks, batched_mask):
    return [_call(case, sample, [_ember(s[b]) if m else _ember(s if not isinstance(s, list)
                                                                   else s[0])
                                 for s, m in zip(stacks, batched_mask)])
            for b in range(B)]


@pytest.mark.parametrize("case,sample", ROWS)
def test_forward_all_batched(case, sample):
    stacks, shared = _inputs(case, sample, B)
    if not any(shared):
        pytest.skip("no floating input to batch")
    args = [_ember(np.stack(s)) if m else _ember(s) for s, m in zip(stacks, shared)]
    dims = tuple(0 if m else None for m in shared)
    if case.name in DATA_DEPENDENT:
        with pytest.raises(OpError, match="vmap: nonzero"):
            vmap(lambda *xs: _call(case, sample, xs), in_dims=dims)(*args)
        return
    got = vmap(lambda *xs: _call(case, sample, xs), in_dims=dims)(*args)
    _compare(case, got, _loop(case, sample, stacks, shared))


@pytest.mark.parametrize("case,sample", ROWS)
def test_forward_first_batched_last_axis(case, sample):
    """Only the first floating input is batched (along its last axis); the others shared."""
    stacks, shared = _inputs(case, sample, B)
    if not any(shared):
        pytest.skip("no floating input to batch")
    first = shared.index(True)
    mask = [i == first for i in range(len(shared))]
    args = [_ember(np.stack(s, axis=-1)) if m else _ember(s[0] if isinstance(s, list) else s)
            for s, m in zip(stacks, mask)]
    dims = tuple(-1 if m else None for m in mask)
    if case.name in DATA_DEPENDENT:
        with pytest.raises(OpError, match="vmap: nonzero"):
            vmap(lambda *xs: _call(case, sample, xs), in_dims=dims, out_dims=-1)(*args)
        return
    got = vmap(lambda *xs: _call(case, sample, xs), in_dims=dims, out_dims=-1)(*args)
    want = _loop(case, sample, stacks, mask)
    got_outs = [g for g in _outs(got)]
    want_outs = [[_outs(w)[i] for w in want] for i in range(len(got_outs))]
    for i, g in enumerate(got_outs):
        if isinstance(g, ember.Tensor):
            ref = np.stack([np.asarray(w.detach()._data) for w in want_outs[i]], axis=-1)
            np.testing.assert_allclose(np.asarray(g._data), ref, rtol=1e-6, atol=1e-9,
                                       err_msg=f"{case.name} output {i}")


GRAD_ROWS = [r for r in ROWS if r.values[0].grad]


@pytest.mark.parametrize("case,sample", GRAD_ROWS)
def test_per_sample_gradients(case, sample):
    """``vmap`` of a function computing ``autograd.grad``: the vjp rules, batched."""
    stacks, shared = _inputs(case, sample, B)
    wants = [isinstance(a, Arg) and a.grad for a in sample.args]
    if not any(wants):
        pytest.skip("no differentiable input")

    def grads(*xs):
        xs = [x.detach().requires_grad_() if w else x for x, w in zip(xs, wants)]
        outs = [o for o in _outs(_call(case, sample, xs))
                if isinstance(o, ember.Tensor) and o.requires_grad]
        total = sum((o * ember.cos(o.detach() + 0.5)).sum() for o in outs)
        got = ember.autograd.grad(total, [x for x, w in zip(xs, wants) if w],
                                  allow_unused=True)
        return tuple(ember.zeros_like(x) if g is None else g
                     for g, x in zip(got, [x for x, w in zip(xs, wants) if w]))

    args = [_ember(np.stack(s)) if m else _ember(s) for s, m in zip(stacks, shared)]
    dims = tuple(0 if m else None for m in shared)
    if case.name in DATA_DEPENDENT:
        return
    got = vmap(grads, in_dims=dims)(*args)
    want = [grads(*[_ember(s[b]) if m else _ember(s) for s, m in zip(stacks, shared)])
            for b in range(B)]
    _compare(case, got, want)


@pytest.mark.parametrize("concatenated", [False, True])
def test_vmap_of_ctc_loss_and_its_gradient_matches_a_loop(concatenated):
    import ember.nn.functional as F
    from ember.func import grad
    rng = np.random.default_rng(0)
    lp = ember.tensor(rng.standard_normal((3, 6, 2, 5)))
    padded = rng.integers(1, 5, (3, 2, 3))
    targets = ember.tensor(np.stack([np.concatenate([t[0], t[1, :2]]) for t in padded])
                           if concatenated else padded)

    def loss(x, t):
        return F.ctc_loss(x.log_softmax(2), t, (6, 5), (3, 2), reduction="sum")

    for fn in (loss, grad(loss)):
        got = vmap(fn)(lp, targets)
        want = ember.stack([fn(lp[i], targets[i]) for i in range(3)])
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_multi_margin_loss_with_a_per_sample_class_weight_is_batched_correctly():
    # (docs/transforms.md listed this as a wrong answer under vmap; it agrees with a loop now)
    r = np.random.default_rng(0)
    x, t, w = r.standard_normal((3, 4, 5)), r.integers(0, 5, (3, 4)), r.random((3, 5))
    want = [torch.nn.functional.multi_margin_loss(torch.tensor(x[i]), torch.tensor(t[i]), p=2,
                                                  weight=torch.tensor(w[i])).item()
            for i in range(3)]
    got = vmap(lambda a, b, c: ember.nn.functional.multi_margin_loss(a, b, p=2, weight=c))(
        ember.tensor(x), ember.tensor(t), ember.tensor(w))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
