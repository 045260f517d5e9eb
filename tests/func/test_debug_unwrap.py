"""``func.debug_unwrap``: inside vmap, the tensor of all samples behind a batched tensor, as
``torch.func.debug_unwrap`` (Ember had none: AttributeError)."""

import torch
import torch.func

import ember
import ember.func


def _shapes(lib, func):
    seen = []

    def f(r):
        seen.append((tuple(func.debug_unwrap(r).shape),
                     tuple(func.debug_unwrap(r, recurse=False).shape)))
        return r * 2

    func.vmap(func.vmap(f))(lib.ones(4, 3, 2))
    func.vmap(f)(lib.ones(4, 3, 2))
    func.grad(lambda x: (seen.append(tuple(func.debug_unwrap(x).shape)), x.sum())[1])(
        lib.ones(2))
    seen.append(tuple(func.debug_unwrap(lib.ones(5)).shape))
    return seen


def test_shapes_as_torch_func():
    assert _shapes(ember, ember.func) == _shapes(torch, torch.func) == [
        ((4, 3, 2), (3, 2)), ((4, 3, 2), (4, 3, 2)), (2,), (5,)]


def test_the_values_of_every_sample():
    seen = []
    x = ember.arange(6.0).reshape(3, 2)
    ember.func.vmap(lambda r: seen.append(ember.func.debug_unwrap(r * 10)) or r)(x)
    assert seen[0].tolist() == (x * 10).tolist()
