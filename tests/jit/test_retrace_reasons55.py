"""``explain()``'s words for an argument that is a value at one call and a tensor at another
(``shift=None``, then a tensor): it said ``None -> None``."""

from __future__ import annotations

import ember
from ember import jit


def test_an_argument_turning_from_a_value_into_a_tensor_is_told_as_such():
    def g(x, *, shift=None):
        return x * 2 if shift is None else x + shift

    f = jit.compile(g)
    f(ember.ones(2), shift=None)
    f(ember.ones(2), shift=ember.ones(2))
    assert jit.explain()[-1] == ("g: traced again: argument shift: None -> a tensor of shape "
                                 "(2,) (float32)")
    f(ember.ones(2), shift=3.0)
    assert jit.explain()[-1] == ("g: traced again: argument shift: a tensor of shape (2,) "
                                 "(float32) -> 3.0")
