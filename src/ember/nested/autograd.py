"""``ember.autograd.grad`` and ``ember.autograd.backward`` with nested tensors among their
outputs, inputs or gradients (handed over by :mod:`ember.ops.overrides`, as the ops are): the
packed values are differentiated with the ordinary engine, and a nested input's gradient is
nested like it, as PyTorch's.
"""

from __future__ import annotations

from typing import Any

from ember.autograd.engine import backward, grad
from ember.errors import ArgumentTypeError, GradError
from ember.nested.functional import IMPLEMENTATIONS
from ember.nested.nested_tensor import NestedTensor, check_same_structure

__all__: list[str] = []


def _listed(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _values(x: Any) -> Any:
    return x._values if isinstance(x, NestedTensor) else x


def _seeds(who: str, outputs: list, gradients: Any) -> list:
    """The dense gradients that seed ``outputs``: the values of the nested ones given."""
    given = [None] * len(outputs) if gradients is None else _listed(gradients)
    if len(given) < len(outputs):  # (the engine's error for tensors; extra ones are ignored)
        raise GradError(f"{who}: got {len(outputs)} tensors but {len(given)} gradients")
    return [_seed(who, i, out, g) for i, (out, g) in enumerate(zip(outputs, given))]


def _seed(who: str, i: int, output: Any, given: Any) -> Any:
    if isinstance(output, NestedTensor):
        if given is not None:
            return check_same_structure(who, output, given)
        if output._values.numel() != 1:
            raise GradError(f"{who}: the gradient can be implied only for a scalar output, "
                            f"output {i} is a nested tensor of shape {output.shape}; pass its "
                            "gradient")
    elif isinstance(given, NestedTensor):
        raise ArgumentTypeError(f"{who}: gradient {i} is a nested tensor of shape "
                                f"{given.shape}, its output a {type(output).__name__}")
    return given


def nested_grad(outputs: Any, inputs: Any, grad_outputs: Any = None, **options: Any) -> tuple:
    """``ember.autograd.grad(outputs, inputs, grad_outputs, **options)`` where nested tensors
    are among the arguments; no nested tensor goes back to the engine."""
    outs, ins = _listed(outputs), _listed(inputs)
    seeds = _seeds("grad", outs, grad_outputs)
    found = grad([_values(o) for o in outs], [_values(x) for x in ins], seeds, **options)
    return tuple(x._with(g) if isinstance(x, NestedTensor) and g is not None else g
                 for x, g in zip(ins, found))


def nested_backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
                    create_graph: bool = False, inputs: Any = None) -> None:
    """``ember.autograd.backward`` where nested tensors are among the ``tensors``,
    ``grad_tensors`` or ``inputs``: a nested input's ``.grad`` is its values'."""
    outs = _listed(tensors)
    backward([_values(t) for t in outs], _seeds("backward", outs, grad_tensors), retain_graph,
             create_graph, None if inputs is None else [_values(x) for x in _listed(inputs)])


IMPLEMENTATIONS[grad] = nested_grad
IMPLEMENTATIONS[backward] = nested_backward
