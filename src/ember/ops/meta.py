"""The meta kernel of every primitive: its ``infer`` rule.

On the meta device (``ember.device("meta")``) :func:`ember.ops.primitive.eager` calls
:func:`meta_forward` instead of the primitive's ``forward``: the output is a
:class:`~ember.backend.MetaArray` of the inferred shape and dtype, so nothing is computed and
nothing allocated, and the autograd tape records as usual (``backward`` gives meta gradients).
Views take the strides their view would have on the CPU, elementwise results (``clone()``
too) their inputs' layout, as in PyTorch, results of a primitive marked ``input_layout``
input 0's order, ``x[key]``'s advanced indexing PyTorch's layout (``index_layout.py``);
other results are C-contiguous.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import MetaArray
from ember.backend.meta import no_data
from ember.layouts import broadcast_strides, dense_strides, is_dense, stride_order
from ember.ops.elementwise import ELEMENTWISE
from ember.ops.primitive import Primitive, TensorSpec, spec

# View primitives whose forward, on a NumPy array, only rearranges strides and never reads
# an element: run on a stand-in of the meta array's layout, they give the view's strides.
_STRIDE_ONLY_VIEWS = frozenset({"permute", "slice", "diagonal", "expand", "unfold_view",
                                "view_dtype", "real", "imag", "view_as_real",
                                "view_as_complex"})
_ELEMENTWISE = frozenset(ELEMENTWISE)


def meta_forward(prim: Primitive, inputs: tuple, params: dict) -> Any:
    """The outputs of ``prim`` on ``inputs`` (meta tensors, or CPU scalars) as meta arrays,
    from its ``infer`` rule (which raises the op's own error for bad input)."""
    try:
        out = prim.infer(*(spec(t) for t in inputs), **params)
    except NotImplementedError:
        no_data(f"{prim.name} (it has no shape rule, so it cannot run on the meta device)")
    if prim.nout == 1 and prim.view:
        return _view(prim, inputs[0]._data, out, params)
    elementwise = prim.name in _ELEMENTWISE and (  # (a copy only in clone()'s order "K")
        prim.name != "copy" or params.get("order") == "K")
    outs = (out,) if prim.nout == 1 else out
    if prim.input_layout:
        return _ordered_like(out, inputs[0]._data)
    if prim.nout == 1 and not elementwise:
        return prim.meta_layout(_array(out), *(t._data for t in inputs), **params)
    arrays = tuple(_like_inputs(o, inputs) if elementwise else _array(o) for o in outs)
    return arrays[0] if prim.nout == 1 else arrays


def _array(out: TensorSpec) -> MetaArray:
    return MetaArray(out.shape, out.dtype.np)


def _like_inputs(out: TensorSpec, inputs: tuple) -> MetaArray:
    """An elementwise result laid out as its inputs are, as PyTorch's: dense, with its
    dimensions ordered from innermost to outermost by the inputs' strides (the first input
    whose strides tell two dimensions apart decides; C order where none does)."""
    shape, size = tuple(out.shape), out.dtype.itemsize
    first = inputs[0]._data
    if all(tuple(t.shape) == shape for t in inputs):  # (PyTorch's fast paths)
        if all(t._data.flags.c_contiguous for t in inputs):
            return MetaArray(shape, out.dtype.np)
        if all(t._data.strides == first.strides for t in inputs) and is_dense(first):
            return MetaArray(shape, out.dtype.np,
                             tuple(s // first.itemsize * size for s in first.strides))
    strides = [broadcast_strides(t._data.shape, tuple(s // t._data.itemsize
                                                      for s in t._data.strides), shape)
               for t in inputs if t.ndim]
    return MetaArray(shape, out.dtype.np, dense_strides(shape, stride_order(shape, *strides), size))


def _ordered_like(out: TensorSpec, a: Any) -> MetaArray:
    """A dense result of ``out``'s shape with its dimensions in ``a``'s stride order."""
    shape = tuple(out.shape)
    return MetaArray(shape, out.dtype.np, dense_strides(
        shape, stride_order(tuple(a.shape), tuple(a.strides)), out.dtype.itemsize))


def _view(prim: Primitive, src: MetaArray, out: TensorSpec, params: dict) -> MetaArray:
    """A view's meta array, with the strides the view has on the CPU where they are known
    without data (else C order, as a copy would have)."""
    if prim.name == "as_strided":
        return MetaArray(out.shape, out.dtype.np,
                         tuple(s * out.dtype.itemsize for s in params["stride"]))
    stand_in = _stand_in(src)
    if prim.name == "reshape":
        try:  # (NumPy's copy=False refuses, reading nothing, where a view cannot be made)
            return _like(np.reshape(stand_in, out.shape, copy=False), out)
        except ValueError:
            return _array(out)
    if prim.name in _STRIDE_ONLY_VIEWS:
        return _like(prim.forward(np, stand_in, **params), out)
    return _array(out)


def _stand_in(a: MetaArray) -> np.ndarray:
    """A read-only NumPy array with ``a``'s shape, dtype and strides over a one-element
    buffer: only its strides may be read (its elements lie outside the buffer)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, a.dtype), a.shape, a.strides,
                                           writeable=False)


def _like(view: np.ndarray, out: TensorSpec) -> MetaArray:
    if view.shape != tuple(out.shape):  # (the rule and the stand-in disagree: trust the rule)
        return _array(out)
    return MetaArray(view.shape, view.dtype, view.strides)
