"""Elementwise fusion: a tree of elementwise equations whose inner values each have one reader
becomes one :class:`~ember.jit.kernels.Kernel` equation, which computes the whole tree into
one buffer with ``out=`` (no temporaries of the output's size, one Python call).

The fused equation stands where the tree's last equation stood. Moving the others down to it
is safe because their operands are immutable in SSA, except across an effect (an optimizer
step writes parameters in place): a tree never spans one.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Eqn, Graph
from ember.jit.kernels import Kernel, elementwise


def fuse_elementwise(graph: Graph) -> Graph:
    """Replaces each elementwise tree of two or more equations by one kernel equation.

    Example:
        >>> g = fuse_elementwise(g)   # v3 = mul(v1, v2); v4 = add(v3, v0): one fused_mul_add
    """
    uses = graph.uses()
    index = {id(e): i for i, e in enumerate(graph.eqns)}
    made_by: dict = {}  # var -> (its equation's tree, the effects before it)
    absorbed: set[int] = set()
    trees: dict[int, list[Eqn]] = {}
    effects = 0
    for eqn in graph.eqns:
        if isinstance(eqn.prim, Effect):
            effects += 1
            continue
        if not elementwise(eqn):
            continue
        tree = [eqn]
        for v in dict.fromkeys(eqn.inputs):
            inner = made_by.get(v)
            if inner is None or uses.get(v, 0) != 1 or inner[1] != effects:
                continue
            tree[:0] = inner[0]
            absorbed.add(id(inner[0][-1]))
        tree.sort(key=lambda e: index[id(e)])
        trees[id(eqn)] = tree
        made_by[eqn.outputs[0]] = (tree, effects)
    out = []
    for eqn in graph.eqns:
        if id(eqn) in absorbed:
            continue
        tree = trees.get(id(eqn))
        if tree is None or len(tree) == 1:
            out.append(eqn)
            continue
        kernel = Kernel.fuse(tree)
        out.append(Eqn(kernel, list(kernel.inputs), {}, [eqn.outputs[0]], eqn.source))
    graph.eqns = out
    return graph

