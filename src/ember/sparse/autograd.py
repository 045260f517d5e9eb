"""``ember.autograd.grad`` and ``ember.autograd.backward`` with sparse tensors among their
inputs (handed over by :mod:`ember.ops.overrides`, as the ops are): the values are
differentiated with the ordinary engine, and a sparse input's gradient is sparse with its
pattern, as its ``.grad`` and PyTorch's. A sparse output or gradient is refused (reduce it with
``ember.sparse.sum`` first).
"""

from __future__ import annotations

from typing import Any

from ember.autograd.engine import backward, grad
from ember.sparse.tensor import SparseTensor, SparseUnsupported

__all__: list[str] = []


def _listed(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _dense(who: str, what: str, xs: Any) -> Any:
    """``xs`` (outputs or their gradients), which must hold no sparse tensor."""
    for x in [] if xs is None else _listed(xs):
        if isinstance(x, SparseTensor):
            raise SparseUnsupported(f"{who}: a sparse {what} ({x.layout!r}, shape "
                                    f"{tuple(x.shape)}) is not supported. Hint: reduce it "
                                    "first (ember.sparse.sum(s)), or call .to_dense()")
    return xs


def _values(x: Any) -> Any:
    return x._vals if isinstance(x, SparseTensor) else x


def sparse_grad(outputs: Any, inputs: Any, grad_outputs: Any = None, **options: Any) -> tuple:
    """``ember.autograd.grad`` where sparse tensors are among the ``inputs``."""
    ins = _listed(inputs)
    found = grad(_dense("grad", "output", outputs), [_values(x) for x in ins],
                 _dense("grad", "gradient", grad_outputs), **options)
    return tuple(x.gradient_of(g) if isinstance(x, SparseTensor) else g
                 for x, g in zip(ins, found))


def sparse_backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
                    create_graph: bool = False, inputs: Any = None) -> None:
    """``ember.autograd.backward`` where sparse tensors are among the ``inputs``: a sparse
    input's ``.grad`` is its values'."""
    backward(_dense("backward", "tensor", tensors), _dense("backward", "gradient", grad_tensors),
             retain_graph, create_graph,
             None if inputs is None else [_values(x) for x in _listed(inputs)])


AUTOGRAD = {grad: sparse_grad, backward: sparse_backward}
