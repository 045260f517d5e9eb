"""Gradient edges: where a gradient flows in the graph (output ``output_nr`` of a node), as
``torch.autograd.graph.GradientEdge``; ``autograd.grad`` takes one as an input, and as an
output (with its gradient given) as ``autograd.backward`` does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ember.autograd.graph import AccumulateGrad, Node, accumulator

if TYPE_CHECKING:
    from ember.tensor import Tensor

__all__ = ["GradientEdge", "get_gradient_edge"]


class GradientEdge(NamedTuple):
    """Where a gradient flows in the graph: output ``output_nr`` of ``node`` (a
    :class:`Node`, or a leaf's :class:`AccumulateGrad`), as PyTorch's. Pass one to
    :func:`ember.autograd.grad` as an input to get the gradient flowing into that edge, even
    after the tensor that made it is gone or was overwritten in place; as an output (of
    ``grad`` or ``backward``, with its gradient given) to start backward there.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> edge = ember.autograd.graph.get_gradient_edge(y)
        >>> ember.autograd.grad((y * 3).sum(), edge)
        (tensor([3., 3.]),)
    """

    node: Node | AccumulateGrad
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The :class:`GradientEdge` through which ``tensor``'s gradient flows: its ``grad_fn``
    and output number, or a leaf's :class:`AccumulateGrad`.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> ember.autograd.graph.get_gradient_edge(x).node.variable is x
        True
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    if tensor._node is None:
        return GradientEdge(accumulator(tensor), 0)
    return GradientEdge(tensor._node, tensor._idx)


class EdgeTarget:
    """A :class:`GradientEdge` into a node, as the engine's targets see it (what it reads of
    a target tensor: its node and output index)."""

    __slots__ = ("_node", "_idx")
    requires_grad = True
    _retains = False

    def __init__(self, node: Node, idx: int) -> None:
        self._node, self._idx = node, idx

    def __repr__(self) -> str:
        return f"GradientEdge of output {self._idx} of {self._node.name()}"

    def spec(self) -> Any:
        """The shape and dtype (a ``TensorSpec``) of the node's output, from its primitive's
        ``infer`` rule and its recorded inputs as they are now (an input reshaped in place
        since, ``x.t_()``, changes it: its backward fails in any case); None where that rule
        cannot tell (a custom Function's node)."""
        from ember.ops.primitive import TensorSpec, spec

        node = self._node
        try:
            out = node.prim.infer(*(spec(t) for t in node.inputs), **node.params)
        except Exception:  # noqa: BLE001 - any failure means only "not known"
            return None
        if not isinstance(out, TensorSpec) and isinstance(out, (tuple, list)):
            out = out[self._idx] if self._idx < len(out) else None
        return out if isinstance(out, TensorSpec) else None


def edge_target(target: Any) -> Any:
    """A target of ``grad``: a tensor as it is; a :class:`GradientEdge` as its leaf (for an
    :class:`AccumulateGrad`) or an :class:`EdgeTarget`."""
    if not isinstance(target, GradientEdge):
        return target
    if isinstance(target.node, AccumulateGrad):
        return target.node.variable
    if not isinstance(target.node, Node):
        raise TypeError(f"grad: a GradientEdge's node must be a Node or an AccumulateGrad, got "
                        f"{type(target.node).__name__}")
    return EdgeTarget(target.node, target.output_nr)
