""":func:`fuse`: fold eval-mode batch norms into the convolutions (and linears) before them,
a graph pass as ``torch.fx.experimental.optimization.fuse``."""

from __future__ import annotations

import copy
from collections import Counter

from ember import nn
from ember.fx.graph_module import GraphModule
from ember.fx.node import Node
from ember.fx.tracer import symbolic_trace
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

__all__ = ["fuse"]

#: (layer, the batch norm that may follow it) pairs that fold
PATTERNS = ((nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d),
            (nn.Conv3d, nn.BatchNorm3d), (nn.Linear, nn.BatchNorm1d))


def fuse(model: nn.Module, inplace: bool = False, no_trace: bool = False) -> GraphModule:
    """``model`` traced (unless ``no_trace``: it is a GraphModule already) with each
    ``bn(conv(x))`` whose conv output nothing else uses (and whose conv is called nowhere
    else) replaced by one fused conv. For inference: the modules must be in eval mode.
    ``inplace=False`` works on a deep copy.

    Example:
        >>> from ember.fx.experimental.optimization import fuse
        >>> model = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3), ember.nn.BatchNorm2d(2)).eval()
        >>> print(fuse(model).code)
        def forward(self, input):
            input_1 = input
            _0 = getattr(self, "0")(input_1);  input_1 = None
            return _0
        <BLANKLINE>
    """
    if not inplace:
        model = copy.deepcopy(model)
    gm = model if no_trace else symbolic_trace(model)
    modules = dict(gm.named_modules())
    calls = Counter(n.target for n in gm.graph.nodes if n.op == "call_module")
    for node in list(gm.graph.nodes):
        layer_node = node.args[0] if node.args else None
        if not (_is_module(node, modules) and isinstance(layer_node, Node)
                and _is_module(layer_node, modules)):
            continue
        layer, bn = modules[layer_node.target], modules[node.target]
        if not any(type(layer) is lt and type(bn) is bt for lt, bt in PATTERNS) or \
                len(layer_node.users) > 1 or calls[layer_node.target] > 1 or \
                not bn.track_running_stats:
            continue
        fused = (fuse_linear_bn_eval(layer, bn) if isinstance(layer, nn.Linear)
                 else fuse_conv_bn_eval(layer, bn))
        _set_module(gm, layer_node.target, fused)
        modules[layer_node.target] = fused
        node.replace_all_uses_with(layer_node)
        gm.graph.erase_node(node)
    gm.recompile()
    return gm


def _is_module(node: Node, modules: dict[str, nn.Module]) -> bool:
    return node.op == "call_module" and node.target in modules


def _set_module(root: nn.Module, target: str, module: nn.Module) -> None:
    *parent, name = target.split(".")
    setattr(root.get_submodule(".".join(parent)) if parent else root, name, module)
