"""A gradient a tensor hook keeps is not changed by later accumulation into .grad (as
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


def test_a_gradient_no_hook_keeps_is_stored_without_a_copy():
    x, arrays = ember.ones(3, requires_grad=True), []

    def doubled(g):
        r = g * 2
        arrays.append(r._data)  # (the memory, not the tensor: the engine's is the only one)
        return r
    x.register_hook(doubled)
    (x * 1).sum().backward()
    assert x.grad._data is arrays[0] or x.grad._data.base is arrays[0]


def _retained(lib):
    w = lib.ones(3, requires_grad=True)
    x = w * 1
    x.retain_grad()
    kept = []
    x.register_hook(kept.append)
    y = (x * 2).sum()
    y.backward(retain_graph=True)
    first = x.grad
    y.backward()
    return kept[0].tolist(), first.tolist(), x.grad.tolist(), w.grad.tolist()


def test_a_retained_non_leaf_gradient_is_copied_then_summed_out_of_place_like_torch():
    assert _retained(ember) == _retained(torch) == ([2.0] * 3, [2.0] * 3, [4.0] * 3,
                                                    [4.0] * 3)
