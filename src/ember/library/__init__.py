"""``ember.library``: user-defined ops that are real Ember primitives (``torch.library``).

:func:`custom_op` turns a type-hinted function into an op that eager mode, autograd,
``ember.jit``, ``ember.func.vmap``/``grad`` and the profiler all handle; its registrations
(:func:`register_fake`, :func:`register_autograd`, :func:`register_kernel`,
:func:`register_vmap`) supply the rules a built-in primitive has, and :func:`opcheck` tests
them. See docs/custom_ops.md.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ember.library.custom_op import CustomOpDef
from ember.library.fake_context import get_ctx
from ember.library.opcheck import OpCheckError, opcheck
from ember.library.registry import Library, custom_op, define, impl, lookup
from ember.library.schema import infer_schema

__all__ = ["CustomOpDef", "Library", "OpCheckError", "custom_op", "define", "get_ctx", "impl",
           "impl_abstract", "infer_schema", "opcheck", "register_autograd", "register_fake",
           "register_kernel", "register_vmap"]


def register_fake(op: str | CustomOpDef, func: Callable | None = None, /, *,
                  lib: Library | None = None, allow_override: bool = False) -> Callable:
    """Registers ``op``'s fake (shape) rule; see :meth:`CustomOpDef.register_fake`. (``lib``
    and ``allow_override`` are accepted for torch's signature: Ember keeps registrations for
    the process, and a new one replaces the old.)

    Example:
        >>> @ember.library.register_fake("mylib::numpy_sin")
        ... def _(x):
        ...     return ember.empty_like(x)
    """
    target = lookup(op)
    return target.register_fake if func is None else target.register_fake(func)


def impl_abstract(qualname: str | CustomOpDef, func: Callable | None = None, *,
                  lib: Library | None = None, _stacklevel: int = 1) -> Callable:
    """PyTorch's name of :func:`register_fake` before 2.4, kept (deprecated there: a
    FutureWarning) so older code runs.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     rule = ember.library.impl_abstract("mylib::numpy_sin", ember.empty_like)
    """
    warnings.warn("`ember.library.impl_abstract` was renamed to `ember.library.register_fake` "
                  "(as torch.library's in PyTorch 2.4). Please use that instead.",
                  FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


def register_autograd(op: str | CustomOpDef, backward: Callable, /, *,
                      setup_context: Callable | None = None, lib: Library | None = None) -> None:
    """Registers ``op``'s backward; see :meth:`CustomOpDef.register_autograd`.

    Example:
        >>> def backward(ctx, g):
        ...     x, = ctx.saved_tensors
        ...     return g * x.cos()
        >>> ember.library.register_autograd("mylib::numpy_sin", backward,
        ...     setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    """
    lookup(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op: str | CustomOpDef, device_types: str | Sequence[str],
                    func: Callable | None = None, /, *, lib: Library | None = None) -> Any:
    """Registers an implementation of ``op`` for device types; see
    :meth:`CustomOpDef.register_kernel`.

    Example:
        >>> @ember.library.register_kernel("mylib::numpy_sin", "cpu")
        ... def _(x):
        ...     return ember.from_numpy(np.sin(x.numpy()))
    """
    return lookup(op).register_kernel(device_types, func)


def register_vmap(op: str | CustomOpDef, func: Callable | None = None, /, *,
                  lib: Library | None = None) -> Any:
    """Registers ``op``'s batching rule; see :meth:`CustomOpDef.register_vmap`.

    Example:
        >>> @ember.library.register_vmap("mylib::numpy_sin")
        ... def _(info, in_dims, x):
        ...     return ember.ops.mylib.numpy_sin(x), in_dims[0]
    """
    return lookup(op).register_vmap(func)
