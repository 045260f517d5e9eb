"""``ember.autograd.grad`` with nested tensors among its outputs, inputs or grad_outputs (handed
over by :mod:`ember.ops.overrides`, as the ops are): the packed values are differentiated with
the ordinary engine, and a nested input's gradient is nested like it, as PyTorch's.
"""

from __future__ import annotations

from typing import Any

from ember.autograd.engine import grad
from ember.errors import ArgumentTypeError, GradError
from ember.nested.functional import IMPLEMENTATIONS
from ember.nested.nested_tensor import NestedTensor, check_same_structure

__all__: list[str] = []


def _listed(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _values(x: Any) -> Any:
    return x._values if isinstance(x, NestedTensor) else x


def _seed(i: int, output: Any, given: Any) -> Any:
    """The dense gradient that seeds ``output`` (the ``i``-th): ``given``'s values."""
    if isinstance(output, NestedTensor):
        if given is not None:
            return check_same_structure("grad", output, given)
        if output._values.numel() != 1:
            raise GradError(f"grad: the gradient can be implied only for a scalar output, output "
                            f"{i} is a nested tensor of shape {output.shape}; pass grad_outputs=…")
    elif isinstance(given, NestedTensor):
        raise ArgumentTypeError(f"grad: grad_outputs {i} is a nested tensor of shape "
                                f"{given.shape}, its output a {type(output).__name__}")
    return given


def nested_grad(outputs: Any, inputs: Any, grad_outputs: Any = None, **options: Any) -> tuple:
    """``ember.autograd.grad(outputs, inputs, grad_outputs, **options)`` where nested tensors
    are among the arguments; no nested tensor goes back to the engine."""
    outs, ins = _listed(outputs), _listed(inputs)
    given = [None] * len(outs) if grad_outputs is None else _listed(grad_outputs)
    if len(given) != len(outs):  # (the engine's error for tensors: torch ignores the rest)
        raise GradError(f"grad: got {len(outs)} tensors but {len(given)} gradients")
    seeds = [_seed(i, out, g) for i, (out, g) in enumerate(zip(outs, given))]
    found = grad([_values(o) for o in outs], [_values(x) for x in ins], seeds, **options)
    return tuple(x._with(g) if isinstance(x, NestedTensor) and g is not None else g
                 for x, g in zip(ins, found))


IMPLEMENTATIONS[grad] = nested_grad
