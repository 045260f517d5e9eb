"""Graph passes, each a function ``Graph -> Graph`` that can be switched off by name.

They run in the order of :data:`PASSES`: folding first (constants feed the rest), then
simplification (which leaves dead equations and repeats behind), CSE and DCE to sweep up,
fusion on the final equations, a batch-1 product's bias and relu into its kernel, joining in
place (a ``cat`` copies reshaped operands straight into its result), products in their
reader's layout (a permuted product that a reshape would copy is made contiguous by BLAS),
packing of convolution weights for their GEMMs, each parameter's optimizer update as soon as
its gradient is ready (its memory then freed early), hoisting of what reads only state
(packing and hoisting are for inference graphs: cached between calls), and memory planning
last, on the kernels that will run.
``liveness`` runs after them all and always, since the generated code needs to know where each
variable dies (it frees the memory there).
"""

from __future__ import annotations

from collections.abc import Callable

from ember.jit.ir import Graph
from ember.jit.passes.cse import eliminate_common_subexpressions
from ember.jit.passes.dce import eliminate_dead_code
from ember.jit.passes.early_update import update_early
from ember.jit.passes.epilogue import fuse_epilogues
from ember.jit.passes.fold import fold_constants
from ember.jit.passes.fuse import fuse_elementwise
from ember.jit.passes.hoist import hoist_state_only
from ember.jit.passes.join import join_in_place
from ember.jit.passes.layout import permute_products
from ember.jit.passes.liveness import last_uses
from ember.jit.passes.memory import plan_memory
from ember.jit.passes.pack import pack_conv_weights
from ember.jit.passes.simplify import simplify

PASSES: dict[str, Callable[[Graph], Graph]] = {
    "fold": fold_constants,
    "simplify": simplify,
    "cse": eliminate_common_subexpressions,
    "dce": eliminate_dead_code,
    "fuse": fuse_elementwise,
    "epilogue": fuse_epilogues,
    "join": join_in_place,
    "layout": permute_products,
    "pack": pack_conv_weights,
    "early_update": update_early,
    "hoist": hoist_state_only,
    "memory": plan_memory,
}


def optimize(graph: Graph, switches: dict[str, bool]) -> tuple[Graph, dict[int, list]]:
    """Runs the switched-on passes; returns the graph and where each variable dies."""
    for name, run in PASSES.items():
        if switches.get(name, True):
            graph = run(graph)
    return graph, last_uses(graph)
