""":class:`Proxy`: the stand-in for a value while :func:`~ember.fx.symbolic_trace` runs a
``forward``; everything done to it becomes a node of the graph.

Operators and tensor methods are recorded by the proxy's own methods. Ember's functions
(``ember.relu(p)``, ``F.softmax(p, -1)``) reach it through :mod:`ember.ops.overrides`: the
proxy class is registered as tensor-like, so a function that supports tensor-like operands
hands the call to :func:`_record_call`; reading a proxy's tensor internals from Ember's core
raises :class:`ProxyOperand`, which is that hand-over signal, and the error the user sees from
the functions that do not support tensor-like operands.
"""

from __future__ import annotations

import dis
import inspect
import operator
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ember.fx.node import Node, parameters_of
from ember.ops.overrides import TensorLikeOperand, outermost_op, register

if TYPE_CHECKING:
    from ember.fx.tracer import Tracer

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "ProxyOperand"]

CONTROL_FLOW_HINT = ("Hint: a value that decides the control flow cannot be symbolic; pass it "
                     "as concrete_args={name: value} to symbolic_trace (the graph is then "
                     "specialized to that value), or move the code into a leaf module or a "
                     "function made opaque with ember.fx.wrap")

#: the modules whose reads of a proxy's tensor attributes mean "an op met a tensor-like"
_CORE = ("ember.ops.", "ember.dtypes", "ember.tensor", "ember.autograd", "ember.backend",
         "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft", "ember.size",
         "ember.layouts", "ember.random")


class TraceError(ValueError):
    """A traced value was used where a concrete one is needed (control flow, iteration of
    unknown length, conversion to a number)."""


class ProxyOperand(TensorLikeOperand):
    """An Ember function that does not take proxies was called with one."""

    def __str__(self) -> str:
        op = outermost_op(self.__traceback__)
        return (f"{op}: this Ember function does not take ember.fx Proxy objects, so "
                f"symbolic tracing cannot record the call. Hint: call "
                f"ember.fx.wrap('{op}') at the top level of the module that calls it (the call "
                f"is then recorded as one node), or make the submodule that calls it a leaf "
                f"(Tracer.is_leaf_module)")


class Proxy:
    """A symbolic value: the node that computes it and the tracer recording the graph.

    Example:
        >>> gm = ember.fx.symbolic_trace(lambda x: (x + 1).relu())
        >>> print(gm.code)
        def forward(self, x):
            add = x + 1;  x = None
            relu = add.relu();  add = None
            return relu
        <BLANKLINE>
    """

    def __init__(self, node: Node, tracer: Tracer) -> None:
        self.node, self.tracer = node, tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if sys._getframe(1).f_globals.get("__name__", "").startswith(_CORE):
            raise ProxyOperand(name)
        return Attribute(self, name)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise ProxyOperand("__array__")

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        frame = sys._getframe(1)
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                return iter([self[i] for i in range(inst.argval)])
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Any:
        """``proxy.keys()``; through :meth:`Tracer.keys`, which ``**proxy`` calls too."""
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def _concrete(self, kind: str) -> Any:
        raise TraceError(f"{kind}() of the traced value {self.node.name}: its value is not known "
                         f"while tracing. {CONTROL_FLOW_HINT}")

    def __int__(self) -> int:
        return self._concrete("int")

    def __float__(self) -> float:
        return self._concrete("float")

    def __index__(self) -> int:
        return self._concrete("index")

    __hash__ = object.__hash__


class Attribute(Proxy):
    """``proxy.name``: a ``call_method`` node when called, else a ``getattr`` node (made when
    first used as a value)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


def _binary(fn: Callable) -> tuple[Callable, Callable]:
    def forward(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (self, other), {})

    def reflected(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (other, self), {})

    return forward, reflected


def _unary(fn: Callable) -> Callable:
    def method(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (self,), {})
    return method


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
              "or", "xor", "lshift", "rshift"):
    _fn = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    _fwd, _ref = _binary(_fn)
    setattr(Proxy, f"__{_name}__", _fwd)
    setattr(Proxy, f"__r{_name}__", _ref)
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(getattr(operator, _name))[0])
for _name in ("neg", "pos", "invert", "abs"):
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))


def _setitem(self: Proxy, key: Any, value: Any) -> None:
    """``x[key] = value``: an ``operator.setitem`` node (kept by dead-code elimination)."""
    self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


Proxy.__setitem__ = _setitem  # type: ignore[attr-defined]


def _record_call(op: Callable, args: tuple, kwargs: dict) -> Proxy:
    """The ``overrides`` handler: ``op(*args, **kwargs)`` as a ``call_function`` node."""
    tracer = next(x.tracer for a in args
                  for x in (a if isinstance(a, (list, tuple)) else (a,)) if isinstance(x, Proxy))
    written = tracer._call_form(op, args, kwargs)
    if written is not None:
        return tracer.create_proxy("call_function", *written)
    return tracer.create_proxy("call_function", tracer.public_form(op),
                               *_without_defaults(op, args, kwargs))


def _without_defaults(op: Callable, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The call as a user writes it: an op hands over all its arguments, so those equal to
    their defaults are dropped (the positional ones after the first dropped go by keyword)."""
    params = parameters_of(op)
    if params is None:
        return args, kwargs
    kept: list[Any] = []
    by_keyword: dict[str, Any] = {}
    dropped = False
    for i, value in enumerate(args):
        p = params[i] if i < len(params) else None
        if p is None or p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return args, kwargs
        if _is_default(value, p.default):
            dropped = True
        elif not dropped:
            kept.append(value)
        elif p.kind is p.POSITIONAL_ONLY:
            return args, kwargs
        else:
            by_keyword[p.name] = value
    defaults = {p.name: p.default for p in params}
    by_keyword.update({k: v for k, v in kwargs.items()
                       if not _is_default(v, defaults.get(k, inspect.Parameter.empty))})
    return tuple(kept), by_keyword


def _is_default(value: Any, default: Any) -> bool:
    return value is default and default is not inspect.Parameter.empty or \
        type(value) is type(default) and isinstance(value, (type(None), bool, int, float, str)) \
        and value == default


class ParameterProxy(Proxy):
    """A parameter's proxy under ``Tracer(param_shapes_constant=True)``: its ``shape``,
    ``size()``, ``dim()``, ``ndim``, ``numel()`` and ``nelement()`` are the parameter's own
    values, not traced, as torch.fx's.

    Example:
        >>> class Scale(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = ember.nn.Parameter(ember.ones(3))
        ...     def forward(self, x):
        ...         return x * self.w.shape[0]
        >>> g = ember.fx.Tracer(param_shapes_constant=True).trace(Scale())
        >>> [n.format_node() for n in g.nodes][2]
        '%mul : [num_users=1] = call_function[target=operator.mul](args = (%x, 3), kwargs = {})'
    """

    def __init__(self, node: Node, tracer: Tracer, param: Any) -> None:
        super().__init__(node, tracer)
        self.param = param

    @property
    def shape(self) -> Any:
        return self.param.shape

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def size(self, dim: int | None = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.numel()


register(Proxy, _record_call)
register(Attribute, _record_call)
register(ParameterProxy, _record_call)
