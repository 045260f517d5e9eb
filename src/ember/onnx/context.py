"""What a converter writes into: ONNX nodes and initializers, fresh value names, and what the
exporter learned about dynamic axes (each variable's shape in a second trace with the dynamic
axes resized), from which shape tensors are built where the IR holds sizes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ember.dtypes import DType, float64
from ember.errors import ArgumentError
from ember.jit.ir import Eqn, Graph, Var
from ember.onnx.symbolic import rebuild
from ember.ops.tensor_spec import TensorSpec

INT64_MAX = 2**63 - 1
INT64_MIN = -2**63

_ONNX_TYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
               "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
               "int64": TensorProto.INT64, "int32": TensorProto.INT32,
               "int16": TensorProto.INT16, "int8": TensorProto.INT8,
               "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL}


def onnx_type(dtype: DType) -> int:
    """The ``TensorProto`` element type of an Ember dtype."""
    if dtype.name not in _ONNX_TYPES:
        raise ArgumentError(f"ember.onnx: tensors of dtype {dtype.name} cannot be exported; "
                            f"ONNX export supports {sorted(_ONNX_TYPES)}")
    return _ONNX_TYPES[dtype.name]


class Context:
    """The ONNX graph under construction for one traced :class:`~ember.jit.ir.Graph`.

    ``twin`` maps each variable to its twin in the second trace (None without dynamic axes);
    ``twin_consts`` holds the second trace's constants, ``twin_eqns`` the twin of each
    equation (by ``id``) whose params differ there, ``pairs`` of every equation; ``check``
    holds the same mapping and pairs for one more trace, at other sizes again (None without
    one): a size is read from a dimension that follows it in all the traces.
    """

    def __init__(self, graph: Graph, opset: int, twin: dict[Var, Var] | None,
                 twin_consts: dict[Var, Any], twin_eqns: dict[int, Eqn],
                 pairs: dict[int, Eqn] | None = None,
                 check: tuple[dict[Var, Var], dict[int, Eqn]] | None = None) -> None:
        self.graph, self.opset = graph, opset
        self.twin, self.twin_consts, self.twin_eqns = twin, twin_consts, twin_eqns
        self.pairs = pairs or {}
        self.check = check
        self.below: Any = None  # (a BelowTrace: the graph's traces at small sizes, on demand)
        self.nodes: list[Any] = []
        self.made: dict[str, Any] = {}  # each output name's node (of ``node``)
        self.initializers: list[Any] = []
        self.names: dict[Var, str] = {}
        self.problems: list[tuple[str, str]] = []  # (where, why)
        self.eqn: Eqn | None = None  # the equation being converted
        self._count = 0
        self.node_names: dict[str, int] = {}  # (how often each node name was given)
        self._dims: dict[tuple[str, int], str] = {}
        self.reserved: set[str] = set()  # the graph's input, output and weight names
        self.known: dict[tuple[int, ...], str | None] = {}  # sizes in the traces: a size
        self._rules: dict[tuple[int, ...], Any] = {}  # (what made each known size)
        self._origin: dict[tuple[int, ...], list[Var]] = {}  # (the variables that have it)
        self.producers = {v: e for e in graph.eqns for v in e.outputs}
        self.run_time: set[tuple[Var, int]] = set()  # (dimensions of a strided count the
        # traces do not show changing, that ONNX computes at run time: declared dynamic)

    # -- names and values ------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A value name used nowhere else in the graph."""
        while True:
            self._count += 1
            name = f"{hint}_{self._count}"
            if name not in self.reserved:
                return name

    def value(self, var: Var) -> str:
        """The ONNX name holding ``var``; a constant becomes an initializer when first read,
        and each read of one that changes with a dynamic axis (for that read) is rebuilt from
        the run-time shape (:mod:`ember.onnx.symbolic`), or refused."""
        name = self.names.get(var)
        if not self.changes(var):
            if name is None:  # (inputs, state and outputs are named up front)
                name = self.names[var] = self.constant(np.asarray(self.graph.consts[var]),
                                                       var.name)
            return name
        array = np.asarray(self.graph.consts[var])
        before = len(self.problems)
        made = rebuild(self, var, array, np.asarray(self.twin_consts[self.twin_of(var)]))
        if made is not None:
            return made
        if len(self.problems) == before:  # (else rebuild said why)
            self.refuse(f"a constant of shape {tuple(array.shape)} depends on the size of a "
                        "dynamic axis (made from a shape or an index tensor) and is none of "
                        "the patterns ONNX export rebuilds from the run-time shape (one "
                        "value, an arange, a triangular mask); the exported model would keep "
                        "the traced size")
        return self.constant(array, var.name)

    def constant(self, array: Any, hint: str = "const") -> str:
        """An initializer holding ``array``."""
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array, order="C"), name))
        return name

    def ints(self, values: Any) -> str:
        """A 1-D int64 initializer (axes, shapes, pads as tensors)."""
        return self.constant(np.asarray(list(values), dtype=np.int64), "ints")

    def scalar(self, value: Any, dtype: DType) -> str:
        """A 0-d initializer of ``dtype``."""
        return self.constant(np.asarray(value, dtype=dtype.np), "scalar")

    def horner(self, coefficients: tuple, t: str) -> str:
        """``sum c_k t^k`` of the float64 tensor ``t``, highest power first (Horner's rule):
        the polynomials of the special functions' compositions.

        Example:
            >>> ctx.horner((2.0, 0.0, 1.0), t)  # 2t² + 1  # doctest: +SKIP
        """
        acc = self.scalar(coefficients[0], float64)
        for c in coefficients[1:]:
            acc = self.node("Add", [self.node("Mul", [acc, t]), self.scalar(c, float64)])
        return acc

    def node(self, op: str, inputs: list[str], *, outputs: int = 1, **attrs: Any) -> Any:
        """Adds an ONNX node; returns its output name (a list when ``outputs`` > 1)."""
        names = [self.fresh(op.lower()) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        made = helper.make_node(op, inputs, names, name=self.node_name(op), **attrs)
        self.nodes.append(made)
        self.made.update(dict.fromkeys(names, made))
        return names[0] if outputs == 1 else names

    def node_name(self, op: str) -> str:
        """``/encoder/0/Conv`` (``_1``, ``_2``, ... where it repeats): the path of the module
        whose call made the current equation (none: the root's), then the op, as torch.onnx
        names its nodes."""
        source = None if self.eqn is None else self.eqn.source
        scope = "" if source is None else source.scope
        name = "/" + "".join(f"{part}/" for part in scope.split(".") if part) + op
        count = self.node_names[name] = self.node_names.get(name, 0) + 1
        return name if count == 1 else f"{name}_{count - 1}"

    def reduce(self, op: str, x: str, axes: Any, keepdims: int) -> str:
        """A ``Reduce*`` node over ``axes``: given as an input, or as an attribute where the
        opset wants one (all but ReduceSum before opset 18); no axes (a 0-d tensor's) reduce
        all (an empty ``axes`` attribute fails ONNX's checker)."""
        if not len(axes):
            return self.node(op, [x], keepdims=keepdims)
        if op == "ReduceSum" or self.opset >= 18:
            return self.node(op, [x, self.ints(axes)], keepdims=keepdims)
        return self.node(op, [x], axes=list(axes), keepdims=keepdims)

    def cast(self, name: str, dtype: DType, to: DType) -> str:
        """``name`` (of ``dtype``) cast to ``to``; itself when the dtypes agree."""
        return name if dtype is to else self.node("Cast", [name], to=onnx_type(to))

    def refuse(self, why: str) -> None:
        """Records why the current equation cannot be exported (the exporter raises one
        error listing every such reason)."""
        self.problems.append((self.where(self.eqn), why))

    def where(self, eqn: Eqn | None) -> str:
        """``eqn``'s op, line and module: ``conv at net.py:16 (`x = c(x)`) (in convs.3)``
        (the module whose parameter it reads: the line may be a library's call)."""
        if eqn is None:
            return "graph"
        where = f" at {eqn.source}" if eqn.source is not None else ""
        text = f" (`{eqn.source.text}`)" if eqn.source and eqn.source.text else ""
        labels = {ref.var: ref.label for ref in self.graph.state}
        module = (eqn.source.scope if eqn.source else "") or \
            next((labels[v].rpartition(".")[0] for v in eqn.inputs if v in labels), "")
        return f"{eqn.prim.name}{where}{text}{f' (in {module})' if module else ''}"

    # -- dynamic axes ----------------------------------------------------------------------
    def changes(self, var: Var) -> bool:
        """Whether ``var`` is a constant whose value or shape changes with a dynamic axis."""
        if self.twin is None or var not in self.graph.consts:
            return False
        array, other = self.graph.consts[var], self.twin_consts[self.twin_of(var)]
        return array.shape != other.shape or not np.array_equal(array, other, equal_nan=True)

    def twin_of(self, var: Var) -> Var:
        """``var``'s twin in the second trace; for a constant that the equation being
        converted reads, the constant its twin reads there (one constant of the first trace
        may stand for several of the second)."""
        assert self.twin is not None
        return self._paired(var, self.twin, self.pairs)

    def _paired(self, var: Var, twin: dict[Var, Var], pairs: dict[int, Eqn]) -> Var:
        eqn = self.eqn
        if eqn is not None and var in self.graph.consts and var in eqn.inputs and \
                id(eqn) in pairs:
            return pairs[id(eqn)].inputs[eqn.inputs.index(var)]
        return twin[var]

    def twin_shape(self, var: Var) -> tuple[int, ...]:
        """``var``'s shape in the second trace (its own shape without dynamic axes)."""
        return var.shape if self.twin is None else self.twin_of(var).shape

    def dynamic_dims(self, var: Var) -> list[int]:
        """The dimensions of ``var`` whose size follows a dynamic axis."""
        other = self.twin_shape(var)
        return [d for d, (a, b) in enumerate(zip(var.shape, other)) if a != b]

    def dim(self, var: Var, d: int) -> str:
        """A 1-D int64 tensor holding the run-time size of ``var``'s dimension ``d``."""
        key = (self.value(var), d)
        if key not in self._dims:
            self._dims[key] = self.node("Shape", [key[0]], start=d, end=d + 1)
        return self._dims[key]

    def shape_tensor(self, out: Var, sources: list[Var], infer_one: bool,
                     linked: bool = True) -> str | None:
        """A 1-D int64 tensor holding ``out``'s shape at run time: static sizes as traced,
        each dynamic size read from a dimension that follows it, of ``sources`` (the same
        position first) or else of the graph's inputs; for a constant or where not
        ``linked`` (an Expand's new sizes are made in Python, as a constant's), else from the
        :meth:`_partner` its reader makes it equal to; for a computed value ``linked``, else
        one a converter made ``known`` (a window count, a padded or concatenated size) where
        :meth:`_linked`; with ``infer_one`` (Reshape) one dynamic size left over is -1; more
        left over are tried as multiples of an input's."""
        dynamic = set(self.dynamic_dims(out))
        if not dynamic:
            return self.ints(out.shape)
        pieces: list[Any] = []  # ints, or names of 1-D tensors
        left = 0
        for d, size in enumerate(out.shape):
            if d not in dynamic:
                pieces.append(size)
                continue
            sizes = self.sizes(out, d)
            found = self._follower([*sources, *self.graph.inputs], d, sizes, out.shape)
            constant = out in self.graph.consts
            if found is None and (constant or not linked):
                found = self._partner(out, d)
            if found is not None:
                pieces.append(self.dim(*found))
            elif linked and not constant and self._linked(sizes, sources):
                pieces.append(self.known[sizes])
            else:
                left += 1
                pieces.append(-1)
        unsure = [d for d in sorted(dynamic) if pieces[d] == -1 and
                  self.sizes(out, d) in self.known]  # (ambiguous, or not linked)
        guesses = {d: rule for d in sorted(dynamic) if infer_one and pieces[d] == -1 and
                   d not in unsure and
                   (rule := self._multiple_of_input(self.sizes(out, d))) is not None}
        if left > (1 if infer_one else 0) and len(guesses) == left:
            # (sizes no dimension gives, as multiples or offsets of an input's: only in a
            # Reshape, where they leave no -1, so that a wrong guess fails its element count;
            # elsewhere (Expand) a size is read only from a dimension or a converter's
            # register_dims: a padding's N + c, a concatenation's sum)
            for d, (op, k, where) in guesses.items():
                pieces[d] = self.node(op, [self.dim(*where), self.ints([k])])
            left = 0
        if left > (1 if infer_one else 0):
            if (out in self.graph.consts or not linked) and self.eqn is not None:
                same = " (a size made in Python is read only from an input's dimension, " \
                    "or from one that the op reading it needs it to equal (a broadcast " \
                    "partner, a matrix product's inner size); hint: compute the value from " \
                    "the tensor it is meant to match, e.g. ember.arange(y.shape[1]) beside " \
                    "y, or export with fixed sizes)"
            else:
                same = "" if not unsure else \
                    f" (dimensions {unsure} have the sizes of a padding, concatenation or " \
                    "window count in every trace, but of two that differ, or of one this " \
                    "value is not computed from, so which gives them is unknown; hint: " \
                    "trace at other sizes, or compute the value from that tensor)"
            eqn = self.eqn
            what = f"a constant output of shape {out.shape}" if eqn is None else \
                f"the output shape {out.shape}" if any(out is v for v in eqn.outputs) else \
                f"a constant of shape {out.shape} used by {eqn.prim.name}"
            self.refuse(f"{what} has dynamic dimensions {sorted(dynamic)} that no input "
                        f"dimension gives{same}")
            return None
        return self.join(pieces)

    def make_known(self, var: Var, sizes: tuple[int, ...], name: str, rule: Any) -> None:
        """Makes ``name`` (a 1-D int64 tensor, a dimension of ``var``) the run-time size of
        the dimensions that have ``sizes`` in the traces (a window count) in the values
        computed from ``var`` (:meth:`_linked`); ``rule``: what computes it from the
        inputs. Sizes that two different rules give are ambiguous: read from neither; a
        second variable of the same rule (a second padding) is linked as well."""
        if self._rules.setdefault(sizes, rule) != rule:
            self.known[sizes] = None
        else:
            self.known.setdefault(sizes, name)
            self._origin.setdefault(sizes, []).append(var)

    def _linked(self, sizes: tuple[int, ...], sources: list[Var]) -> bool:
        """Whether the known size ``sizes`` may give a dimension of a value made from
        ``sources`` and the current equation's inputs: only where a variable that has it
        (each cat, pad or unfold of its rule) is one of them or is computed into one of
        them (the data comes from it). A size
        made with Python from ``x.shape`` leaves no trace in the graph: a constant of
        ``T + 2`` rows beside an unrelated concatenation's ``T + ceil(T / 16)``, the same
        in every trace, is not read from it."""
        if self.known.get(sizes) is None:
            return False
        origins = {id(v) for v in self._origin[sizes]}
        seen: set[int] = set()
        todo = [*sources, *(self.eqn.inputs if self.eqn is not None else [])]
        while todo:
            v = todo.pop()
            if id(v) in origins:
                return True
            made = self.producers.get(v)
            if made is not None and id(v) not in seen:
                seen.add(id(v))
                todo.extend(made.inputs)
        return False

    def _partner(self, var: Var, d: int) -> tuple[Var, int] | None:
        """A dimension of another computed input of an equation reading ``var`` (a constant
        the current equation reads, or the current equation's output: an Expand's) that has
        the sizes of ``var``'s ``d`` in every trace and that the equation's shape rule needs
        it to equal (refuses ``d`` grown alone, accepts both grown: a broadcast partner, a
        matrix product's inner size); else the partner of another dimension of ``var`` with
        those sizes (the rows of a square mask). Reading it is right wherever eager runs:
        eager raises where they differ. Only a dimension already computed is read."""
        if self.eqn is None:
            return None
        readers = [self.eqn] if any(v is var for v in self.eqn.inputs) else \
            [e for e in self.graph.eqns if any(v is var for v in e.inputs)]
        for eqn in readers:
            found = self._partner_in(eqn, var, d) if hasattr(eqn.prim, "infer") else None
            if found is not None:
                return found
        return None

    def _partner_in(self, eqn: Eqn, var: Var, d: int) -> tuple[Var, int] | None:
        """:meth:`_partner` in the one equation ``eqn`` reading ``var``."""
        sizes = self.sizes(var, d)
        at = next(i for i, v in enumerate(eqn.inputs) if v is var)

        def accepts(*grown: tuple[int, int]) -> bool:
            specs = [TensorSpec(tuple(n + 1 if (i, j) in grown else n
                                      for j, n in enumerate(v.shape)), v.dtype)
                     for i, v in enumerate(eqn.inputs)]
            try:
                eqn.prim.infer(*specs, **eqn.params)
            except Exception:  # noqa: BLE001 - (any refusal of the shapes)
                return False
            return True

        for e in [d, *(e for e in range(len(var.shape)) if e != d)]:
            if self.sizes(var, e) != sizes or var.shape[e] < 2 or accepts((at, e)):
                continue
            for i, v in enumerate(eqn.inputs):
                if i == at or v in self.graph.consts or v not in self.names:
                    continue
                for j in range(len(v.shape)):
                    if self.sizes(v, j) == sizes and accepts((at, e), (i, j)):
                        return v, j
        return None

    def register_dims(self, var: Var, name: str, rules: dict[int, Any]) -> None:
        """Makes the dynamic sizes of ``var``'s dimensions ``d`` in ``rules`` (``name``
        holds ``var``) known to later shape tensors, where no graph input's dimension gives
        them; ``rules[d]``: what computes that size from the inputs' (equal rules give equal
        sizes; sizes that two rules share in every trace are read from neither)."""
        for d, rule in rules.items():
            sizes = self.sizes(var, d)
            if sizes[0] == sizes[1] or \
                    self._follower(list(self.graph.inputs), 0, sizes) is not None:
                continue
            if self._rules.get(sizes) == rule:  # (a second padding of the same size)
                self._origin[sizes].append(var)
            else:
                self.make_known(var, sizes, self.node("Shape", [name], start=d, end=d + 1),
                                rule)

    def input_dim(self, size: int, twin_size: int) -> str | None:
        """The run-time size (a 1-D int64 tensor) of the graph's inputs' dimension that is
        ``size`` and ``twin_size`` in the two traces, if some dimension is."""
        found = self._follower(list(self.graph.inputs), 0, (size, twin_size))
        return None if found is None else self.dim(*found)

    def sizes(self, var: Var, d: int) -> tuple[int, ...]:
        """The size of ``var``'s dimension ``d`` in each trace (the traced one, the second,
        the check trace where there is one)."""
        sizes = (var.shape[d], self.twin_shape(var)[d])
        far = None if self.check is None or var not in self.check[0] else \
            self._paired(var, *self.check)
        return sizes if far is None else (*sizes, far.shape[d])

    def _multiple_of_input(self, sizes: tuple[int, ...]) -> tuple[str, int, tuple[Var, int]] \
            | None:
        """``("Mul", k, (var, j))`` or ``("Add", c, (var, j))`` where the size is ``k`` times
        one dynamic input size ``N`` in every trace (``x.repeat(2, 1)`` of a dynamic batch),
        or ``N`` and a constant (padding); None when no input size or several give it."""
        found = {}
        for var in self.graph.inputs:
            for j in self.dynamic_dims(var):
                n, k = self.sizes(var, j), sizes[0] // var.shape[j]
                c = sizes[0] - var.shape[j]
                if k > 1 and sizes == tuple(k * m for m in n[:len(sizes)]):
                    found.setdefault((n, "Mul", k), (var, j))
                elif c and sizes == tuple(m + c for m in n[:len(sizes)]):
                    found.setdefault((n, "Add", c), (var, j))
        if len(found) != 1:
            return None
        ((_, op, k), where), = found.items()
        return op, k, where

    def dynamic_sizes(self) -> set[tuple[int, int]]:
        """The (traced, resized) size pairs of the graph inputs' dynamic dimensions."""
        return {(v.shape[d], self.twin_shape(v)[d]) for v in self.graph.inputs
                for d in self.dynamic_dims(v)}

    def _follower(self, sources: list[Var], d: int, sizes: tuple[int, ...],
                  shape: tuple[int, ...] | None = None) -> tuple[Var, int] | None:
        """The first dimension of ``sources`` (the one of a value of ``shape`` kept whole,
        with as many elements before it, where given, then the same position ``d``: a
        reshape that splits the channels has H and W after them, of equal sizes in every
        trace after strided convolutions) that has ``sizes`` in the traces (those given:
        the first two, or all three)."""
        if sizes[0] == sizes[1]:
            return None
        before = None if shape is None else math.prod(shape[:d])
        for var in sources:
            kept = [j for j in range(len(var.shape)) if before is not None and
                    var.shape[j] == shape[d] and math.prod(var.shape[:j]) == before]
            order = kept + ([d] if d < len(var.shape) else []) + list(range(len(var.shape)))
            for j in order:
                if self.sizes(var, j)[:len(sizes)] == sizes:
                    return var, j
        return None

    def join(self, pieces: list[Any]) -> str:
        """A 1-D int64 tensor of ``pieces``: ints, or names of 1-D int64 tensors."""
        parts, run = [], []
        for p in pieces:
            if isinstance(p, int):
                run.append(p)
                continue
            if run:
                parts.append(self.ints(run))
                run = []
            parts.append(p)
        if run:
            parts.append(self.ints(run))
        return parts[0] if len(parts) == 1 else self.node("Concat", parts, axis=0)
