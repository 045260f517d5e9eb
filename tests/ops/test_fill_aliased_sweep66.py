"""fill_ and zero_ with a number write into tensors whose elements share memory (expand's,
as_strided's), as PyTorch allows (each location gets the one value); other in-place ops on
them stay refused, as PyTorch refuses them. A view of an expanded tensor whose own elements
share no memory (a row) takes any write, as in PyTorch. Compared with torch."""

import pytest
import torch

import ember

_WRITES = {
    "fill_ expanded": lambda L: L.zeros(1).expand(3).fill_(2),
    "zero_ expanded": lambda L: L.ones(3, 1).expand(3, 4).zero_(),
    "fill_ expanded int8": lambda L: L.zeros(1, dtype=L.int8).expand(2, 3).fill_(5),
    "fill_ detached expanded": lambda L: L.zeros(1).expand(3).detach().fill_(2.5),
    "fill_ overlapping as_strided": lambda L: L.ones(4).as_strided((3, 2), (1, 1)).fill_(3),
    "zero_ overlapping as_strided": lambda L: L.ones(4).as_strided((3, 2), (1, 1)).zero_(),
    "fill_diagonal_ expanded": lambda L: L.ones(1, 1).expand(3, 3).fill_diagonal_(0),
    "fill_ tensor expanded": lambda L: L.zeros(1).expand(3).fill_(L.tensor(2.0)),
    "copy_ expanded": lambda L: L.zeros(1).expand(3).copy_(L.tensor(2.0)),
    "add_ expanded": lambda L: L.zeros(1).expand(3).add_(1),
    "uniform_ expanded": lambda L: L.zeros(1).expand(3).uniform_(),
}


def _row_write(key, value):
    def write(lib):
        base = lib.zeros(1, 4)
        x = base.expand(3, 4)
        x[key] = value(lib) if callable(value) else value
        return base
    return write


_WRITES.update({
    "x[0] = 5": _row_write(0, 5.0),
    "x[0, 1] = 5": _row_write((0, 1), 5.0),
    "x[0] = row": _row_write(0, lambda L: L.arange(4.0)),
    "x[1:2] = 5": _row_write(slice(1, 2), 5.0),
    "x[0, [1, 2]] = 5": _row_write((0, [1, 2]), 5.0),
    "x[:, 0] = 5": _row_write((slice(None), 0), 5.0),
    "x[0].add_(1)": lambda L: (lambda b: (b.expand(3, 4)[0].add_(1), b)[1])(L.zeros(1, 4)),
    "x[0].copy_(row)": lambda L: (lambda b: (b.expand(3, 4)[0].copy_(L.arange(4.0)), b)[1])(
        L.zeros(1, 4)),
})


def _outcome(lib, write):
    try:
        return write(lib).tolist()
    except RuntimeError:
        return "refused"


@pytest.mark.parametrize("name", list(_WRITES))
def test_writes_into_shared_elements_as_torch(name):
    assert _outcome(ember, _WRITES[name]) == _outcome(torch, _WRITES[name])


def test_the_fill_reaches_the_base_and_counts_a_version():
    w = ember.ones(1, requires_grad=True)
    x = ember.zeros(1) + 3
    y = (w * x).sum()
    x.expand(4).fill_(7)
    assert x.tolist() == [7.0]
    with pytest.raises(RuntimeError, match="modified"):
        y.backward()


def test_read_only_memory_and_overflow_still_refused():
    with pytest.warns(UserWarning):
        b = ember.frombuffer(bytes(8), dtype=ember.float32)
    with pytest.raises(RuntimeError):
        b.expand(2, 2).fill_(1)
    with pytest.raises(OverflowError):
        ember.zeros(1, dtype=ember.int8).expand(3).fill_(300)
