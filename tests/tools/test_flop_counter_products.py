"""FlopCounterMode counts matrix products and einsum forward and backward as torch's does:
einsum as its pairwise contractions, and each product's backward once per gradient made."""

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode as TorchCounter

import ember
from ember.utils.flop_counter import FlopCounterMode


def _totals(fn, shapes, grads):
    """(forward FLOPs, backward FLOPs) of ``fn(lib, *tensors)`` in ember and in torch."""
    arrays = [np.random.default_rng(i).standard_normal(s).astype(np.float32)
              for i, s in enumerate(shapes)]
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        tensors = [lib.tensor(a, requires_grad=g) for a, g in zip(arrays, grads, strict=True)]
        with counter_cls(display=False) as forward:
            out = fn(lib, *tensors)
        with counter_cls(display=False) as backward:
            out.sum().backward()
        totals.append((forward.get_total_flops(), backward.get_total_flops()))
    return totals


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk->i", [(3, 4), (4, 5)]),
           ("i,j->ij", [(3,), (4,)]), ("ii->i", [(3, 3)]), ("ij,kl->", [(3, 4), (5, 6)]),
           ("bi,bi->b", [(1, 4), (3, 4)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
           ("ab,bc,cd,de->ae", [(2, 3), (3, 4), (4, 5), (5, 6)]),
           ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)])]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
@pytest.mark.parametrize("first_grad", [True, False])
def test_einsum_matches_torch(equation, shapes, first_grad):
    grads = [first_grad or len(shapes) == 1] + [True] * (len(shapes) - 1)
    ours, theirs = _totals(lambda lib, *t: lib.einsum(equation, *t), shapes, grads)
    assert ours == theirs


MATMULS = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
           ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))]


@pytest.mark.parametrize("a,b", MATMULS, ids=str)
@pytest.mark.parametrize("grads", [(True, True), (False, True), (True, False)], ids=str)
def test_matmul_backward_matches_torch(a, b, grads):
    ours, theirs = _totals(lambda lib, x, y: x @ y, [a, b], grads)
    assert ours == theirs


def test_linear_addmm_baddbmm_backward_match_torch():
    F = {ember: ember.nn.functional, torch: torch.nn.functional}

    def fn(lib, x, w, c, b1, b2):
        return (F[lib].linear(x, w).sum() + lib.addmm(c, x, w.t()).sum()
                + lib.baddbmm(lib.zeros(2, 3, 5), b1, b2).sum())
    shapes = [(3, 4), (5, 4), (3, 5), (2, 3, 4), (2, 4, 5)]
    ours, theirs = _totals(fn, shapes, [False, True, True, True, False])
    assert ours == theirs


def _grad_totals(fn):
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        a = lib.ones(3, 4, requires_grad=True)
        b = lib.ones(4, 5, requires_grad=True)
        with counter_cls(display=False) as counter:
            fn(lib, a, b)
        totals.append(counter.get_total_flops())
    return totals


@pytest.mark.parametrize("case", ["matmul", "einsum", "conv", "double backward"])
def test_autograd_grad_counts_only_the_gradients_asked_for(case):
    # torch's mm/convolution backward makes (and counts) only the gradients the pass needs
    def fn(lib, a, b):
        if case == "matmul":
            lib.autograd.grad((a @ b).sum(), [a])
        elif case == "einsum":
            lib.autograd.grad(lib.einsum("ij,jk->ik", a, b).sum(), [b])
        elif case == "conv":
            x = lib.ones(1, 2, 5, 5, requires_grad=True)
            w = lib.ones(3, 2, 3, 3, requires_grad=True)
            lib.autograd.grad(lib.nn.functional.conv2d(x, w).sum(), [w])
        else:
            g, = lib.autograd.grad((a @ b).pow(2).sum(), a, create_graph=True)
            g.sum().backward()
    ours, theirs = _grad_totals(fn)
    assert ours == theirs


RNNS = [("GRU", 1, False, True), ("LSTM", 1, False, True), ("GRU", 2, True, False),
        ("LSTM", 2, True, False), ("RNN", 1, False, True)]


@pytest.mark.parametrize("cls,layers,bidirectional,h0_grad", RNNS, ids=str)
@pytest.mark.parametrize("input_grad", [False, True])
def test_recurrent_layers_match_torch(cls, layers, bidirectional, h0_grad, input_grad):
    # the whole-sequence lstm_scan/gru_scan counted nothing of their h W_hhᵀ products (GRU
    # forward 864 FLOPs against torch's 2160); torch's LSTM is counted only off oneDNN
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        lib.manual_seed(0)
        layer = getattr(lib.nn, cls)(4, 6, num_layers=layers, bidirectional=bidirectional)
        x = lib.ones(3, 2, 4, requires_grad=input_grad)
        h0 = lib.ones(layers * (1 + bidirectional), 2, 6, requires_grad=h0_grad)
        state = (h0, lib.zeros(h0.shape)) if cls == "LSTM" else h0
        with torch.backends.mkldnn.flags(enabled=False):
            with counter_cls(display=False) as forward:
                out = layer(x, state)[0]
            with counter_cls(display=False) as backward:
                out.sum().backward()
        totals.append((forward.get_total_flops(), backward.get_total_flops()))
    assert totals[0] == totals[1]
