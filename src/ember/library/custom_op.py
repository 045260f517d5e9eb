"""``ember.library.custom_op``: a user's function becomes an Ember primitive (PyTorch's
``torch.library.custom_op``).

The op is one :class:`CustomOpPrimitive` in the registry, so every transform handles it as
it handles a built-in op: eager execution runs the user's kernel on plain (no-grad, untraced)
tensors around the input arrays; ``ember.jit`` records it as one equation whose output specs
come from the fake rule (its ``infer``); autograd records one node whose vjp is the
registered backward; ``vmap`` runs the registered batching rule, or the op once per sample.
An op that mutates arguments is functional inside: the primitive returns the new values of
the mutated tensors as extra outputs, which are then written in place as Ember's in-place
ops write (version counter, views, transforms), PyTorch's functionalization.
"""

from __future__ import annotations

import functools
import numbers
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ember.autograd.function import FunctionCtx
from ember.autograd.grad_mode import no_grad
from ember.autograd.graph import Node
from ember.backend import device as get_device
from ember.dtypes import DType
from ember.errors import EmberError, GradError, OpError, type_name
from ember.library import outputs
from ember.library.fake_context import call_fake
from ember.library.kernels import (
    device_of,
    device_type_list,
    kernel_error,
    read_only,
    shares_memory,
)
from ember.library.schema import (
    OPTIONAL_TENSOR,
    OPTIONAL_TENSOR_LIST,
    TENSOR,
    TENSOR_LIST,
    VALUE,
    Param,
    Schema,
)
from ember.ops.inplace import inplace
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, handle
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply
from ember.tensor import Tensor, _wrap

_CTXS: weakref.WeakKeyDictionary[Node, CustomOpCtx] = weakref.WeakKeyDictionary()
# a schema type: (the values it takes, the Python type the kernel gets them as: PyTorch's)
_VALUE_TYPES = {"SymInt": (numbers.Integral, int), "float": (numbers.Real, float),
                "bool": ((bool, np.bool_), bool), "str": (str, str),
                "Scalar": ((int, float, bool), None), "ScalarType": (DType, None)}


class SchemaMismatch(OpError):
    """An argument's type does not match the op's schema: an overloaded op tries its next
    overload on this error only (a transform's error, such as jit's on ``item()``, is the
    user's)."""


class ReplacedOpError(OpError, AssertionError):
    """A registration through the handle of an op defined again since: it would reach no
    call (an AssertionError as PyTorch's "Library object has been destroyed")."""


class CustomOpCtx(FunctionCtx):
    """The ``ctx`` of one recorded call: ``autograd.Function``'s (``save_for_backward``,
    ``saved_tensors``, ``needs_input_grad``, ``set_materialize_grads``), plus the output specs
    that materialize missing output gradients as zeros."""

    def __init__(self, name: str, needs_input_grad: tuple[bool, ...], out_specs: list) -> None:
        super().__init__(name, needs_input_grad)
        self.out_specs = out_specs


class CustomOpPrimitive(Primitive):
    """The primitive of one custom op; its rules defer to the :class:`CustomOpDef`."""

    save_inputs = False  # backward reads what setup_context saved on its ctx
    complex_grad = True  # (the user's backward, trusted on complex tensors as in PyTorch)
    infer_mismatch = ("its fake impl (register_fake) disagrees with its implementation. "
                      "Hint: fix the fake impl; ember.library.opcheck tests it")

    def __init__(self, op: CustomOpDef, lens: tuple[int, ...]) -> None:
        self.op = op
        self.name = op.qualname
        self.lens = lens  # (the lengths of its list outputs: one primitive per lengths)
        self.nret = outputs.count(op._schema.returns, lens)  # (the returned outputs, then
        self.nout = self.nret + len(op._schema.mutated)  # the mutated arguments' new values)
        self.numbers = op._number_outputs(lens)  # (the returned numbers' positions)
        base, _, overload = op._name.partition(".")
        self.backward_name = \
            f"GeneratedBackwardFor_{op._namespace}_{base}_{overload or 'default'}Backward"

    def forward(self, xp: Any, *arrays: Any, args: tuple, counts: tuple,
                lens: tuple = ()) -> Any:
        return self.op._run_kernel(xp, arrays, (args, counts), lens)

    def infer(self, *specs: TensorSpec, args: tuple, counts: tuple, lens: tuple = ()) -> Any:
        return self.op._infer(specs, (args, counts))[0]

    def vjp(self, ctx: Node, *grads: Tensor | None) -> tuple:
        return self.op._vjp(ctx, grads, self)

    def jvp(self, ctx: Node, *tangents: Tensor | None) -> Any:
        raise GradError(f"{self.name}: custom ops have no forward-mode (jvp) rule, as in "
                        "PyTorch. Hint: use reverse mode (backward, ember.func.grad or vjp)")

    def release(self, node: Node) -> None:
        ctx = _CTXS.pop(node, None)
        if ctx is not None:
            ctx._release()


@contextmanager
def _untraced() -> Any:
    """Runs user rules (the fake rule) as plain eager code, unseen by active transforms."""
    saved = DISPATCH.handler
    DISPATCH.handler = None
    try:
        with no_grad():
            yield
    finally:
        DISPATCH.handler = saved


class CustomOpDef:
    """A custom op made by :func:`custom_op`: call it like the function it wraps.

    Its registrations (``register_fake``, ``register_autograd``, ``register_kernel``,
    ``register_vmap``) teach Ember's transforms about it; it is also reachable as
    ``ember.ops.<namespace>.<name>``.
    """

    def __init__(self, qualname: str, fn: Callable | None, schema: Schema,
                 device_types: Iterable[str] | str | None) -> None:
        namespace, _, name = qualname.partition("::")
        self.qualname, self._namespace, self._name = qualname, namespace, name
        self._qualified_name = f"ember.ops.{namespace}.{name}"  # (how ember.fx code calls it)
        self._init_fn = fn
        self._schema = schema
        self._signature = schema.signature()
        self._kernels: dict[str | None, Callable] = {}
        self._fake: Callable | None = None
        self._backward: Callable | None = None
        self._setup_context: Callable | None = None
        self._vmap: Callable | None = None
        self._replaced_by: CustomOpDef | None = None
        if fn is not None:
            for dev in device_type_list(device_types):
                self._kernels[dev] = fn
            functools.update_wrapper(self, fn)
        self._lists = sum(r in outputs.SIZED for r in schema.returns)  # (lists, Tensor?)
        self._single = schema.returns == ("Tensor",) and not schema.tupled  # (the common op)
        self._prims: dict[tuple[int, ...], CustomOpPrimitive] = {}
        self._ran = threading.local()  # (an eager call's outputs, run to learn list lengths)
        self._prim = self.primitive((0,) * self._lists)

    def primitive(self, lens: tuple[int, ...]) -> CustomOpPrimitive:
        """The op's primitive for calls whose list outputs have the lengths ``lens``."""
        prim = self._prims.get(lens)
        if prim is None:
            prim = self._prims[lens] = CustomOpPrimitive(self, lens)
        return prim

    def __repr__(self) -> str:
        return f"<CustomOpDef({self.qualname})>"

    @property
    def default(self) -> CustomOpDef:
        """The op's single overload (``torch.ops.ns.name.default``)."""
        return self

    @property
    def schema(self) -> str:
        """PyTorch's schema string, e.g. ``mylib::scale(Tensor x, float a) -> Tensor``."""
        return self.qualname + self._schema.text

    # -- registrations ------------------------------------------------------------------------
    def register_fake(self, fn: Callable, /) -> Callable:
        """Registers the op's shape rule: ``fn`` takes the op's arguments, with tensors
        replaced by data-free stand-ins of the same shape and dtype, and returns tensors of
        the output shapes and dtypes (``ember.empty_like(x)``, ``x.new_empty(n, m)``). It is
        the primitive's ``infer`` rule, which ``ember.jit`` and :func:`opcheck` need."""
        self._check_current("register_fake")
        self._fake = fn
        return fn

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        """Registers the gradient: ``setup_context(ctx, inputs, output)`` runs after the
        forward (``ctx.save_for_backward``, attributes), ``backward(ctx, *grads)`` returns one
        gradient per op argument (None for non-tensors). A backward written in Ember ops is
        differentiable again (second derivatives)."""
        self._check_current("register_autograd")
        if self._schema.mutated:
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator "
                               f"{self.schema}. Please create a functional operator and "
                               "register an autograd formula for that.")
        self._backward, self._setup_context = backward, setup_context

    def register_kernel(self, device_types: str | Sequence[str],
                        fn: Callable | None = None, /) -> Callable:
        """Registers an implementation for some device types (``"cpu"``, ``"cuda"``),
        replacing the function's own for them; usable as a decorator."""
        self._check_current("register_kernel")

        def register(func: Callable) -> Callable:
            for dev in device_type_list(device_types):
                self._kernels[dev] = func
            return func
        return register if fn is None else register(fn)

    def register_vmap(self, fn: Callable | None = None, /) -> Callable:
        """Registers the batching rule ``fn(info, in_dims, *args) -> (output, out_dims)``:
        ``in_dims`` has the batch dim of each argument (None when unbatched), ``info``
        ``batch_size`` and ``randomness``. Without one, vmap runs the op once per sample."""
        self._check_current("register_vmap")

        def register(func: Callable) -> Callable:
            if self._schema.mutated:
                raise NotImplementedError(f"{self.qualname}: register_vmap for an op that "
                                          "mutates arguments; vmap runs it once per sample")
            self._vmap = func
            return func
        return register if fn is None else register(fn)

    def _check_current(self, what: str) -> None:
        """Refuses a registration through a handle kept from before the op was defined again
        (calls go to the new op, so the rule would never run)."""
        if self._replaced_by is not None:
            raise ReplacedOpError(
                f"{self.qualname}.{what}: Library object has been destroyed: {self.qualname} "
                "was defined again since this handle was made, and calls run the new "
                "definition, so this registration would never be used (PyTorch raises this "
                f"AssertionError too). Hint: register on the new op, {self._qualified_name} "
                "(or the handle the last custom_op returned)")

    # -- calling ------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._replaced_by is not None:  # (defined again: a kept handle calls the new op,
            return self._replaced_by(*args, **kwargs)  # as PyTorch's does)
        values = self.bind(args, kwargs)
        try:
            inputs, layout = self.split(values)
        except TensorLikeOperand:  # (an ember.fx proxy records the call)
            return handle(self, args, kwargs)
        return self.call_split(values, inputs, layout)

    def call_split(self, values: dict[str, Any], inputs: list[Tensor], layout: tuple) -> Any:
        """Runs the op on arguments already bound (:meth:`bind`) and split (:meth:`split`):
        the results, after writing the mutated arguments in place."""
        outs, prim = self._apply(inputs, layout)
        nret = prim.nret
        for name, new in zip(self._schema.mutated, outs[nret:]):
            inplace(values[name], self.qualname, lambda old, new=new: new)
        if self._single:
            return outs[0]  # (the common op: one tensor)
        return outputs.structure(self.qualname, self._schema.returns, self._schema.tupled,
                                 outs[:nret], prim.lens)

    def bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The call's arguments by parameter name, defaults filled in."""
        params = self._schema.params
        if not kwargs and len(args) <= len(params) and \
                all(not p.kwarg_only for p in params[:len(args)]) and \
                all(p.has_default for p in params[len(args):]):  # (the common call: no
            values = dict(zip((p.name for p in params), args))  # inspect.Signature needed)
            values.update((p.name, p.default) for p in params[len(args):])
            return values
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.qualname}: {exc} (schema {self._schema.text})") from None
        bound.apply_defaults()
        return bound.arguments

    def split(self, values: dict[str, Any]) -> tuple[list[Tensor], tuple]:
        """The primitive's tensor inputs, and its params ``(args, counts)``: the arguments
        (None for tensors; lists as tuples, hashable for jit caches) and how many tensor
        inputs each parameter has. Refuses an argument of the wrong type, as PyTorch does."""
        inputs, args, counts = [], [], []
        for p in self._schema.params:
            v = values[p.name]
            n = 0
            if p.kind == TENSOR or (p.kind == OPTIONAL_TENSOR and v is not None):
                inputs.append(self._checked(p, v, Tensor))
                v, n = None, 1
            elif p.kind == TENSOR_LIST:
                self._checked(p, v, (list, tuple))
                inputs.extend(self._checked(p, t, Tensor) for t in v)
                v, n = None, len(v)
            elif p.kind == OPTIONAL_TENSOR_LIST:  # (its param: which items are tensors)
                self._checked(p, v, (list, tuple))
                inputs.extend(self._checked(p, t, Tensor) for t in v if t is not None)
                v = tuple(t is not None for t in v)
                n = sum(v)
            elif p.kind == VALUE and not (v is None and (p.type.endswith("?") or
                                                        p.default is None)):
                if p.type.endswith(("[]", "[]?")):
                    v = tuple(self._number(p, e) for e in self._checked(p, v, (list, tuple)))
                else:
                    v = self._number(p, v)
            args.append(v)
            counts.append(n)
        return inputs, (tuple(args), tuple(counts))

    def _number(self, p: Param, v: Any) -> Any:
        """A non-tensor argument as the Python type its schema type says (a NumPy integer
        for ``SymInt``, an int for ``float``, a one-element tensor holding such a number:
        converted, as PyTorch converts them)."""
        accepted, python = _VALUE_TYPES[p.type.split("[")[0].rstrip("?")]
        if isinstance(v, Tensor) and v.numel() == 1 and python in (int, float, bool):
            item = v.item()
            v = item if isinstance(item, accepted) and (python is bool or not isinstance(
                item, bool)) else v
        self._checked(p, v, accepted)
        return v if python is None else python(v)

    def _checked(self, p: Param, v: Any, types: Any) -> Any:
        if not isinstance(v, types) or (isinstance(v, (bool, np.bool_)) and
                                        bool not in _as_tuple(types)):
            if type(v) in TENSOR_LIKE and Tensor in _as_tuple(types):
                raise TensorLikeOperand(self.qualname)
            raise SchemaMismatch(f"{self.qualname}() Expected a value of type '{p.type}' for "
                                 f"argument '{p.name}' but instead found type "
                                 f"'{type(v).__name__}'. Declaration: {self.schema}")
        return v

    def apply(self, inputs: Sequence[Tensor], layout: tuple) -> tuple:
        """Applies the primitive; when it was recorded for backward, runs ``setup_context``
        on the node's ctx. Returns every output (the results, then the mutated values)."""
        return self._apply(inputs, layout)[0]

    def apply_lens(self, inputs: Sequence[Tensor], layout: tuple) -> tuple[tuple, tuple]:
        """:meth:`apply`'s outputs, and the lengths of the call's list outputs."""
        outs, prim = self._apply(inputs, layout)
        return outs, prim.lens

    def _apply(self, inputs: Sequence[Tensor], layout: tuple) -> tuple[tuple, CustomOpPrimitive]:
        """:meth:`apply`'s outputs, and the primitive the call ran."""
        if self._lists:
            lens = self._list_lens(inputs, layout)
            prim = self.primitive(lens)
            try:
                out = apply(prim, *inputs, args=layout[0], counts=layout[1], lens=lens)
            finally:
                self._ran.outs = None
        else:
            lens, prim = (), self._prim
            out = apply(prim, *inputs, args=layout[0], counts=layout[1], lens=lens)
        outs = out if prim.nout > 1 else (out,)
        nret = prim.nret
        node = next((o._node for o in outs[:nret]
                     if o._node is not None and o._node.prim is prim), None)
        if node is not None:
            dropped = self._setup(node, outs, self.join(inputs, layout), prim)._non_differentiable
            numbers = prim.numbers
            outs = tuple(_wrap(o._data, o._device, False, None, 0, o._vc)  # (no gradient, as
                         if i < nret and (id(o) in dropped or i in numbers) else o  # PyTorch's
                         for i, o in enumerate(outs))  # outputs marked in setup_context)
        return outs, prim

    def _number_outputs(self, lens: tuple[int, ...]) -> frozenset[int]:
        """The positions of the outputs that are returned numbers (they have no gradient)."""
        found, i, sizes = set(), 0, iter(lens)
        for type_ in self._schema.returns:
            if type_ in outputs.SIZED:
                i += next(sizes)
                continue
            if type_ != "Tensor":
                found.add(i)
            i += 1
        return frozenset(found)

    def _list_lens(self, inputs: Sequence[Tensor], layout: tuple) -> tuple[int, ...]:
        """The lengths of this call's list outputs: in plain eager mode by running the kernel
        (its outputs are kept for the primitive's forward; also under the profiler, anomaly
        mode, autocast), under a transform (ember.jit, vmap) or on the meta device from the
        fake rule."""
        if inputs and not any(t._device.is_meta for t in inputs) and all(  # (no handler, or
                h in DISPATCH.observers or h in DISPATCH.ambient  # ones that compute eagerly:
                for h in DISPATCH.stack):  # the profiler, anomaly mode, autocast)
            arrays = tuple(t._data for t in inputs)
            with _untraced():  # (the kernel's own ops unseen, as when the primitive runs)
                arrs, lens = self._kernel_outputs(inputs[0]._device.xp, arrays, layout)
            self._ran.outs = (arrays, arrs)
            return lens
        specs = tuple(TensorSpec(tuple(t.shape), t.dtype) for t in inputs)
        return self._infer(specs, layout)[1]

    def _setup(self, node: Node, outs: tuple, values: dict[str, Any],
               prim: CustomOpPrimitive) -> CustomOpCtx:
        """The ctx of a recorded call, given to ``setup_context`` as PyTorch's: ``inputs`` the
        positional arguments, ``keyword_only_inputs`` (only when the op has keyword-only
        parameters) the others. Returns it (with the outputs marked non-differentiable)."""
        args, kwargs = self.call_kwargs(values)
        needs = tuple([isinstance(t, Tensor) and t.requires_grad for t in a]
                      if p.kind in (TENSOR_LIST, OPTIONAL_TENSOR_LIST) else
                      isinstance(a, Tensor) and a.requires_grad  # (a list of flags for a list)
                      for p, a in zip(self._schema.params, args))
        ctx = CustomOpCtx(self.qualname, needs, [(o.shape, o.dtype) for o in outs[:prim.nret]])
        if self._setup_context is not None:
            output = outputs.structure(self.qualname, self._schema.returns,
                                       self._schema.tupled, outs[:prim.nret], prim.lens)
            extra = {"keyword_only_inputs": kwargs} if any(
                p.kwarg_only for p in self._schema.params) else {}
            self._setup_context(ctx=ctx, inputs=args, output=output, **extra)
        ctx._stamp()
        _CTXS[node] = ctx
        return ctx

    def join(self, tensors: Sequence[Any], layout: tuple) -> dict[str, Any]:
        """The inverse of :meth:`split`: arguments by name, ``tensors`` in their places."""
        it = iter(tensors)
        values = {}
        for p, v, n in zip(self._schema.params, *layout):
            if p.kind == TENSOR_LIST:
                v = [next(it) for _ in range(n)]
            elif p.kind == OPTIONAL_TENSOR_LIST:
                v = [next(it) if present else None for present in v]
            elif n:
                v = next(it)
            elif isinstance(v, tuple):
                v = list(v)
            values[p.name] = v
        return values

    def call_kwargs(self, values: dict[str, Any]) -> tuple[tuple, dict]:
        """Positional and keyword-only arguments for calling a user function."""
        pos = tuple(values[p.name] for p in self._schema.params if not p.kwarg_only)
        kw = {p.name: values[p.name] for p in self._schema.params if p.kwarg_only}
        return pos, kw

    # -- the primitive's rules ----------------------------------------------------------------
    def _run_kernel(self, xp: Any, arrays: tuple, layout: tuple, lens: tuple) -> Any:
        ran = None
        if self._lists:  # (an op without list outputs is never run ahead)
            ran, self._ran.outs = getattr(self._ran, "outs", None), None
        if ran is not None and len(ran[0]) == len(arrays) and \
                all(a is b for a, b in zip(ran[0], arrays)):
            arrs = ran[1]  # (run already, to learn the lengths of its list outputs)
        else:
            arrs, got = self._kernel_outputs(xp, arrays, layout)
            if got != lens:
                raise OpError(f"{self.qualname}: the implementation returned lists of lengths "
                              f"{list(got)}, where its fake impl said {list(lens)}. Hint: fix "
                              "the fake impl; ember.library.opcheck tests it")
        return arrs[0] if len(arrs) == 1 else tuple(arrs)

    def _kernel_outputs(self, xp: Any, arrays: tuple, layout: tuple) -> tuple[list, tuple]:
        """Runs the kernel: the output arrays (then the mutated arguments' new values), and
        the lengths of its list outputs."""
        dev = device_of(xp, arrays)
        kernel = self._kernels.get(dev.type, self._kernels.get(None))
        if kernel is None:
            raise OpError(f"{self.qualname} does not have a kernel registered for {dev.type} "
                          f"(it has {sorted(k for k in self._kernels if k) or 'none'}). Hint: "
                          f"use {self._name}.register_kernel({dev.type!r}) to add one")
        mutated = self._mutated_positions(layout)
        tensors = [_wrap(a.copy() if i in mutated else read_only(a), dev)
                   for i, a in enumerate(arrays)]
        pos, kw = self.call_kwargs(self.join(tensors, layout))
        try:
            with no_grad():
                out = kernel(*pos, **kw)
        except Exception as exc:
            raise kernel_error(self.qualname, exc) from exc
        outs, lens = self._flatten(out, "implementation", dev)
        for o in outs:  # (the inputs as the kernel saw them: mutated ones are copies)
            if any(shares_memory(xp, o._data, t._data) for t in tensors):
                raise OpError(f"{self.qualname}: the implementation returned a tensor that "
                              "shares memory with an input; custom ops may not alias their "
                              "inputs (as in PyTorch). Hint: return x.clone()")
        for i, o in enumerate(outs):
            if any(shares_memory(xp, o._data, p._data) for p in outs[:i]):
                raise OpError(f"{self.qualname}: the implementation returned output {i} "
                              "sharing memory with an earlier one; outputs may not alias each "
                              "other (as in PyTorch). Hint: clone one")
        arrs = [o._data for o in outs] + [tensors[i]._data for i in sorted(mutated)]
        return arrs, lens

    def _mutated_positions(self, layout: tuple) -> set[int]:
        positions, i = set(), 0
        for p, n in zip(self._schema.params, layout[1]):
            if p.mutable and n:
                positions.update(range(i, i + n))
            i += n
        return positions

    def _flatten(self, out: Any, what: str, dev: Any) -> tuple[list, tuple[int, ...]]:
        if self._single and type(out) is Tensor and dev is not None and out._device is dev:
            return [out], ()  # (the common op's kernel: one tensor, on its inputs' device)
        return outputs.flatten(self.qualname, self._schema.text, self._schema.returns,
                               self._schema.tupled, out, what, dev)

    def _infer(self, specs: tuple[TensorSpec, ...], layout: tuple) -> tuple[Any, tuple]:
        """The output specs from the fake rule (one spec, or a tuple), and the lengths of the
        list outputs."""
        mutated = [specs[i] for i in sorted(self._mutated_positions(layout))]
        if self._fake is None and not self._schema.returns:  # (only mutates: as PyTorch,
            return (mutated[0] if len(mutated) == 1 else tuple(mutated)), ()  # no fake needed)
        if self._fake is None:
            raise OpError(f"{self.qualname}: there is no fake impl registered, so its output "
                          "shapes are unknown without running it (ember.jit, opcheck, the "
                          "meta device, and vmap of an op returning list[Tensor] need them). "
                          f"Hint: use {self._name}.register_fake to add one")
        cpu = get_device("cpu")
        fakes = [_wrap(np.broadcast_to(np.zeros((), s.dtype.np), s.shape), cpu) for s in specs]
        pos, kw = self.call_kwargs(self.join(fakes, layout))
        try:
            with _untraced():
                out = call_fake(self.qualname, self._fake, pos, kw)
        except EmberError:
            raise
        except Exception as exc:
            raise OpError(f"{self.qualname}: the fake impl raised {type(exc).__name__}: "
                          f"{exc}") from exc
        result, lens = self._flatten(out, "fake impl", None)
        result += mutated
        return (result[0] if len(result) == 1 else tuple(result)), lens

    def _vjp(self, node: Node, grads: tuple, prim: CustomOpPrimitive) -> tuple:
        if self._backward is None:
            hint = (f"{self._name} mutates {list(self._schema.mutated)}, and an op that mutates "
                    "cannot have one (as in PyTorch): make a functional op (returning the new "
                    "values) and register its autograd formula") if self._schema.mutated else \
                (f"use {self._name}.register_autograd(backward, setup_context=...) to add one")
            raise GradError(f"Trying to backward through {self.qualname} but no autograd "
                            f"formula was registered. Hint: {hint}")
        ctx, lens, numbers = _CTXS[node], prim.lens, prim.numbers
        if ctx.materialize_grads:
            from ember.ops.creation import zeros

            grads = tuple(zeros(shape, dtype=dtype, device=node.device)
                          if g is None and i not in numbers else g
                          for i, (g, (shape, dtype)) in enumerate(zip(grads, ctx.out_specs)))
        # (one gradient per returned value: a list for a list; None for a number, as torch)
        result = self._backward(ctx, *outputs.structure(
            self.qualname, self._schema.returns, True, grads[:len(ctx.out_specs)], lens,
            "none"))
        params = [p for p in self._schema.params if not p.kwarg_only]
        if not isinstance(result, tuple):  # (a list is one gradient: a tensor list's, as torch)
            result = (result,)
        if len(result) != len(params):
            raise GradError(f"{self.qualname}: the backward returned {len(result)} gradients, "
                            f"expected one per positional argument of {self._schema.text} "
                            f"({len(params)}); use None for arguments without a gradient")
        flat = []
        for p, n, g, arg in zip(params, node.params["counts"], result, node.params["args"]):
            if p.kind in (TENSOR_LIST, OPTIONAL_TENSOR_LIST):
                present = (True,) * n if p.kind == TENSOR_LIST else arg
                if g is not None and (not isinstance(g, (list, tuple)) or
                                      len(g) != len(present)):
                    raise GradError(f"{self.qualname}: the backward returned "
                                    f"{outputs.describe(g)} "
                                    f"gradients for {p.name!r}, which has {len(present)} items "
                                    "in this call (None ones too). Hint: return a list with "
                                    "one gradient (or None) per item")
                flat.extend(self._grad(p, gi) for gi, has in zip(
                    g if g is not None else [None] * len(present), present) if has)
            elif n:
                flat.append(self._grad(p, g))
            elif g is not None:
                raise GradError(f"{self.qualname}: the backward returned a gradient for "
                                f"{p.name!r}, which is not a tensor in this call ({p.type}); "
                                "its gradient must be None, as in PyTorch. Hint: return one "
                                "gradient per positional argument, in order: "
                                f"{[q.name for q in params]}")
        return tuple(flat)

    def _grad(self, p: Param, g: Any) -> Tensor | None:
        """``g``, the backward's gradient for ``p``, checked to be a tensor or None."""
        if g is not None and not isinstance(g, Tensor):
            raise GradError(f"{self.qualname}: the backward returned {type_name(g)} as the "
                            f"gradient of {p.name!r}; expected a Tensor or None (PyTorch: "
                            "'expected Variable or None'). Hint: wrap values with "
                            "ember.from_numpy(...) or ember.tensor(...)")
        return g


def _as_tuple(types: Any) -> tuple:
    return types if isinstance(types, tuple) else (types,)
