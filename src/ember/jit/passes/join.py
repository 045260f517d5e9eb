"""Joining in place: a ``cat`` operand made by a ``reshape`` that only the ``cat`` reads is
copied straight into its slice of the result, seen in the reshape's input shape; where that
input is a permuted matrix product (the last dimension kept), BLAS writes the product there.

A reshape of a permuted view copies (attention's head gradients, ``(B, H, T, D)`` permuted to
``(B, T, H, D)`` and reshaped to ``(B, T, C)``), and the ``cat`` copies that copy again (the
``qkv`` projection's gradient, ``cat(dq, dk, dv, dim=2)``). In place, each operand is copied
once, into the result, or not at all (a product written in place: BLAS's rows then lie
further apart, and its sums are the same). The values are eager's bit for bit, and so is
the layout: eager's ``cat`` lays its result out as its operands lie, so where they are not
C-contiguous (a reshape that views a permuted array) the kernel runs eager's calls. A slice
that its reshape cannot view (it would need a copy) is left to ``cat``, and so is a product
that its reshape views. The product moves down to the ``cat``, so its operands live a few
equations longer.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.kernels import Kernel


def join_in_place(graph: Graph) -> Graph:
    """Replaces each ``cat`` with a reshaped operand that only it reads by a kernel that copies
    the reshape's input into the result's slice (the reshape goes).

    Example:
        >>> g = join_in_place(g)   # v9 = reshape(v8); v10 = cat(v7, v9): cat_into(v7, v8)
    """
    uses = graph.uses()
    made: dict[Var, tuple[Eqn, int]] = {}  # var -> (its equation, the effects before it)
    effects = 0
    taken: set[int] = set()
    joins: dict[int, Kernel] = {}
    for eqn in graph.eqns:
        if isinstance(eqn.prim, Effect):
            effects += 1
        elif eqn.prim.name == "cat" and len(eqn.outputs) == 1 and \
                all(v.dtype is eqn.outputs[0].dtype for v in eqn.inputs):
            chains = {}
            for v, where in zip(eqn.inputs, Kernel.join_slices(eqn)):
                chain = _chain(v, made, uses, effects)
                if chain and views(eqn.outputs[0].shape, chain[-1].inputs[0].shape, where):
                    chains[v] = chain
            if chains:
                joins[id(eqn)] = Kernel.join(eqn, chains)
                taken.update(id(e) for chain in chains.values() for e in chain)
        for v in eqn.outputs:
            made[v] = (eqn, effects)
    out = []
    for eqn in graph.eqns:
        kernel = joins.get(id(eqn))
        if kernel is not None:
            out.append(Eqn(kernel, list(kernel.inputs), {}, list(eqn.outputs), eqn.source))
        elif id(eqn) not in taken:
            out.append(eqn)
    graph.eqns = out
    return graph


def _chain(v: Var, made: dict[Var, tuple[Eqn, int]], uses: dict[Var, int],
           effects: int) -> list[Eqn]:
    """The equations that make ``v`` for the join to take, in order: its ``reshape``, and
    before it a ``permute`` that keeps the last dimension and the ``matmul`` it permutes (the
    product then goes straight into the slice; only where the reshape copies it), each read
    only by the next and made after the last effect; [] if ``v`` is no reshape."""
    def maker(u: Var, name: str) -> Eqn | None:
        eqn, after = made.get(u, (None, -1))
        if eqn is None or uses.get(u) != 1 or after != effects or \
                getattr(eqn.prim, "name", None) != name:
            return None
        return eqn
    reshape = maker(v, "reshape")
    if reshape is None:
        return []
    permute = maker(reshape.inputs[0], "permute")
    if permute is None or permute.params["dims"][-1] != len(permute.params["dims"]) - 1:
        return [reshape]
    matmul = maker(permute.inputs[0], "matmul")
    if matmul is None or matmul.params.get("compute") is not None or \
            min(len(u.shape) for u in matmul.inputs) < 2 or \
            views(matmul.outputs[0].shape, v.shape, dims=permute.params["dims"]):
        return [reshape]  # (eager's reshape that views the product is not C-contiguous)
    return [matmul, permute, reshape]


def views(shape: tuple[int, ...], as_shape: tuple[int, ...], where: tuple[slice, ...] = (),
          dims: tuple[int, ...] | None = None) -> bool:
    """Whether the slice ``where`` of a C-contiguous array of ``shape``, permuted by ``dims``,
    can be viewed (without a copy) in ``as_shape``: NumPy's own rule, asked of an array that
    only pretends to have that memory."""
    if 0 in shape:
        return False
    strides = tuple(prod(shape[d + 1:]) for d in range(len(shape)))
    fake = np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), shape, strides,
                                           writeable=False)[where]
    try:
        (fake if dims is None else fake.transpose(dims)).reshape(as_shape, copy=False)
    except ValueError:
        return False
    return True
