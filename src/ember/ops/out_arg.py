"""PyTorch's ``out=`` keyword: an op's result written into tensors the caller gives.

The ops themselves know nothing of ``out``: :func:`add_out_arguments` wraps the functions of a
namespace (``ember``, ``ember.linalg``, ``ember.special``, ``ember.fft``) whose PyTorch
counterparts take ``out=``, where that namespace is assembled; the names are listed in
:mod:`ember.ops.out_names`. Tensor methods and operators (``a + b``, ``a.add(b)``) call the
ops directly, so they never pass through the wrapper; a call without ``out`` costs one
generated frame with the op's own parameters and an ``is None`` test (about 40 ns; see
:mod:`ember.ops.forwarding`, which also hands tensor-like operands over there).

With ``out``, the op computes its result as usual, then it is written into ``out`` as by
``out.copy_(result)`` (the version counter moves; a non-contiguous ``out`` is written through).
PyTorch's rules apply: ``out`` of another shape is resized (with a ``UserWarning`` when it had
elements), the result's dtype must cast to ``out``'s under :func:`ember.can_cast`, ``out``
must be on the result's device, and no argument may require grad while grad mode is on.
Where PyTorch is stricter, so is Ember, by the tables of :mod:`ember.ops.out_names`: ``EXACT``
ops (``mm``, ``sort``, ``gather``, ``clamp``, most of ``linalg``) write only into outs of
exactly their results' dtypes (a sort's indices only into int64; ``EXACT_IF`` ones when
their first argument is of a kind), ``REAL`` ones (``nansum``, ``fft.irfft``, ``arange``)
never into a complex out. Factories (``zeros``, ``randn``, ``arange``) take their dtype and
device from ``out`` when not given, and reductions with ``dtype=`` (but ``EXACT`` ones)
accumulate in a floating ``out``'s dtype, as PyTorch's do.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ember import return_types
from ember.autograd.grad_mode import GRAD, refuse_inference_write
from ember.dtypes import promote_types
from ember.errors import DeviceError, DTypeError, GradError, OpError, ShapeError, type_name
from ember.layouts import channels_last, channels_last_3d, format_of
from ember.ops.creation import empty
from ember.ops.forwarding import forwarder
from ember.ops.numpy_names import takes_numpy_names
from ember.ops.out_names import EXACT, EXACT_IF, REAL
from ember.ops.overrides import handler_of
from ember.ops.primitive import DISPATCH, not_casting
from ember.tensor import Tensor
from ember.type_info import can_cast

__all__ = ["with_out", "add_out_arguments"]

# PyTorch's names of the dtypes (c10::ScalarType), which its out= errors show
_TORCH_DTYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                      "float64": "Double", "complex64": "ComplexFloat",
                      "complex128": "ComplexDouble", "int8": "Char", "int16": "Short",
                      "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool"}


def with_out(fn: Callable[..., Any], name: str | None = None, *, exact: str = "",
             real: bool = False, numpy_names: bool = False) -> Callable[..., Any]:
    """``fn`` taking PyTorch's keyword ``out=``: a tensor (a tuple of tensors for an op that
    returns several) that receives the result and is returned.

    Args:
        fn: an op returning a tensor or a tuple (or named tuple) of tensors.
        name: the op's name in error messages (default ``fn.__name__``).
        exact: every out must have exactly its result's dtype (else: ``can_cast``), for
            any inputs (``"any"``) or when the first tensor argument is ``"real"`` (not
            complex) or ``"floating"``; ``""``: never.
        real: out may not be complex.
        numpy_names: also take NumPy's ``axis``/``keepdims`` for ``dim``/``keepdim``
            (:mod:`ember.ops.numpy_names`).

    Returns:
        A function with ``fn``'s signature plus a keyword-only ``out=None``.

    Example:
        >>> from ember.ops.arithmetic import add
        >>> add_into = with_out(add)
        >>> c = ember.empty(2)
        >>> add_into(ember.tensor([1.0, 2.0]), 1.0, out=c) is c, c
        (True, tensor([2., 3.]))
    """
    op = name or fn.__name__
    signature = inspect.signature(fn)
    params = signature.parameters
    # a factory (it takes both) makes its result with out's dtype and device, a reduction
    # (sum(x, dtype=)) accumulates in a floating out's dtype, when not given (see _accumulates_in)
    keys = ("dtype", "device") if "device" in params else () if exact else ("dtype",)
    defaults = {key: _position(signature, key) for key in keys if key in params}

    def into(out: Any, *args: Any, **kwargs: Any) -> Any:
        return _call_into(fn, op, defaults, (exact, real), out, args, kwargs)

    _out_form = functools.update_wrapper(forwarder(fn, signature, into, numpy_names), fn)
    _out_form._numpy_names = numpy_names
    out_param = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None,
                                  annotation="Tensor | tuple[Tensor, ...] | None")
    listed = list(params.values())
    at = next((i for i, p in enumerate(listed) if p.kind is inspect.Parameter.VAR_KEYWORD),
              len(listed))
    _out_form.__signature__ = signature.replace(parameters=[*listed[:at], out_param, *listed[at:]])
    return _out_form


def add_out_arguments(namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Replaces each function ``names`` lists in ``namespace`` (a module's ``globals()``) by
    its :func:`with_out` form: one per function, so aliases stay one object in every namespace
    (``ember.arcsin is ember.asin``, ``ember.special.gammainc is ember.igamma``; an alias's
    dtype rules are its first namespace's, the same in each)."""
    prefix = namespace["__name__"].removeprefix("ember").lstrip(".")
    for name in names:
        fn, qualified = namespace[name], f"{prefix}.{name}" if prefix else name
        if fn not in _OUT_FORMS:
            exact = EXACT_IF.get(qualified, "any" if qualified in EXACT else "")
            form = _OUT_FORMS[fn] = with_out(fn, exact=exact, real=qualified in REAL,
                                             numpy_names=takes_numpy_names(qualified, fn))
            # pickle finds a function by module and name: this namespace's, where the form is
            form.__module__, form.__qualname__ = namespace["__name__"], name
        namespace[name] = _OUT_FORMS[fn]


_OUT_FORMS: dict[Callable[..., Any], Callable[..., Any]] = {}  # function -> its with_out form


def _position(signature: inspect.Signature, key: str) -> int | None:
    """Where ``key`` may come positionally (None: keyword only)."""
    positional = [name for name, p in signature.parameters.items()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional.index(key) if key in positional else None


def _call_into(fn: Callable[..., Any], op: str, defaults: dict[str, int | None],
               rules: tuple[str, bool], out: Any, args: tuple, kwargs: dict) -> Any:
    outs = (out,) if isinstance(out, Tensor) else out
    if not isinstance(outs, (tuple, list)) or not all(isinstance(o, Tensor) for o in outs):
        handler = handler_of((out,))
        if getattr(handler, "takes_out", False):  # (a tensor-like out its class fills)
            return handler(fn, args, {**kwargs, "out": out})
        raise TypeError(f"{op}(): out must be a Tensor or a tuple of Tensors, got "
                        f"{type_name(out)}")
    for o in outs:
        if o._vc.inference and not GRAD.inference:
            refuse_inference_write(o, f"{op}(out=...)")
    inputs, listed = _tensor_arguments(args, kwargs)
    if GRAD.enabled and any(t.requires_grad for t in (*inputs, *listed, *outs)):
        raise GradError(f"{op}(): functions with out=... arguments don't support automatic "
                        "differentiation, but one of the arguments requires grad. Hint: call "
                        "it under ember.no_grad(), or without out=")
    for i, o in enumerate(outs):
        _refuse_overlap(op, o, inputs, listed)
        for j, other in enumerate(outs[:i]):
            if _share_memory(o, other):
                raise OpError(f"{op}(): out[{j}] and out[{i}] share memory, so one result "
                              "would overwrite the other. Hint: give separate tensors")
    if isinstance(out, Tensor):
        for key, index in defaults.items():
            given = kwargs[key] if index is None else args[index]
            if key == "dtype" and given is not None and given != out.dtype:
                raise DTypeError(f"{op}(): dtype {torch_dtype_name(given)} does not match out's "
                                 f"dtype {torch_dtype_name(out.dtype)}. Hint: leave dtype out, "
                                 "out's is used")
            if given is None and (key == "device" or "device" in defaults
                                  or _accumulates_in(out.dtype, inputs)):
                value = getattr(out, key)
                if index is None:
                    kwargs[key] = value
                else:
                    args = (*args[:index], value, *args[index + 1:])
    # (autocast leaves out= ops alone, as PyTorch's)
    result = not_casting(lambda: fn(*args, **kwargs))
    if not isinstance(result, (Tensor, tuple, list)):  # (hspmm's sparse tensor, fx's Proxy)
        raise TypeError(f"{op}(): out= takes dense tensor results, and this call returns a "
                        f"{type(result).__name__} (a sparse result, or an fx trace's value). "
                        "Hint: call it without out= and use the result")
    results = (result,) if isinstance(result, Tensor) else result
    if isinstance(result, Tensor) != isinstance(out, Tensor) or len(results) != len(outs):
        want = "a Tensor" if isinstance(result, Tensor) else f"a tuple of {len(results)} Tensors"
        raise TypeError(f"{op}(): out must be {want}, got {_describe(out)}")
    exact, real = rules
    exact_now = exact == "any" or exact in _KINDS and _KINDS[exact](inputs[0].dtype)
    for i, (o, r) in enumerate(zip(outs, results, strict=True)):  # (all before any write)
        where = "out" if isinstance(out, Tensor) else f"out[{i}]"
        _check_rules(op, where, o, r, exact_now, real)
        if 0 in o._data.strides and o.shape == r.shape and o._data.size and \
                any(n > 1 and s == 0 for n, s in zip(o.shape, o.stride())):
            # (a stride-0 out, empty_strided's: its elements would overwrite each other)
            raise OpError(f"{op}(): unsupported operation: more than one element of {where} "
                          f"(shape {tuple(o.shape)}, strides {tuple(o.stride())}) refers to a "
                          "single memory location. Hint: clone() it first")
    for o, r in zip(outs, results, strict=True):
        _write(op, o, r)
    if isinstance(out, Tensor):
        return out
    if hasattr(result, "_fields"):  # (``max_out`` for ``max``'s named tuple, as PyTorch's)
        return getattr(return_types, f"{type(result).__name__}_out", type(result))(*outs)
    return tuple(outs)


_KINDS: dict[str, Callable[[Any], bool]] = {"real": lambda d: not d.is_complex,
                                            "floating": lambda d: d.is_floating_point}


def _check_rules(op: str, where: str, out: Tensor, result: Tensor, exact: bool,
                 real: bool) -> None:
    """PyTorch's rules stricter than ``can_cast`` (see :mod:`ember.ops.out_names`)."""
    if exact and out.dtype != result.dtype:
        raise DTypeError(f"{op}(): expected {where} to have dtype "
                         f"{torch_dtype_name(result.dtype)}, but got "
                         f"{torch_dtype_name(out.dtype)} instead: as PyTorch's, {op} writes only "
                         f"into an out of its result's dtype. Hint: give an out of dtype "
                         f"ember.{result.dtype.name}, or call it without out= and cast the result")
    if real and out.dtype.is_complex:
        raise DTypeError(f"{op}(): expected {where} to have a real dtype such as "
                         f"{torch_dtype_name(result.dtype.to_real())}, but got "
                         f"{torch_dtype_name(out.dtype)} instead: as PyTorch's, {op} writes no "
                         "complex out. Hint: give a real out, or call it without out= and cast "
                         "the result")


def _accumulates_in(dtype: Any, inputs: list[Tensor]) -> bool:
    """Whether a reduction (``sum``, ``cumsum``, ``mean``: a function with ``dtype=``)
    computes in ``out``'s dtype, as PyTorch's do: when it is floating and holds every input
    (an integer out would truncate each element first, a silent wrong answer; a narrower one
    some reductions refuse: such outs take the result's cast, refused for a float result into
    an integer out)."""
    return dtype.is_floating_point and all(promote_types(t.dtype, dtype) == dtype
                                           for t in inputs)


def _tensor_arguments(args: tuple, kwargs: dict) -> tuple[list[Tensor], list[Tensor]]:
    """The tensor arguments, and the tensors inside list or tuple arguments (``cat``'s)."""
    inputs, listed = [], []
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            inputs.append(a)
        elif isinstance(a, (tuple, list)):
            listed.extend(t for t in a if isinstance(t, Tensor))
    return inputs, listed


def _refuse_overlap(op: str, out: Tensor, inputs: list[Tensor], listed: list[Tensor]) -> None:
    """PyTorch's rule: ``out`` may be an input itself (``add(a, b, out=a)``), but not share
    only part of its memory, nor be any part of a list argument (``cat``'s)."""
    for i, t in enumerate((*inputs, *listed)):
        if not _share_memory(t, out):
            continue
        if i >= len(inputs) or (t.data_ptr(), t.shape, t.stride()) != \
                (out.data_ptr(), out.shape, out.stride()):
            raise OpError(f"{op}(): unsupported operation: some elements of an input "
                          f"(shape {tuple(t.shape)}) and out (shape {tuple(out.shape)}) refer to "
                          "a single memory location. Hint: clone() the input first")


def _share_memory(a: Tensor, b: Tensor) -> bool:
    return a.device == b.device and not a.is_meta and \
        a._device.xp.may_share_memory(a._data, b._data)


def _write(op: str, out: Tensor, result: Tensor) -> None:
    if out.device != result.device:
        raise DeviceError(f"{op}(): expected out tensor to have device {result.device}, but "
                          f"got {out.device} instead")
    if not can_cast(result.dtype, out.dtype):
        raise DTypeError(f"{op}(): result type {torch_dtype_name(result.dtype)} can't be cast "
                         f"to the desired output type {torch_dtype_name(out.dtype)}")
    if out.shape != result.shape:
        if DISPATCH.transforming():  # (the profiler or autocast alone: resized eagerly)
            raise ShapeError(f"{op}(): out has shape {list(out.shape)}, the result "
                             f"{list(result.shape)}: inside jit, vmap or forward mode, out must "
                             "have the result's shape (resizing it cannot be traced)")
        if out.numel():
            warnings.warn(f"{op}(): an output with one or more elements was resized since it "
                          f"had shape {list(out.shape)}, which does not match the required "
                          f"output shape {list(result.shape)}. As in PyTorch, this is "
                          "deprecated: resize it to zero elements first (out.resize_(0)) to "
                          "reuse it", UserWarning, stacklevel=4)
        if out.device.type == "cpu":
            # PyTorch's resized out takes the result's layout: a channels-last result's
            fmt = format_of(result)
            out.resize_(result.shape, memory_format=fmt if fmt in _NAMED else None)
        else:  # (resize_ reads strided memory, which only the CPU backend exposes)
            out.set_(empty(result.shape, dtype=out.dtype, device=out.device))
    out.copy_(result)


_NAMED = (channels_last, channels_last_3d)


def torch_dtype_name(dtype: Any) -> str:
    """PyTorch's C++ name of a dtype in its error messages (``Float``, ``Half``, ``Long``)."""
    return _TORCH_DTYPE_NAMES.get(dtype.name, dtype.name)


def _describe(out: Any) -> str:
    return "a Tensor" if isinstance(out, Tensor) else f"a {type(out).__name__} of {len(out)}"
