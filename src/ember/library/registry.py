"""The custom-op registry: :func:`custom_op`, :func:`define` and :func:`impl` make or find
ops by their ``"namespace::name"``, each registered as a primitive, with its batching rule,
and reachable as ``ember.ops.<namespace>.<name>``."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ember.errors import ArgumentError, OpError
from ember.library.batching import register_batching
from ember.library.custom_op import CustomOpDef, SchemaMismatch
from ember.library.schema import TENSOR, VALUE, Schema, parse, parse_schema
from ember.ops.overrides import TensorLikeOperand, handle
from ember.ops.primitive import replace_primitive

OPS: dict[str, CustomOpDef] = {}  # "namespace::name" -> its definition
_DECLARED: set[str] = set()  # the names define() declared (custom_op may not replace them)
_DEF_LIBRARIES: dict[str, weakref.ref] = {}  # namespace -> its live Library of kind DEF
_PENDING: dict[str, list[tuple[Any, Callable]]] = {}  # impl()s of ops not yet defined


def _taken(name: str) -> RuntimeError:
    """PyTorch's error for a second definition of an op's name."""
    return RuntimeError(f"Tried to register an operator ({OPS[name].schema}) with the same name "
                        "and overload name multiple times. Each overload's schema should only "
                        "be registered with a single call to def(). Hint: a custom_op may be "
                        "defined again under its name; a define()d op may not")


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Sequence[str] | None = None,
              schema: str | None = None, tags: Sequence[Any] | None = None) -> Any:
    """Makes a Python function an Ember op (``torch.library.custom_op``).

    The function takes tensors and scalars (with type hints, from which the schema comes) and
    returns a tensor, a list of tensors, a number, a tuple of those, or None. Its body may
    compute with Ember ops or with NumPy on ``x.numpy()``; it runs on plain tensors (no
    autograd, no tracing), so the op is opaque to transforms until its rules are registered
    on the result.

    Args:
        name: ``"namespace::name"``; the op is also ``ember.ops.namespace.name``.
        fn: the function (or use ``custom_op`` as a decorator).
        mutates_args: names of the tensor arguments the function writes into, or
            ``"unknown"``; other tensor arguments are read-only inside it.
        device_types: the device types (``"cpu"``, ``"cuda"``) ``fn`` implements; all when
            None.
        schema: PyTorch's schema string, used instead of the type hints (rarely needed).
        tags: accepted for torch's signature (Ember's ops have no tags).

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
                raise ArgumentError(f"Attempted to create a custom op with `mutates_args="
                                    f"{mutates_args}` and `schema={schema}. The schema suggests "
                                    f"that the op mutates {set(parsed.mutated)} which is "
                                    "different from what was provided to us in `mutates_args`.")
        if name in _DECLARED:
            raise _taken(name)
        return register(name, func, parsed, device_types)

    return make if fn is None else make(fn)


def define(qualname: str, schema: str, *, lib: Library | None = None,
           tags: Sequence[Any] = ()) -> CustomOpDef:
    """Declares an op from PyTorch's schema string, with no implementation yet
    (``torch.library.define``); :func:`impl` adds one. ``qualname`` may name an overload
    (``"mylib::op.Tensor"``); ``lib`` and ``tags`` are accepted for torch's signature.

    Example:
        >>> op = ember.library.define("mylib::twice", "(Tensor x) -> Tensor")
        >>> _ = ember.library.impl("mylib::twice", "cpu", lambda x: x * 2)
        >>> op(ember.ones(2))
        tensor([2., 2.])

    Defining a name again raises, as in PyTorch (an op a :class:`Library` defined goes with
    it: when the Library is freed, or by its ``_destroy()``).
    """
    if qualname in OPS:
        raise _taken(qualname)
    op = register(qualname, None, parse_schema(schema), None)
    _DECLARED.add(qualname)
    for types, fn in _PENDING.pop(qualname, ()):
        impl(op, types, fn)
    if lib is not None:
        lib._defined.append((qualname, op))
    return op


#: torch's dispatch keys as Ember's device types (None: every device; "Meta": the fake rule)
_DISPATCH_KEYS = {"cpu": "cpu", "cuda": "cuda", "CPU": "cpu", "CUDA": "cuda", "": None,
                  "CompositeExplicitAutograd": None, "CompositeImplicitAutograd": None,
                  "Meta": "Meta", "default": None}


def impl(qualname: str | CustomOpDef | Library, types: str | Sequence[str],
         func: Callable | str | None = None, /, *, lib: Library | None = None) -> Callable:
    """Registers ``func`` as the implementation of an op for device types or dispatch keys
    (``"cpu"``, ``"CUDA"``, ``"default"`` or ``"CompositeExplicitAutograd"`` for every
    device, ``"Meta"`` for its fake rule), as ``torch.library.impl``; usable as a decorator.
    The function runs on plain tensors, as a custom op's, so autograd needs
    ``register_autograd`` (even for ``"CompositeImplicitAutograd"``). ``lib`` is accepted for
    torch's signature; torch's older form ``impl(lib, "name", "CPU")`` is a decorator too.
    As in PyTorch, an op may be implemented before :func:`define` declares it."""
    if isinstance(qualname, Library):  # (torch's legacy impl(lib, name, dispatch_key))
        library, name, key = qualname, types, func or ""
        return lambda fn: (library.impl(name, fn, key), fn)[1]
    later = isinstance(qualname, str) and qualname not in OPS and "::" in qualname
    op = None if later else lookup(qualname)
    keys = (types,) if isinstance(types, str) else tuple(types)
    unknown = [k for k in keys if k not in _DISPATCH_KEYS]
    if unknown:
        raise NotImplementedError(f"impl {qualname}: dispatch key {unknown[0]!r} is not "
                                  f"supported; use one of {sorted(set(_DISPATCH_KEYS) - {''})}. "
                                  "Hint: a backward is registered with register_autograd")
    devices = [_DISPATCH_KEYS[k] for k in keys if k != "Meta"]

    def register(fn: Callable) -> Callable:
        if later:  # (kept until define() declares the op)
            _PENDING.setdefault(qualname, []).append((types, fn))
            return fn
        if "Meta" in keys:
            op.register_fake(fn)
        if any(devices):  # (each key its own: a "cpu" kernel beside a "default" one)
            op.register_kernel([d for d in devices if d], fn)
        if None in devices:
            op.register_kernel(None, fn)
        return fn

    return register if func is None else register(func)


class Library:
    """The ops of one namespace declared from schema strings and implemented one by one
    (``torch.library.Library``). ``kind`` is ``"DEF"`` or ``"FRAGMENT"`` (it defines ops)
    or ``"IMPL"`` (it only implements them); ``dispatch_key`` is :meth:`impl`'s default.

    Example:
        >>> lib = ember.library.Library("mylib", "FRAGMENT")
        >>> lib.define("plus_one(Tensor x) -> Tensor")
        'plus_one'
        >>> lib.impl("plus_one", lambda x: x + 1, "CPU")
        >>> ember.ops.mylib.plus_one(ember.zeros(2))
        tensor([1., 1.])
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ArgumentError(f"Unsupported kind: {kind}; expected 'DEF', 'IMPL' or 'FRAGMENT'")
        if kind == "DEF":
            other = _DEF_LIBRARIES.get(ns)
            if other is not None and other() is not None:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the "
                                   f"namespace {ns}; please put all of your definitions in a "
                                   "single TORCH_LIBRARY block. Hint: Library(ns, 'FRAGMENT') "
                                   "may be made many times")
            _DEF_LIBRARIES[ns] = weakref.ref(self)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._defined: list[tuple[str, CustomOpDef]] = []  # (the ops that go with it)
        self._finalizer = weakref.finalize(self, _forget_all, self._defined)

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def _destroy(self) -> None:
        """Removes the ops this Library defined (as freeing it does; PyTorch's)."""
        self._finalizer()
        if self.kind == "DEF" and _DEF_LIBRARIES.get(self.ns) is not None and \
                _DEF_LIBRARIES[self.ns]() is self:
            del _DEF_LIBRARIES[self.ns]

    def define(self, schema: str, alias_analysis: str = "", *, tags: Sequence[Any] = ()
               ) -> str:
        """Declares the op ``schema`` names (``"name(Tensor x) -> Tensor"``); returns the
        name. ``alias_analysis`` and ``tags`` are accepted for torch's signature."""
        if self.kind == "IMPL":
            raise RuntimeError(f"define({schema!r}): a Library of kind IMPL only implements "
                               f"ops. Hint: define them in a Library({self.ns!r}, 'FRAGMENT')")
        if not self._finalizer.alive:
            raise RuntimeError(f"define({schema!r}): this Library object has been destroyed")
        name, paren, signature = schema.partition("(")
        define(f"{self.ns}::{name.strip()}", paren + signature, lib=self)
        return name.strip()

    def impl(self, op_name: str, fn: Callable, dispatch_key: str = "", *,
             with_keyset: bool = False, allow_override: bool = True) -> None:
        """Registers ``fn`` for the op ``op_name`` (of this namespace, or
        ``"namespace::name"``) under ``dispatch_key`` (see :func:`impl`)."""
        if with_keyset:
            raise NotImplementedError("Library.impl: with_keyset=True is not supported; "
                                      "Ember's kernels take the op's arguments only")
        impl(op_name if "::" in op_name else f"{self.ns}::{op_name}",
             dispatch_key or self.dispatch_key, fn)


def register(name: str, func: Callable | None, schema: Schema,
             device_types: str | Sequence[str] | None) -> CustomOpDef:
    """Makes the op ``name`` (replacing an earlier one of that name, as PyTorch does): its
    primitive, batching rule and ``ember.ops`` attribute."""
    namespace, sep, op_name = name.partition("::")
    base, dot, overload = op_name.partition(".")
    if not sep or not namespace.isidentifier() or not base.isidentifier() or \
            (dot and (not overload.isidentifier() or overload == "default")):
        raise ArgumentError(f"custom_op: expected a name like 'mylib::my_op' or, for an "
                            f"overload, 'mylib::my_op.Tensor', got {name!r}")
    if namespace in ("aten", "prim", "prims"):
        raise ArgumentError(f"custom_op: the namespace {namespace!r} is reserved")
    if any(p.mutable and p.kind != TENSOR for p in schema.params):
        raise NotImplementedError(f"custom_op {name}: Ember mutates only plain Tensor "
                                  f"arguments, not optional or list ones: {schema.text}")
    if not schema.returns and not schema.mutated:
        raise ArgumentError(f"custom_op {name}: it returns nothing and mutates nothing")
    op = CustomOpDef(name, func, schema, device_types)
    _attach(namespace, op_name, op)
    if name in OPS:
        OPS[name]._replaced_by = op
    OPS[name] = op
    replace_primitive(op._prim)
    register_batching(op)
    return op


def _forget_all(defined: list[tuple[str, CustomOpDef]]) -> None:
    """Removes the ops of a freed (or destroyed) Library, unless defined again since."""
    import ember.ops

    for name, op in defined:
        if OPS.get(name) is not op:
            continue
        del OPS[name]
        _DECLARED.discard(name)
        namespace, _, op_name = name.partition("::")
        base, _, overload = op_name.partition(".")
        space = getattr(ember.ops, namespace)
        current = getattr(space, base, None)
        if isinstance(current, OpPacket):
            current._remove(overload or "default")
            if not current._overloads:
                delattr(space, base)
        elif current is op:
            delattr(space, base)
    defined.clear()


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
        raise ArgumentError(f"custom_op: the namespace {namespace!r} clashes with ember.ops."
                            f"{namespace}; pick another namespace")
    base, _, overload = name.partition(".")
    current = getattr(space, base, None)
    if not overload and not isinstance(current, OpPacket):
        setattr(space, base, op)
        return
    if not isinstance(current, OpPacket):
        current = OpPacket(f"{namespace}::{base}", {} if current is None else {"default": current})
        setattr(space, base, current)
    current._add(overload or "default", op)


class OpPacket:
    """``ember.ops.<namespace>.<name>`` of an op defined with overloads (``"mylib::op.Tensor"``,
    as ``torch.ops``' OpOverloadPacket): each overload is an attribute (``.default``,
    ``.Tensor``), and a call runs the first, default first, whose schema takes the arguments.

    Example:
        >>> _ = ember.library.define("mylib::shift", "(Tensor x, float s) -> Tensor")
        >>> _ = ember.library.define("mylib::shift.Tensor", "(Tensor x, Tensor s) -> Tensor")
        >>> ember.ops.mylib.shift.overloads()
        ['default', 'Tensor']
    """

    def __init__(self, qualname: str, overloads: dict[str, CustomOpDef]) -> None:
        self._qualname, self._overloads = qualname, {}
        for name, op in overloads.items():
            self._add(name, op)
        self._qualified_name = "ember.ops." + qualname.replace("::", ".")  # (for ember.fx)

    def __repr__(self) -> str:
        return f"<OpPacket({self._qualname}, overloads={self.overloads()})>"

    def __getattr__(self, name: str) -> CustomOpDef:
        overloads = self.__dict__.get("_overloads", {})
        if name not in overloads:
            raise AttributeError(f"{self.__dict__.get('_qualname')} has no overload {name!r}; "
                                 f"it has {list(overloads)}")
        return overloads[name]

    def _add(self, name: str, op: CustomOpDef) -> None:
        """Registers overload ``name``; calls try the default first, then the others in the
        order they were defined."""
        self._overloads[name] = op
        self._tried = sorted(self._overloads.values(), key=lambda o: "." in o.qualname)

    def _remove(self, name: str) -> None:
        self._overloads.pop(name, None)
        self._tried = [op for op in self._tried if op in self._overloads.values()]

    def overloads(self) -> list[str]:
        """The overload names, ``"default"`` for the one without a name."""
        return list(self._overloads)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for op in self._tried:
            try:
                values = op.bind(args, kwargs)
                inputs, layout = op.split(values)
            except TensorLikeOperand:  # (ember.fx records the call to the packet, resolved
                return handle(self, args, kwargs)  # when the graph runs, as torch.fx)
            except (TypeError, SchemaMismatch):  # (bind's TypeError: not its parameters)
                continue
            return op.call_split(values, inputs, layout)
        schemas = "\n".join(op.schema for op in self._tried)
        raise OpError(f"Overloaded op {self._qualname} was called with arguments that match "
                      f"none of its schemas:\n{schemas}")


def lookup(op: str | CustomOpDef | OpPacket) -> CustomOpDef:
    """The definition of a custom op given as itself, by its ``"namespace::name"`` (an
    overload's ``"namespace::name.overload"``), or as an op with overloads when it has only
    one (an op with several must name which: ``ember.ops.ns.name.Tensor``)."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpPacket):
        if len(op._overloads) != 1:
            raise ArgumentError(f"{op._qualname} has the overloads {op.overloads()}; pass one "
                                f"of them, e.g. ember.ops.{op._qualname.replace('::', '.')}."
                                f"{op.overloads()[0]}")
        return next(iter(op._overloads.values()))
    if op not in OPS:
        raise ArgumentError(f"{op!r} is not a custom op defined with ember.library.custom_op")
    return OPS[op]
