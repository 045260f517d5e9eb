"""``ember.autograd.backward`` and ``ember.autograd.grad`` with DTensors among the outputs,
their gradients or the inputs, as PyTorch's: each DTensor stands for this rank's local tensor
(the ops' rules compute on the local tensors, so the local graph is the distributed one), and
``grad`` gives a DTensor input's gradient back as a DTensor with its placements (``Replicate``
where they are ``Partial``), as its ``.grad`` would be.

An output's gradient, where given, is a DTensor brought to the output's placements (its
``Partial`` ones as ``Replicate``); where implied, the output must be replicated on every
mesh dimension, as :meth:`DTensor.backward` requires.

Example (any number of ranks):
    >>> w = distribute_tensor(ember.ones(4, requires_grad=True), mesh, [Shard(0)])
    >>> loss = (w * w).sum().redistribute(mesh, [Replicate()])
    >>> ember.autograd.grad(loss, [w])[0].placements
    (Shard(dim=0),)
"""

from __future__ import annotations

from typing import Any

from ember.autograd.engine import backward, grad
from ember.distributed.tensor.dtensor import DTensor, _grad_layout
from ember.distributed.tensor.ops import rule
from ember.errors import ArgumentTypeError, GradError
from ember.tensor import Tensor

__all__: list[str] = []


def _listed(x: Any) -> list:
    return [x] if x is None or isinstance(x, (Tensor, DTensor)) else list(x)


def _locals(who: str, outputs: Any, gradients: Any) -> tuple[list, list]:
    """The local tensors standing for ``outputs`` and their gradients."""
    outs = _listed(outputs)
    grads = [None] * len(outs) if gradients is None else _listed(gradients)
    if len(grads) < len(outs):
        raise GradError(f"{who}: got {len(outs)} tensors but {len(grads)} gradients")
    local_outs, local_grads = [], []
    for i, (out, g) in enumerate(zip(outs, grads)):  # (extra gradients ignored, as tensors')
        if not isinstance(out, DTensor):
            if isinstance(g, DTensor):
                raise ArgumentTypeError(f"{who}: gradient {i} is a DTensor, its output a "
                                        f"{type(out).__name__}. Hint: give a tensor")
            local_outs.append(out)
            local_grads.append(g)
            continue
        if g is None and not all(p.is_replicate() for p in out.placements):
            raise GradError(f"{who}: output {i} has placements {out.placements}; an implied "
                            "gradient needs Replicate() on every mesh dimension. Hint: "
                            "redistribute it to Replicate() (or .full_tensor()) first, or pass "
                            "its gradient as a DTensor")
        if g is not None and not isinstance(g, DTensor):
            raise ArgumentTypeError(f"{who}: gradient {i} is a {type(g).__name__}, its output "
                                    "a DTensor. Hint: give the gradient as a DTensor "
                                    "(distribute_tensor)")
        if g is not None:
            g = g.redistribute(out.device_mesh, _grad_layout(out.placements)).to_local()
        local_outs.append(out._local_tensor)
        local_grads.append(g)
    return local_outs, local_grads


def _local(x: Any) -> Any:
    return x._local_tensor if isinstance(x, DTensor) else x


@rule(backward)
def _backward(op: Any, tensors: Any, grad_tensors: Any = None, **kwargs: Any) -> None:
    outs, grads = _locals("backward", tensors, grad_tensors)
    inputs = kwargs.get("inputs")
    if inputs is not None:
        kwargs["inputs"] = [_local(x) for x in _listed(inputs)]
    return backward(outs, grads, **kwargs)


@rule(grad)
def _grad(op: Any, outputs: Any, inputs: Any, grad_outputs: Any = None, **kwargs: Any) -> tuple:
    outs, grads = _locals("grad", outputs, grad_outputs)
    inputs = _listed(inputs)
    found = grad(outs, [_local(x) for x in inputs], grads, **kwargs)
    return tuple(DTensor(g, x.device_mesh, _grad_layout(x.placements), x.shape)
                 if isinstance(x, DTensor) and g is not None else g
                 for x, g in zip(inputs, found))
