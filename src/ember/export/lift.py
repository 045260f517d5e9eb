"""The traced graph (``ember.jit``'s IR) as an ``ember.fx`` graph: each equation a call of its
primitive (:mod:`ember.export.prims`); the parameters, buffers and constants it reads lifted
to placeholders before the user's inputs, each named as torch names them (``p_fc1_weight``,
``b_bn_running_mean``, ``c_lifted_tensor_0``); the buffers' new values returned before the
user's outputs; and sizes that follow dynamic dims computed from the inputs' run-time shapes
(:func:`~ember.export.prims.sym_size`)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember import fx
from ember.export import prims
from ember.export.errors import ConstraintViolationError, ExportError
from ember.export.graph_signature import (
    ConstantArgument,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from ember.export.symbolic import SizeExpr, fit, fit_scalar
from ember.jit.ir import Eqn, Graph, Var, sub_graphs, type_str
from ember.jit.tracer import user_source
from ember.ops.creation import arange, full
from ember.ops.shape import Reshape
from ember.tensor import Tensor, _wrap

WHO = "ember.export.export"


@dataclass
class Twin:
    """The model traced again with its dynamic dims grown: its graph, the twin of each
    variable (``mapping``) and of each equation (``pairs``, by ``id``)."""

    graph: Graph
    mapping: dict[Var, Var]
    pairs: dict[int, Eqn]


@dataclass
class StateEntry:
    """A tensor of the model's state: its kind (parameter or buffer), key and persistence."""

    tensor: Tensor
    kind: InputKind
    target: str
    persistent: bool | None = None


@dataclass
class TensorMeta:
    """A graph value's shape (ints, and :class:`SizeExpr` for dynamic sizes) and dtype."""

    shape: tuple
    dtype: Any

    def __str__(self) -> str:
        return type_str(self.dtype, self.shape)


@dataclass
class Lifted:
    """What :func:`lift` makes."""

    graph: fx.Graph
    signature: ExportGraphSignature
    constants: dict[str, Tensor] = field(default_factory=dict)


def lift(graph: Graph, twins: list[Twin], state: list[StateEntry], user_names: list[str],
         out_consts: list, symbols: dict[str, tuple[int, int]], device: Any,
         attributes: dict[int, tuple[str, Tensor]] | None = None) -> Lifted:
    """The fx graph and signature of the traced ``graph`` (see the module docstring).

    ``twins`` are the other traces (none without dynamic dims), ``state`` the model's
    parameters and buffers in order, ``user_names`` the placeholder names of the tensor
    inputs, ``out_consts`` the returned leaves (a tensor's place marked by a non-constant),
    ``symbols`` each dynamic dim's first place ``(input index, axis)``, ``device`` where the
    lifted constants live, ``attributes`` the model's plain tensor attributes (by the ``id``
    of their array: ``(path, tensor)``), constants named by their path as torch names them."""
    return _Lifter(graph, twins, symbols).run(state, user_names, out_consts, device,
                                              attributes or {})


class _Lifter:
    def __init__(self, graph: Graph, twins: list[Twin], symbols: dict[str, tuple[int, int]]):
        self.ir, self.twins, self.symbols = graph, twins, symbols
        caller = user_source()  # (lines of Ember's own modules are shown as the export call)
        self.caller = (caller.file, caller.line) if caller is not None else None
        traces = [graph] + [t.graph for t in twins]
        self.env = [{s: g.inputs[i].shape[axis] for s, (i, axis) in symbols.items()}
                    for g in traces]
        self.g = fx.Graph()
        self.nodes: dict[Var, fx.Node] = {}
        self.size_nodes: dict[Any, fx.Node] = {}

    # -- placeholders ---------------------------------------------------------------------
    def run(self, state: list[StateEntry], user_names: list[str], out_consts: list,
            device: Any, attributes: dict[int, tuple[str, Tensor]]) -> Lifted:
        ir = self.ir
        specs: list[InputSpec] = []
        read = {id(ref.tensor): ref for ref in ir.state}
        known = set()
        for entry in state:
            prefix = "p_" if entry.kind is InputKind.PARAMETER else "b_"
            ref = read.get(id(entry.tensor))
            node = self._placeholder(prefix + entry.target, ref.var if ref else None,
                                     entry.tensor)
            specs.append(InputSpec(entry.kind, TensorArgument(node.name), entry.target,
                                   entry.persistent))
            known.add(id(entry.tensor))
        constants: dict[str, Tensor] = {}
        for ref in ir.state:
            if ref.grad:
                raise ExportError(f"{WHO}: the model reads {ref.label}.grad; export a forward "
                                  "function")
            if id(ref.tensor) not in known:  # (a tensor the model holds outside its state,
                known.add(id(ref.tensor))  # named by its path where it is an attribute)
                target = attributes.get(id(ref.tensor._data), (ref.label,))[0]
                self._constant(target, ref.var, ref.tensor, specs, constants)
        anonymous = 0
        for var, array in ir.consts.items():
            target, tensor = attributes.get(id(array), (None, None))
            if target is None:
                target, tensor = f"lifted_tensor_{anonymous}", _wrap(array, device)
                anonymous += 1
            self._constant(target, var, tensor, specs, constants)
        for var, name in zip(ir.inputs, user_names):
            node = self._placeholder(name, var)
            specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.name), None))
        for eqn in ir.eqns:
            self._equation(eqn)
        outputs, out_specs = self._outputs(state, out_consts)
        self.g.output(tuple(outputs))
        for spec, node in list(zip(specs, self.g.nodes)):
            if spec.kind is InputKind.CONSTANT_TENSOR and not node.users:  # (computed from
                self.g.erase_node(node)  # the dynamic sizes instead)
                specs.remove(spec)
                if all(other.target != spec.target for other in specs):
                    del constants[spec.target]
        return Lifted(self.g, ExportGraphSignature(specs, out_specs), constants)

    def _placeholder(self, name: str, var: Var | None, tensor: Tensor | None = None) -> fx.Node:
        node = self.g.placeholder(name.replace(".", "_"))
        if var is not None:
            self.nodes[var] = node
            node.meta["val"] = self._meta(var)
        else:
            node.meta["val"] = TensorMeta(tuple(tensor.shape), tensor.dtype)
        return node

    def _constant(self, target: str, var: Var, tensor: Tensor, specs: list,
                  constants: dict) -> None:
        node = self._placeholder("c_" + target, var)
        specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name), target))
        constants[target] = tensor

    # -- equations ------------------------------------------------------------------------
    def _equation(self, eqn: Eqn) -> None:
        if sub_graphs(eqn):
            raise ExportError(f"{WHO}: the model branches or loops on tensor values "
                              f"({eqn.prim.name} at {eqn.source}); ember.export exports "
                              "straight-line programs. Hint: ember.onnx.export or ember.jit "
                              "take such models")
        twins = [t.pairs.get(id(eqn)) for t in self.twins]
        found = [(e, env) for e, env in zip(twins, self.env[1:]) if e is not None]
        envs = [self.env[0]] + [env for _, env in found]
        inputs = tuple(self._input(eqn, i, found, envs) for i in range(len(eqn.inputs)))
        params = {key: self._param(eqn, key, [value] + [e.params[key] for e, _ in found], envs)
                  for key, value in eqn.params.items()}
        node = self.g.call_function(prims.op(eqn.prim), inputs, params)
        if eqn.source is not None and (eqn.source.file, eqn.source.line) != self.caller:
            node.meta["source"] = eqn.source
        if eqn.prim.nout == 1:
            self.nodes[eqn.outputs[0]] = node
            node.meta["val"] = self._meta(eqn.outputs[0])
            return
        for i, var in enumerate(eqn.outputs):
            item = self.g.call_function(operator.getitem, (node, i))
            item.meta["val"] = self._meta(var)
            self.nodes[var] = item

    def _input(self, eqn: Eqn, i: int, found: list, envs: list[dict]) -> fx.Node:
        """The node of the equation's ``i``-th input (see :meth:`_value`)."""
        twin_consts = [other.graph.consts.get(twin[0].inputs[i])
                       for twin, other in zip(found, self.twins)]
        return self._value(eqn.inputs[i], twin_consts, envs,
                           f"{eqn.prim.name} at {eqn.source} reads")

    def _value(self, var: Var, twin_consts: list, envs: list[dict], what: str) -> fx.Node:
        """The node of ``var``; for a constant that differs in the other traces (its values
        there ``twin_consts``, None where the same; made from a dynamic size), a node
        computing it from the sizes. ``what`` says who reads it, for the error."""
        if var not in self.ir.consts or not twin_consts:
            return self.nodes[var]
        arrays = [self.ir.consts[var]]
        arrays += [arrays[0] if array is None else array for array in twin_consts]
        first = arrays[0]
        if all(a.shape == first.shape and np.array_equal(a, first, equal_nan=True)
               for a in arrays):
            return self.nodes[var]
        made = self._filled(var, arrays, envs)
        if made is None:
            made = self._arange(var, arrays, envs)
        if made is None:
            made = self._banded(var, arrays, envs)
        if made is not None:
            return made
        scalar = None
        if all(a.shape == () for a in arrays):
            scalar = fit_scalar([a.item() for a in arrays], envs, first.dtype)
        if scalar is None:
            raise ConstraintViolationError(
                f"{WHO}: Constraints violated ({', '.join(self.symbols)})! {what} a constant "
                f"(shape {first.shape}) made from a dynamic size; "
                "it would stay as traced (only one value everywhere, an arange and a size or ratio "
                "of sizes follow it). Hint: compute it from tensors (x.new_zeros(x.shape)) or "
                "mark the dim static")
        key = (scalar, var.dtype)
        if key not in self.size_nodes:
            value = self._size_node(scalar) if isinstance(scalar, SizeExpr) else \
                self.g.call_function(operator.truediv, (self._size_value(scalar.numerator),
                                                        self._size_value(scalar.denominator)))
            node = self.g.call_function(full, ((), value), {"dtype": var.dtype})
            node.meta["val"] = TensorMeta((), var.dtype)
            self.size_nodes[key] = node
        return self.size_nodes[key]

    def _filled(self, var: Var, arrays: list, envs: list[dict]) -> fx.Node | None:
        """A constant holding one value everywhere, whose shape follows the dynamic sizes
        (a causal mask's ``ones(T, T)``), as ``full`` of the run-time shape."""
        first = arrays[0]
        if not first.size or any(a.ndim != first.ndim or not a.size for a in arrays):
            return None
        value = first.reshape(-1)[0]
        if any(not np.all(a == value) for a in arrays):
            return None
        sizes = [fit([a.shape[d] for a in arrays], envs) for d in range(first.ndim)]
        if any(size is None for size in sizes):
            return None
        shape = tuple(size if isinstance(size, int) else self._size_node(size) for size in sizes)
        node = self.g.call_function(full, (shape, value.item()), {"dtype": var.dtype})
        node.meta["val"] = TensorMeta(tuple(sizes), var.dtype)
        return node

    def _arange(self, var: Var, arrays: list, envs: list[dict]) -> fx.Node | None:
        """A constant ``start, start + step, ...`` along one axis (its other sizes 1) whose
        length follows the dynamic sizes (a GPT's positions, ``ember.arange(T)``; the row
        numbers ``arange(B)[:, None, None]`` that gather, sort and topk index with), as
        ``arange`` to the run-time length, reshaped onto that axis."""
        first = arrays[0]
        axes = {tuple(d for d, n in enumerate(a.shape) if n != 1) for a in arrays}
        if len(axes) != 1 or len(axis := axes.pop()) != 1 or \
                any(a.ndim != first.ndim or a.size < 2 for a in arrays):
            return None
        arrays = [a.reshape(-1) for a in arrays]
        first = arrays[0]
        start, step = first[0], first[1] - first[0]
        if any(not np.array_equal(a, np.arange(a.size, dtype=a.dtype) * step + start)
               for a in arrays):
            return None
        length = fit([a.size for a in arrays], envs)
        if not isinstance(length, SizeExpr):
            return None
        end: Any = self._size_node(length)
        if step != 1:
            end = self.g.call_function(operator.mul, (end, step.item()))
        if start != 0:
            end = self.g.call_function(operator.add, (end, start.item()))
        node = self.g.call_function(arange, (start.item(), end, step.item()),
                                    {"dtype": var.dtype})
        node.meta["val"] = TensorMeta((length,), var.dtype)
        ndim = len(var.shape)
        if ndim == 1:
            return node
        shape = tuple(self._size_node(length) if d == axis[0] else 1 for d in range(ndim))
        node = self.g.call_function(prims.op(Reshape), (node,), {"shape": shape})
        node.meta["val"] = TensorMeta(tuple(length if d == axis[0] else 1
                                            for d in range(ndim)), var.dtype)
        return node

    def _banded(self, var: Var, arrays: list, envs: list[dict]) -> fx.Node | None:
        """A constant of two values, one on a band of diagonals of its last two axes (its
        others 1) whose sizes follow the dynamic sizes (a causal mask, ``tril(ones(T, T))``,
        ``eye(T)``, a ``triu`` of ``-inf``), as :func:`~ember.export.prims.band` of the
        run-time sizes."""
        first = arrays[0]
        if first.ndim < 2 or any(a.ndim != first.ndim or any(n != 1 for n in a.shape[:-2])
                                 or not a.size for a in arrays):
            return None
        values = np.unique(first)
        if len(values) != 2 or np.isnan(values).any():
            return None
        for inside, outside in (values, values[::-1]):
            bounds = _band_of(first, inside)
            if bounds is not None and all(np.array_equal(
                    a, _band(a.shape, *bounds, inside, outside, a.dtype)) for a in arrays):
                break
        else:
            return None
        sizes = [fit([a.shape[d] for a in arrays], envs) for d in range(first.ndim)]
        if any(size is None for size in sizes):
            return None
        node = self.g.call_function(prims.band, (*(self._size_value(n) for n in sizes[-2:]),
                                                 *bounds, inside.item(), outside.item()),
                                    {"dtype": var.dtype})
        node.meta["val"] = TensorMeta(tuple(sizes[-2:]), var.dtype)
        if first.ndim == 2:
            return node
        node = self.g.call_function(prims.op(Reshape), (node,), {
            "shape": tuple(self._size_value(n) for n in sizes)})
        node.meta["val"] = TensorMeta(tuple(sizes), var.dtype)
        return node

    def _size_value(self, size: SizeExpr | int) -> fx.Node | int:
        return size if isinstance(size, int) else self._size_node(size)

    def _param(self, eqn: Eqn, key: str, values: list, envs: list[dict]) -> Any:
        first = values[0]
        if all(_same(v, first) for v in values):
            return first
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            size = fit(values, envs)
            if isinstance(size, SizeExpr):
                return self._size_node(size)
        elif all(type(v) is type(first) and isinstance(v, (tuple, list)) and
                 len(v) == len(first) for v in values):
            return type(first)(self._param(eqn, key, list(items), envs)
                               for items in zip(*values))
        elif all(isinstance(v, slice) for v in values):
            return slice(*(self._param(eqn, key, [getattr(v, part) for v in values], envs)
                           for part in ("start", "stop", "step")))
        raise ConstraintViolationError(
            f"{WHO}: Constraints violated ({', '.join(self.symbols)})! {eqn.prim.name} at "
            f"{eqn.source} takes {key}={first!r}, which changes with the dynamic sizes "
            f"({' / '.join(repr(v) for v in values[1:])} at the other sizes) by no rule "
            "(a size clamped, rounded or computed in Python from a shape). Hint: mark the dim "
            "static, or compute the value from tensor shapes in one product")

    def _size_node(self, size: SizeExpr) -> fx.Node:
        if size in self.size_nodes:
            return self.size_nodes[size]
        value = None
        for symbol in size.symbols:
            node = self.size_nodes.get(symbol)
            if node is None:
                index, axis = self.symbols[symbol]
                node = self.g.call_function(prims.sym_size, (self.nodes[self.ir.inputs[index]],
                                                             axis))
                self.size_nodes[symbol] = node
            value = node if value is None else self.g.call_function(operator.mul, (value, node))
        if size.div != 1:
            if size.inner:
                value = self.g.call_function(operator.add, (value, size.inner))
            value = self.g.call_function(operator.floordiv, (value, size.div))
        if size.coeff != 1:
            value = self.g.call_function(operator.mul, (value, size.coeff))
        if size.offset:
            step = operator.add if size.offset > 0 else operator.sub
            value = self.g.call_function(step, (value, abs(size.offset)))
        self.size_nodes[size] = value
        return value

    def _meta(self, var: Var) -> TensorMeta:
        twins = [t.mapping.get(var) for t in self.twins]
        if not twins or any(v is None for v in twins):
            return TensorMeta(var.shape, var.dtype)
        envs = self.env[:1 + len(twins)]
        dims = []
        for d, size in enumerate(var.shape):
            found = fit([size] + [v.shape[d] for v in twins], envs)
            dims.append(size if found is None else found)
        return TensorMeta(tuple(dims), var.dtype)

    # -- outputs --------------------------------------------------------------------------
    def _outputs(self, state: list[StateEntry], out_consts: list) -> tuple[list, list]:
        ir = self.ir
        keys = {id(e.tensor): e for e in state}
        outputs, specs = [], []
        for tensor, var in ir.writes:
            entry = keys.get(id(tensor))
            if entry is None or entry.kind is not InputKind.BUFFER:
                what = entry.target if entry else ir.label(tensor)
                raise ExportError(f"{WHO}: the model writes into {what}, which is no buffer "
                                  "of it (a parameter or a captured tensor); only buffers "
                                  "may change in an exported forward")
            outputs.append(self.nodes[var])
            specs.append(OutputSpec(OutputKind.BUFFER_MUTATION,
                                    TensorArgument(self.nodes[var].name), entry.target))
        for i, var in enumerate(ir.outputs):
            if var is None:
                value = out_consts[i]
                outputs.append(value)
                specs.append(OutputSpec(OutputKind.USER_OUTPUT,
                                        ConstantArgument(f"output_{i}", value), None))
            else:  # (a constant output made from a dynamic size follows it too)
                twin_consts = [t.graph.consts.get(t.graph.outputs[i]) for t in self.twins]
                node = self._value(var, twin_consts, self.env, f"output {i} is")
                outputs.append(node)
                specs.append(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(node.name),
                                        None))
        return outputs, specs


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _band(shape: tuple, low: int | None, high: int | None, inside: Any, outside: Any,
          dtype: Any) -> np.ndarray:
    """:func:`~ember.export.prims.band` in NumPy, of ``shape`` (its last two axes)."""
    offset = np.arange(shape[-1])[None, :] - np.arange(shape[-2])[:, None]
    mask = np.ones(offset.shape, bool)
    if low is not None:
        mask &= offset >= low
    if high is not None:
        mask &= offset <= high
    return np.where(mask, inside, outside).astype(dtype).reshape(shape)


def _band_of(array: np.ndarray, inside: Any) -> tuple[int | None, int | None] | None:
    """The diagonals ``low <= j - i <= high`` that ``inside`` fills in ``array``'s last two
    axes (None where the band reaches the corner), or None when they are no band."""
    offset = np.arange(array.shape[-1])[None, :] - np.arange(array.shape[-2])[:, None]
    found = offset[array.reshape(offset.shape) == inside]
    if not found.size:
        return None
    low, high = int(found.min()), int(found.max())
    return (None if low == int(offset.min()) else low, None if high == int(offset.max()) else high)
