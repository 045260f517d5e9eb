"""A gradient a leaf's tensor hook keeps is not changed by later accumulation into .grad (as
PyTorch's AccumulateGrad, which steals a gradient only when nothing else holds it)."""

import torch

import ember


def _kept(lib, post: bool):
    x = lib.ones(2, requires_grad=True)
    saved = []
    if post:
        x.register_post_accumulate_grad_hook(lambda p: saved.append(p.grad))
    else:
        x.register_hook(saved.append)
    y = (x * 3).sum()
    y.backward(retain_graph=True)
    y.backward()
    return [s.tolist() for s in saved], x.grad.tolist(), saved[0] is x.grad


def test_a_kept_gradient_stays_as_it_was_like_torch():
    assert _kept(ember, post=False) == _kept(torch, post=False) == (
        [[3.0, 3.0], [3.0, 3.0]], [6.0, 6.0], False)


def test_post_accumulate_hooks_still_see_grad_itself_like_torch():
    assert _kept(ember, post=True) == _kept(torch, post=True)
