"""``ember.jit.save`` / ``ember.jit.load``: a compiled graph and its weights in one safetensors
file (arrays) whose header holds the graph as JSON. No pickle and no Python code of the user's:
loading rebuilds the graph from primitive names and runs it with the generated code.

Graphs with effects (an optimizer step) are not saved: their meaning lives in Python objects
(the optimizer). Save those with ``ember.save(model.state_dict())`` instead.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from ember.backend import Device
from ember.backend import device as to_device
from ember.dtypes import DType, from_numpy, to_dtype
from ember.errors import ArgumentError, CheckpointError
from ember.jit.ir import Effect, Eqn, Graph, Source, StateRef, Var, sub_graphs
from ember.ops.primitive import PRIMITIVES, Primitive
from ember.tensor import Tensor, _wrap

FORMAT = "ember.jit/1"


def _unregistered(*args: Any) -> Any:
    raise RuntimeError("ember.jit.save/load: no file format is registered; import ember.io "
                       "(import ember does)")


class _Files:
    """How the file is written and read: by :mod:`ember.io`'s safetensors code, which the
    layer above registers here (``write(path, arrays, metadata)``, ``read(path) -> (arrays,
    metadata)``), as the layers above plug into the lower ones."""

    write: Callable[[Any, dict, dict], None] = _unregistered
    read: Callable[[Any], tuple[dict, dict]] = _unregistered


FILES = _Files()


def save(compiled: Any, path: str | os.PathLike | IO[bytes]) -> None:
    """Writes the signature of the most recent call of ``compiled`` (graph and weights) to a
    path or a binary file object.

    Example:
        >>> fast = ember.jit.compile(model.eval())
        >>> with ember.no_grad():
        ...     fast(ember.randn(1, 784))
        >>> ember.jit.save(fast, "model.ejit")
        >>> ember.jit.load("model.ejit")(ember.randn(1, 784)).shape
        ember.Size([1, 10])
    """
    entry = getattr(compiled, "ran", None) or compiled.last
    graph = compiled.graph if entry is None else entry.graph  # (never called: .graph says so)
    if entry.joint is not None:
        raise ArgumentError(f"ember.jit.save: {graph.name} was compiled as a differentiable call "
                            "(called with grad on); save an inference graph: call it under "
                            "ember.no_grad() (or on an eval() model without grad) first")
    if graph.arg_writes or graph.arg_grads:
        raise ArgumentError(f"ember.jit.save: {graph.name} writes into its arguments; saved "
                            "graphs are pure functions of their inputs")
    arrays: dict[str, np.ndarray] = {}
    doc = {"format": FORMAT, "name": graph.name,
           "inputs": [_var(v) for v in graph.inputs],
           "state": [_state(ref, arrays) for ref in graph.state],
           "consts": [_const(v, a, arrays) for v, a in graph.consts.items()],
           "eqns": [_eqn(e) for e in _flat_eqns(graph)],
           "outputs": [None if v is None else v.id for v in graph.outputs],
           "writes": [[graph.label(t), v.id] for t, v in graph.writes],
           "grads": [[graph.label(t), None if v is None else v.id] for t, v in graph.grads]}
    FILES.write(path, arrays, {"ember.jit": json.dumps(doc)})  # (atomic: never half a file)


def load(path: str | os.PathLike | IO[bytes], device: Any = None) -> LoadedFunction:
    """Reads a file :func:`save` wrote (a path or a binary file object); the result runs the
    graph on tensors."""
    where = os.fspath(path) if isinstance(path, str | os.PathLike) else "the file"
    try:
        arrays, meta = FILES.read(path)  # (a damaged file: a CheckpointError naming it)
    except OSError as exc:
        raise CheckpointError(f"ember.jit.load: cannot read {where} ({exc.strerror or exc})") \
            from None
    if "ember.jit" not in meta:
        raise CheckpointError(f"ember.jit.load: {where} holds no compiled graph (it was not "
                              "written by ember.jit.save; for checkpoints use ember.load)")
    dev = to_device(device)
    try:
        doc = json.loads(meta["ember.jit"])
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise CheckpointError(f"ember.jit.load: {where}: format {found!r}, this version "
                                  f"reads {FORMAT!r}")
        graph = _graph(doc, arrays, dev, where)
    except CheckpointError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:  # (JSON's too)
        raise CheckpointError(f"ember.jit.load: {where} is damaged ({type(e).__name__}: {e}); "
                              "it was changed after ember.jit.save wrote it. Hint: save the "
                              "graph again") from None
    return LoadedFunction(graph, dev)


def check_params(prim: Primitive, n_inputs: int, params: dict, who: str) -> None:
    """Refuses a saved equation whose params are not those ``prim`` takes (a file changed
    since it was written: the name of a param, or one missing), before any pass reads them."""
    try:
        inspect.signature(prim.infer).bind(*[None] * n_inputs, **params)
    except TypeError as e:
        raise CheckpointError(f"{who} is damaged: its {prim.name!r} equation has the params "
                              f"{sorted(params)}, which the primitive does not take ({e})") \
            from None


class LoadedFunction:
    """A graph loaded by :func:`load`: call it with tensors shaped like the saved inputs; it
    returns one tensor, or a tuple when the graph has several outputs (the nesting of the
    original return value is not stored)."""

    def __init__(self, graph: Graph, device: Device) -> None:
        from ember.jit.codegen import generate
        from ember.jit.passes import optimize

        self.graph = graph
        dev = graph.state[0].tensor._device if graph.state else device
        self.device = dev
        planned, frees = optimize(graph, {})
        self.generated = generate(planned, dev.xp, dev, frees)

    @property
    def code(self) -> str:
        return self.generated.code

    def __call__(self, *inputs: Tensor, **named: Any) -> Any:
        expected = self.graph.inputs
        if named or len(inputs) != len(expected) or any(
                not isinstance(t, Tensor) or tuple(t.shape) != v.shape or t.dtype is not v.dtype
                for t, v in zip(inputs, expected)):
            got = ", ".join(f"{tuple(t.shape)} {t.dtype.name}" if isinstance(t, Tensor) else
                            type(t).__name__ for t in inputs)
            want = ", ".join(f"{v.shape} {v.dtype.name}" for v in expected)
            raise ArgumentError(
                f"ember.jit: {self.graph.name} was compiled for inputs ({want}), got ({got})"
                f"{f' and keywords {sorted(named)}' if named else ''}; a loaded graph takes its "
                "tensors by position, in the order the function received them (keyword "
                "tensors after the positional ones), and keeps the other arguments (numbers, "
                "flags) it was traced with: compile and save it again for other shapes or values")
        out = [None if a is None else _wrap(a, self.device)
               for a in self.generated.fn(*(t._data for t in inputs))]
        return out[0] if len(out) == 1 else tuple(out)


# -- writing ---------------------------------------------------------------------------------
def _flat_eqns(graph: Graph) -> list[Eqn]:
    """Equations with fused kernels expanded back into the primitives they fuse."""
    out = []
    for eqn in graph.eqns:
        if isinstance(eqn.prim, Effect):
            raise ArgumentError(f"ember.jit.save: {graph.name} contains {eqn.prim.name}, an effect "
                                "on Python objects; save graphs of pure functions (inference). "
                                "Hint: save a training run with ember.save(model.state_dict())")
        if sub_graphs(eqn):
            raise ArgumentError(f"ember.jit.save: {graph.name} contains {eqn.prim.name} "
                                "(data-dependent control flow), whose branches the file format "
                                "does not hold. Hint: save the weights with "
                                "ember.save(model.state_dict()) and compile again after loading")
        inner = getattr(eqn.prim, "eqns", None)
        out.extend(inner if inner is not None else [eqn])
    return out


def _var(v: Var) -> list:
    return [v.id, list(v.shape), v.dtype.name]


def _state(ref: StateRef, arrays: dict) -> list:
    data = ref.tensor.grad._data if ref.grad else ref.tensor._data
    arrays[f"state/{ref.label}{'.grad' if ref.grad else ''}"] = np.ascontiguousarray(data)
    return [*_var(ref.var), ref.label, ref.grad]


def _const(v: Var, a: Any, arrays: dict) -> list:
    arrays[f"const/{v.id}"] = np.ascontiguousarray(a)
    return _var(v)


def _eqn(e: Eqn) -> dict:
    src = e.source
    return {"prim": e.prim.name, "in": [v.id for v in e.inputs],
            "out": [_var(v) for v in e.outputs],
            "params": {k: encode_param(v, e.prim.name, k) for k, v in e.params.items()},
            "src": None if src is None else [src.file, src.line, src.text, src.what]}


def encode_param(value: Any, owner: str, key: str,
                 other: Callable[[Any], Any] | None = None, who: str = "ember.jit.save") -> Any:
    """A primitive's param ``key`` (of ``owner``; both named in errors, by the function
    ``who``) as JSON: numbers, strings, tuples, lists, dicts, dtypes, devices and primitives;
    ``other`` encodes what else a caller stores (returning None for what it does not know
    either).

    Example:
        >>> encode_param((1, 2.5, float("inf")), "pad", "value")
        {'tuple': [1, 2.5, {'float': 'inf'}]}
    """
    def encode(v: Any) -> Any:
        if v is None or isinstance(v, bool | int | str):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": repr(v)}
        if isinstance(v, tuple | list):
            items = [encode(x) for x in v]
            return {"tuple": items} if isinstance(v, tuple) else items
        if isinstance(v, DType):
            return {"dtype": v.name}
        if isinstance(v, Device):
            return {"device": str(v)}
        if isinstance(v, Primitive):
            return {"prim": v.name}
        if isinstance(v, dict):
            return {"dict": [[k, encode(x)] for k, x in v.items()]}
        found = other(v) if other is not None else None
        if found is not None:
            return found
        raise ArgumentError(f"{who}: {owner}'s param {key}={v!r} ({type(v).__name__}) "
                            "has no file form; a random op with its own Generator, say. Hint: "
                            "use the default generator inside saved graphs")

    return encode(value)


# -- reading ---------------------------------------------------------------------------------
def decode_param(value: Any, other: Callable[[str, Any], Any] | None = None) -> Any:
    """The param :func:`encode_param` wrote; ``other(tag, inner)`` decodes the caller's own
    tags.

    Example:
        >>> decode_param({'tuple': [1, 2.5, {'float': 'inf'}]})
        (1, 2.5, inf)
    """
    def decode(v: Any) -> Any:
        if isinstance(v, list):
            return [decode(x) for x in v]
        if not isinstance(v, dict):
            return v
        (tag, inner), = v.items()
        if tag == "tuple":
            return tuple(decode(x) for x in inner)
        if tag == "float":
            return float(inner)
        if tag == "dtype":
            return to_dtype(inner)
        if tag == "device":
            return to_device(inner)
        if tag == "prim":
            return PRIMITIVES[inner]
        if tag == "dict":
            return {k: decode(x) for k, x in inner}
        if other is None:
            raise CheckpointError(f"ember.jit.load: unknown param tag {tag!r} in the file")
        return other(tag, inner)

    return decode(value)


def _graph(doc: dict, arrays: dict, dev: Device, where: str) -> Graph:
    g = Graph(doc["name"])
    vars_: dict[int, Var] = {}

    def new(entry: list, kind: str) -> Var:
        vid, shape, dtype = entry[:3]
        var = vars_[vid] = Var(vid, tuple(shape), to_dtype(dtype), kind)
        return var

    def array(name: str, var: Var) -> Any:
        """The file's array ``name``, which must have ``var``'s shape and dtype."""
        if name not in arrays:
            raise CheckpointError(f"ember.jit.load: {where} is damaged: it lacks the array "
                                  f"{name!r} that its graph reads")
        a = arrays[name]
        if var.shape == () and a.shape == (1,):
            a = a.reshape(())  # (np.ascontiguousarray wrote a 0-d array with shape (1,))
        if tuple(a.shape) != var.shape or from_numpy(a.dtype) is not var.dtype:
            raise CheckpointError(
                f"ember.jit.load: {where} is damaged: the array {name!r} is {tuple(a.shape)} "
                f"{from_numpy(a.dtype).name}, its graph reads {var.shape} {var.dtype.name}")
        return dev.xp.asarray(a)

    g.inputs = [new(e, "input") for e in doc["inputs"]]
    owners: dict[str, Tensor] = {}
    for e in doc["state"]:
        var, label, grad = new(e, "state"), e[3], e[4]
        data = array(f"state/{label}{'.grad' if grad else ''}", var)
        if grad:
            owners[label].grad = _wrap(data, dev)
        else:
            owners[label] = _wrap(data, dev)
        g.state.append(StateRef(var, owners[label], label, grad))
    for e in doc["consts"]:
        var = new(e, "const")
        g.consts[var] = array(f"const/{var.id}", var)
    for e in doc["eqns"]:
        if e["prim"] not in PRIMITIVES:
            raise CheckpointError(f"ember.jit.load: {where} uses the primitive {e['prim']!r}, "
                                  "which this version of Ember does not have")
        src = e["src"]
        params = {k: decode_param(v) for k, v in e["params"].items()}
        check_params(PRIMITIVES[e["prim"]], len(e["in"]), params, f"ember.jit.load: {where}")
        g.eqns.append(Eqn(PRIMITIVES[e["prim"]], [vars_[i] for i in e["in"]], params,
                          [new(o, "eqn") for o in e["out"]],
                          None if src is None else Source(*src)))
    g.outputs = [None if i is None else vars_[i] for i in doc["outputs"]]
    g.writes = [(owners[label], vars_[i]) for label, i in doc["writes"]]
    g.grads = [(owners[label], None if i is None else vars_[i]) for label, i in doc["grads"]]
    return g
