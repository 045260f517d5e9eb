"""Values of another dtype written through advanced indices: PyTorch refuses them (index_put_
and x[index] = tensor) except a single value under one boolean mask, which it converts after
checking that it fits; a basic index casts. Compared with torch."""

import numpy as np
import pytest
import torch

import ember


def _outcome(lib, write):
    x = lib.zeros(3)
    try:
        write(lib, x)
    except (RuntimeError, TypeError):
        return "refused"
    return x.tolist()


def _f64(L, v):
    return L.tensor(v, dtype=L.float64)


def _idx(L, *v):
    return L.tensor(list(v))


_MASK = (True, False, True)
_WRITES = {
    "index_put_ f64": lambda L, x: x.index_put_((_idx(L, 0, 1),), _f64(L, [1.5, 2.5])),
    "index_put_ accumulate": lambda L, x: x.index_put_((_idx(L, 0),), _f64(L, [1.5]), True),
    "index_put_ complex": lambda L, x: x.index_put_((_idx(L, 0, 1),), L.tensor([1 + 1j, 2])),
    "index_put_ empty index": lambda L, x: x.index_put_((_idx(L).long(),), _f64(L, [])),
    "index_put_ mask one value": lambda L, x: x.index_put_((_idx(L, *_MASK),), _f64(L, 2.0)),
    "index_put_ mask accumulate": lambda L, x: x.index_put_((_idx(L, *_MASK),), _f64(L, 2.0),
                                                            True),
    "index_put f64": lambda L, x: x.copy_(x.index_put((_idx(L, 0),), _f64(L, [1.5]))),
    "setitem tensor index": lambda L, x: x.__setitem__(_idx(L, 0, 1), _f64(L, [1.5, 2.5])),
    "setitem list index 0-d": lambda L, x: x.__setitem__([0, 1], _f64(L, 1.5)),
    "setitem int64 values": lambda L, x: x.__setitem__(_idx(L, 0, 1), L.tensor([1, 2])),
    "setitem bool values": lambda L, x: x.__setitem__(_idx(L, 0, 1), L.tensor([True, False])),
    "setitem complex values": lambda L, x: x.__setitem__(_idx(L, 0, 1), L.tensor([1 + 1j, 2])),
    "setitem complex 0-d": lambda L, x: x.__setitem__(_idx(L, 0, 1), L.tensor(1 + 1j)),
    "setitem mask values": lambda L, x: x.__setitem__(_idx(L, True, True, False),
                                                      _f64(L, [1.5, 2.5])),
    "setitem mask one value": lambda L, x: x.__setitem__(_idx(L, *_MASK), _f64(L, 1.5)),
    "setitem mask one value 1-d": lambda L, x: x.__setitem__(_idx(L, *_MASK), _f64(L, [1.5])),
    "setitem mask with dots": lambda L, x: x.__setitem__((..., _idx(L, *_MASK)), L.tensor(2)),
    "setitem mask complex real": lambda L, x: x.__setitem__(_idx(L, *_MASK), L.tensor(1 + 0j)),
    "setitem mask complex": lambda L, x: x.__setitem__(_idx(L, *_MASK), L.tensor(1 + 1j)),
    "setitem None and list": lambda L, x: x.__setitem__((None, [0, 1]), _f64(L, 1.5)),
    "setitem 0-d int index": lambda L, x: x.__setitem__(L.tensor(1), _f64(L, 1.5)),
    "setitem slice casts": lambda L, x: x.__setitem__(slice(0, 2), _f64(L, [1.5, 2.5])),
    "setitem python number": lambda L, x: x.__setitem__(_idx(L, 0, 1), 2.5),
    "setitem True": lambda L, x: x.__setitem__(True, _f64(L, 1.5)),
}


@pytest.mark.parametrize("name", list(_WRITES))
def test_advanced_index_writes_take_the_dtype_as_torch(name):
    assert _outcome(ember, _WRITES[name]) == _outcome(torch, _WRITES[name])


def test_the_refusal_names_both_dtypes():
    with pytest.raises(ember.errors.DTypeError, match="float64 but the tensor is float32"):
        ember.zeros(3)[ember.tensor([0])] = ember.tensor([1.0], dtype=ember.float64)


def test_a_masked_value_must_fit_as_in_torch():
    for lib in (torch, ember):
        x = lib.zeros(2, dtype=lib.float16)
        with pytest.raises(RuntimeError, match="overflow|cannot be converted"):
            x[lib.tensor([True, False])] = lib.tensor(1e6, dtype=lib.float64)


def test_same_dtype_writes_and_grads_unchanged():
    v = ember.tensor([1.0, 2.0], requires_grad=True)
    x = ember.zeros(3)
    x[ember.tensor([0, 2])] = v
    x.sum().backward()
    assert x.tolist() == [1.0, 0.0, 2.0] and v.grad.tolist() == [1.0, 1.0]
    y = ember.zeros(3)
    y[np.array([0, 1])] = 4.0
    assert y.tolist() == [4.0, 4.0, 0.0]
