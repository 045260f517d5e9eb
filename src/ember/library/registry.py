"""The custom-op registry: :func:`custom_op`, :func:`define` and :func:`impl` make or find
ops by their ``"namespace::name"``, each registered as a primitive, with its batching rule,
and reachable as ``ember.ops.<namespace>.<name>``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember.library.batching import register_batching
from ember.library.custom_op import CustomOpDef
from ember.library.schema import TENSOR, VALUE, Schema, parse, parse_schema
from ember.ops.primitive import replace_primitive

OPS: dict[str, CustomOpDef] = {}  # "namespace::name" -> its definition


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Sequence[str] | None = None,
              schema: str | None = None) -> Any:
    """Makes a Python function an Ember op (``torch.library.custom_op``).

    The function takes tensors and scalars (with type hints, from which the schema comes) and
    returns a tensor, a tuple of tensors, or None. Its body may compute with Ember ops or
    with NumPy on ``x.numpy()``; it runs on plain tensors (no autograd, no tracing), so the
    op is opaque to transforms until its rules are registered on the result.

    Args:
        name: ``"namespace::name"``; the op is also ``ember.ops.namespace.name``.
        fn: the function (or use ``custom_op`` as a decorator).
        mutates_args: names of the tensor arguments the function writes into, or
            ``"unknown"``; other tensor arguments are read-only inside it.
        device_types: the device types (``"cpu"``, ``"cuda"``) ``fn`` implements; all when
            None.
        schema: PyTorch's schema string, used instead of the type hints (rarely needed).

    Example:
        >>> @ember.library.custom_op("mylib::numpy_sin", mutates_args=())
        ... def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        ...     return ember.from_numpy(np.sin(x.numpy()))
        >>> numpy_sin(ember.zeros(2))
        tensor([0., 0.])
    """
    def make(func: Callable) -> CustomOpDef:
        if schema is None:
            parsed = parse(func, mutates_args)
        else:
            parsed = parse_schema(schema)
            declared = {p.name for p in parsed.params if p.kind != VALUE} \
                if mutates_args == "unknown" else set(mutates_args)
            if declared != set(parsed.mutated):
                raise ValueError(f"Attempted to create a custom op with `mutates_args="
                                 f"{mutates_args}` and `schema={schema}. The schema suggests "
                                 f"that the op mutates {set(parsed.mutated)} which is "
                                 "different from what was provided to us in `mutates_args`.")
        return register(name, func, parsed, device_types)

    return make if fn is None else make(fn)


def define(qualname: str, schema: str) -> CustomOpDef:
    """Declares an op from PyTorch's schema string, with no implementation yet
    (``torch.library.define``); :func:`impl` adds one.

    Example:
        >>> op = ember.library.define("mylib::twice", "(Tensor x) -> Tensor")
        >>> _ = ember.library.impl("mylib::twice", "cpu", lambda x: x * 2)
        >>> op(ember.ones(2))
        tensor([2., 2.])
    """
    return register(qualname, None, parse_schema(schema), None)


def impl(qualname: str | CustomOpDef, types: str | Sequence[str],
         func: Callable | None = None, /) -> Callable:
    """Registers ``func`` as the implementation of an op for device types (``"cpu"``,
    ``"cuda"``), as ``torch.library.impl``; usable as a decorator."""
    return lookup(qualname).register_kernel(types, func)


def register(name: str, func: Callable | None, schema: Schema,
             device_types: str | Sequence[str] | None) -> CustomOpDef:
    """Makes the op ``name`` (replacing an earlier one of that name, as PyTorch does): its
    primitive, batching rule and ``ember.ops`` attribute."""
    namespace, sep, op_name = name.partition("::")
    if not sep or not namespace.isidentifier() or not op_name.isidentifier():
        raise ValueError(f"custom_op: expected a name like 'mylib::my_op', got {name!r}")
    if namespace in ("aten", "prim", "prims"):
        raise ValueError(f"custom_op: the namespace {namespace!r} is reserved")
    if any(p.mutable and p.kind != TENSOR for p in schema.params):
        raise NotImplementedError(f"custom_op {name}: Ember mutates only plain Tensor "
                                  f"arguments, not optional or list ones: {schema.text}")
    if schema.returns == 0 and not schema.mutated:
        raise ValueError(f"custom_op {name}: it returns nothing and mutates nothing")
    op = CustomOpDef(name, func, schema, device_types)
    _attach(namespace, op_name, op)
    OPS[name] = op
    replace_primitive(op._prim)
    register_batching(op)
    return op


class OpNamespace:
    """``ember.ops.<namespace>``: the custom ops of one namespace, as attributes."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<ember.ops.{self._name}>"


def _attach(namespace: str, name: str, op: CustomOpDef) -> None:
    import ember.ops

    space = getattr(ember.ops, namespace, None)
    if space is None:
        space = OpNamespace(namespace)
        setattr(ember.ops, namespace, space)
    elif not isinstance(space, OpNamespace):
        raise ValueError(f"custom_op: the namespace {namespace!r} clashes with ember.ops."
                         f"{namespace}; pick another namespace")
    setattr(space, name, op)


def lookup(op: str | CustomOpDef) -> CustomOpDef:
    """The definition of a custom op given as itself or by its ``"namespace::name"``."""
    if isinstance(op, CustomOpDef):
        return op
    if op not in OPS:
        raise ValueError(f"{op!r} is not a custom op defined with ember.library.custom_op")
    return OPS[op]

