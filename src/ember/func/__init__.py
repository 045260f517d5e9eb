"""Function transforms, as ``torch.func`` and JAX: :func:`grad`, :func:`vjp`, :func:`jvp`
(true forward mode), :func:`jacrev`, :func:`jacfwd`, :func:`hessian`, :func:`hvp`,
:func:`functional_call`, :func:`vmap`, :func:`rearrange` (einops patterns); for model
ensembles :func:`stack_module_state` and :func:`replace_all_batch_norm_modules_`;
:func:`functionalize` (in-place updates kept from the caller's tensors until the function
returns). They take and return pytrees of tensors and
compose freely (``jacfwd(jacrev(f))``, ``grad(grad(f))``, ``jvp`` inside ``jvp``).

Example:
    >>> f = lambda x: (x.sin() * x).sum()
    >>> g = ember.func.grad(f)(ember.ones(3))
"""

from ember.autograd.functional import register_batched_rows
from ember.func.batch_norm import replace_all_batch_norm_modules_
from ember.func.ensembling import stack_module_state
from ember.func.forward import jvp
from ember.func.functionalize import functionalize
from ember.func.jacobian import hessian, hvp, jacfwd, jacrev, vmapped_rows
from ember.func.linearization import linearize
from ember.func.pytree import tree_flatten, tree_map, tree_unflatten
from ember.func.rearrange import rearrange
from ember.func.reverse import grad, grad_and_value, value_and_grad, vjp
from ember.func.vmap import debug_unwrap, vmap
from ember.nn.utils._functional_call import functional_call

register_batched_rows(vmapped_rows)  # for autograd.functional's vectorize=True

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian",
           "hvp", "jacfwd", "jacrev", "jvp", "linearize", "rearrange",
           "replace_all_batch_norm_modules_", "stack_module_state", "tree_flatten", "tree_map",
           "tree_unflatten", "value_and_grad", "vjp", "vmap"]
