"""``ember.export.save`` / ``ember.export.load``: an :class:`ExportedProgram` in one
safetensors file — its state, constants and example inputs as arrays, its graph, signature,
dynamic dims and guards as JSON in the header. No pickle and no Python code: loading rebuilds
the graph from primitive names (as ``ember.jit.save`` does)."""

from __future__ import annotations

import collections
import inspect
import json
import math
import os
import sys
from typing import IO, Any

import numpy as np

import ember
from ember import fx
from ember.dtypes import to_dtype
from ember.errors import ArgumentError, ArgumentTypeError, CheckpointError
from ember.export import prims
from ember.export.dynamic_shapes import ValueRange
from ember.export.graph_signature import (
    ConstantArgument,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)
from ember.export.guards import Guards, InputGuard
from ember.export.lift import TensorMeta
from ember.export.program import ExportedProgram
from ember.export.symbolic import SizeExpr
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.io.safetensors_file import read_arrays, write_arrays
from ember.jit.ir import Source, type_str
from ember.jit.serialize import check_params, decode_param, encode_param
from ember.ops.primitive import PRIMITIVES
from ember.tensor import Tensor

FORMAT = "ember.export/1"
FUNCTIONS = prims.FUNCTIONS  # (the functions besides primitives, by their names in the file)
_NAMES = {id(fn): name for name, fn in FUNCTIONS.items()}
_EXTRA = "ember.export.extra_files"  # the metadata key of save's extra_files


def save(ep: ExportedProgram, f: str | os.PathLike | IO[bytes], *,
         extra_files: dict[str, str] | None = None) -> None:
    """Writes ``ep`` to ``f`` (a path or a binary file); ``extra_files`` maps names to
    text stored beside it, as torch.export.save's (:func:`load` gives them back).

    Example:
        >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
        >>> ember.export.save(ep, "linear.ep")                # doctest: +SKIP
        >>> ember.export.load("linear.ep").module()(ember.ones(3, 4)).shape  # doctest: +SKIP
        ember.Size([3, 2])
    """
    arrays: dict[str, np.ndarray] = {}
    first: dict[int, str] = {}
    tied: dict[str, str] = {}  # (a tensor under several keys, tied weights: stored once)
    for group, tensors in (("state", ep.state_dict), ("const", ep.constants)):
        for key, t in tensors.items():
            name = f"{group}/{key}"
            if id(t) in first:
                tied[name] = first[id(t)]
                continue
            first[id(t)] = name
            arrays[name] = _array(t)
    example, _ = tree_flatten(ep.example_inputs)
    for i, leaf in enumerate(example):
        if isinstance(leaf, Tensor):
            arrays[f"example/{i}"] = _array(leaf)
    sig = ep.graph_signature
    doc = {
        "format": FORMAT,
        "nodes": [_node(n) for n in ep.graph.nodes],
        "inputs": [[s.kind.name, _arg(s.arg), s.target, s.persistent] for s in sig.input_specs],
        "outputs": [[s.kind.name, _arg(s.arg), s.target] for s in sig.output_specs],
        "state": list(ep.state_dict), "constants": list(ep.constants), "tied": tied,
        "ranges": {k: [v.lower, None if v.upper == math.inf else v.upper]
                   for k, v in ep.range_constraints.items()},
        "guards": [[g.name, _value(list(g.keys)), _value(g.dims),
                    None if g.dtype is None else g.dtype.name, _value(g.value)]
                   for g in ep._guards.inputs],
        "arguments": ep._argument_names,
        "defaults": _value(ep._guards.defaults), "packed": ep._guards.packed,
        "out": _structure(ep._out_spec, "output"),
        "example": [_structure(tree_flatten(ep.example_inputs)[1], "example inputs"),
                    [None if isinstance(x, Tensor) else _value(x) for x in example]],
    }
    meta = {"ember.export": json.dumps(doc)}
    if extra_files:
        meta[_EXTRA] = json.dumps(_checked_extra(extra_files))
    write_arrays(f, arrays, meta)


def _checked_extra(extra_files: dict[str, str]) -> dict[str, str]:
    _check_is_dict("save", extra_files)
    for name, text in extra_files.items():
        if not isinstance(name, str):
            raise ArgumentTypeError(f"ember.export.save: extra_files' names are str, got "
                                    f"{name!r} ({type(name).__name__}). Hint: str(name)")
        if not isinstance(text, str):
            raise ArgumentTypeError(
                f"ember.export.save: extra_files maps names to str, got {name!r}: "
                f"{type(text).__name__}. Hint: decode bytes first (data.decode())")
    return dict(extra_files)


def _check_is_dict(who: str, extra_files: Any) -> None:
    if not isinstance(extra_files, dict):
        raise ArgumentTypeError(f"ember.export.{who}: extra_files is a dict of name -> str, "
                                f"got {type(extra_files).__name__}. Hint: "
                                "extra_files={'note.txt': text}")


def load(f: str | os.PathLike | IO[bytes], *,
         extra_files: dict[str, str] | None = None) -> ExportedProgram:
    """Reads a program :func:`save` wrote (its tensors on the CPU); a file of another kind,
    or one changed since, is a :class:`~ember.errors.CheckpointError`. Every extra file saved
    with it goes into the dict ``extra_files`` (by name), as in torch.export.load."""
    if extra_files is not None:
        _check_is_dict("load", extra_files)
    where = os.fspath(f) if isinstance(f, (str, os.PathLike)) else "the file"
    try:
        arrays, meta = read_arrays(f)  # (a damaged file: a CheckpointError naming it)
    except OSError as exc:
        raise CheckpointError(f"ember.export.load: cannot read {where} "
                              f"({exc.strerror or exc})") from None
    if "ember.export" not in meta:
        raise CheckpointError(f"ember.export.load: {where} holds no exported program (it was "
                              "not written by ember.export.save)")
    try:
        ep = _program(json.loads(meta["ember.export"]), arrays, where)
        _check_state(ep, where)
        if extra_files is not None and _EXTRA in meta:
            extra_files.update(json.loads(meta[_EXTRA]))
    except CheckpointError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"ember.export.load: {where} is damaged ({type(e).__name__}: "
                              f"{e}); it was changed after ember.export.save wrote it") \
            from None
    return ep


def _program(doc: dict, arrays: dict[str, np.ndarray], where: str) -> ExportedProgram:
    if doc.get("format") != FORMAT:
        raise CheckpointError(f"ember.export.load: {where}: format {doc.get('format')!r}, "
                              f"this version reads {FORMAT!r}")
    parameters = {s[2] for s in doc["inputs"] if s[0] == "PARAMETER"}
    tensors: dict[str, Tensor] = {}
    for group, keys in (("state", doc["state"]), ("const", doc["constants"])):
        for key in keys:
            name = f"{group}/{key}"
            if name in doc["tied"]:
                tensors[name] = tensors[doc["tied"][name]]
                continue
            t = _tensor(arrays[name])  # (parameters stay parameters, as the model had them)
            tensors[name] = ember.nn.Parameter(t) if group == "state" and key in parameters \
                else t
    state = {k: tensors[f"state/{k}"] for k in doc["state"]}
    constants = {k: tensors[f"const/{k}"] for k in doc["constants"]}
    sig = ExportGraphSignature(
        [InputSpec(InputKind[k], _unarg(a), t, p) for k, a, t, p in doc["inputs"]],
        [OutputSpec(OutputKind[k], _unarg(a), t) for k, a, t in doc["outputs"]])
    ranges = {k: ValueRange(lo, math.inf if hi is None else hi)
              for k, (lo, hi) in doc["ranges"].items()}
    guards = Guards([InputGuard(name, tuple(_unvalue(keys)), _unvalue(dims),
                                None if dtype is None else to_dtype(dtype), _unvalue(value))
                     for name, keys, dims, dtype, value in doc["guards"]], ranges,
                    _unvalue(doc["defaults"]), doc.get("packed", {}))
    spec, values = doc["example"]
    example = [_tensor(arrays[f"example/{i}"]) if v is None and f"example/{i}" in arrays
               else _unvalue(v) for i, v in enumerate(values)]
    return ExportedProgram(fx.GraphModule({}, _graph(doc["nodes"], where)), sig, state,
                           ranges, constants, tree_unflatten(example, _spec(spec)), guards,
                           doc["arguments"], _spec(doc["out"]))


def _check_state(ep: ExportedProgram, where: str) -> None:
    """Each state tensor and constant has the shape and dtype of its placeholder."""
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    for spec in ep.graph_signature.input_specs:
        val = vals[spec.arg.name]
        if spec.kind is InputKind.USER_INPUT or val is None or \
                not all(isinstance(d, int) for d in val.shape):
            continue
        t = ep._tensor(spec.kind, spec.target)
        if tuple(t.shape) != tuple(val.shape) or t.dtype is not val.dtype:
            raise CheckpointError(f"ember.export.load: {where} is damaged: {spec.target} is "
                                  f"{type_str(t.dtype, tuple(t.shape))}, its placeholder "
                                  f"{spec.arg.name} {val}")


# -- writing ------------------------------------------------------------------------------
def _array(t: Tensor) -> np.ndarray:
    """A tensor's values, C-contiguous (a 0-d tensor stays 0-d: ``np.ascontiguousarray``
    makes it 1-d)."""
    return np.asarray(t.detach().cpu().numpy(), order="C")


def _node(n: fx.Node) -> dict:
    out: dict[str, Any] = {"name": n.name, "op": n.op}
    if n.op == "call_function":
        out["target"] = _target(n)
    out["args"] = _value(n.args, n)
    out["kwargs"] = {"dict": [[k, _value(v, n, k)] for k, v in n.kwargs.items()]}
    val = n.meta.get("val")
    if val is not None:
        out["val"] = [_value(val.shape), val.dtype.name]
    source = n.meta.get("source")
    if source is not None:
        out["source"] = [source.file, source.line, source.text]
    return out


def _target(n: fx.Node) -> Any:
    if isinstance(n.target, prims.PrimitiveOp):
        return {"prim": n.target.prim.name}
    name = _NAMES.get(id(n.target))
    if name is None:
        raise ArgumentError(f"ember.export.save: node {n.name} calls {n.target!r}, which the file "
                            "format does not hold (only primitives and size arithmetic)")
    return name


class _NamedTuple:
    """A namedtuple in a structure being written: its class and its items."""

    def __init__(self, kind: type, items: list) -> None:
        self.kind, self.items = kind, items


def _tagged(tree: Any) -> Any:
    """``tree`` with its namedtuples as :class:`_NamedTuple` (the file keeps their class's
    name and fields: a plain tuple would lose them)."""
    if isinstance(tree, tuple) and hasattr(type(tree), "_fields"):
        return _NamedTuple(type(tree), [_tagged(x) for x in tree])
    if isinstance(tree, tuple | list):
        return type(tree)(_tagged(x) for x in tree) if type(tree) in (tuple, list) else tree
    if isinstance(tree, dict):
        return {k: _tagged(x) for k, x in tree.items()}
    return tree


def _namedtuple(module: str, qualname: str, fields: list[str], items: list) -> tuple:
    """``items`` as the namedtuple a file names. Its class where its module is already
    imported and it is a namedtuple with those fields, looked up without running code (no
    import, no module ``__getattr__``; the instance made as ``_make`` makes it); else a
    namedtuple of that name and fields (``rename=True``: a renamed field is ``_1``), else a
    plain tuple."""
    if len(items) != len(fields):
        raise ArgumentError(f"its namedtuple {qualname} holds {len(items)} items for the "
                            f"{len(fields)} fields {tuple(fields)}")
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = None if found is None or part == "<locals>" else \
            inspect.getattr_static(found, part, None)
    if type(found) is type and found.__bases__ == (tuple,) and "_make" in vars(found) and \
            vars(found).get("_fields") == tuple(fields):
        return tuple.__new__(found, items)
    try:
        made = collections.namedtuple(qualname.rpartition(".")[2], fields, rename=True)
    except (TypeError, ValueError):  # (a name that is no identifier)
        return tuple(items)
    return made._make(items) if made._fields == tuple(fields) else tuple(items)


def _value(value: Any, n: fx.Node | None = None, key: str = "args") -> Any:
    """``value`` (an argument ``key`` of node ``n``, named in errors) as JSON."""
    def other(v: Any) -> Any:
        if isinstance(v, _NamedTuple):
            return {"namedtuple": [v.kind.__module__, v.kind.__qualname__, list(v.kind._fields),
                                   [_value(x, n, key) for x in v.items]]}
        if isinstance(v, fx.Node):
            return {"node": v.name}
        if isinstance(v, SizeExpr):
            floor = [v.div, v.inner] if v.div != 1 else []  # (files without it load)
            return {"size": [v.coeff, list(v.symbols), v.offset, *floor]}
        if isinstance(v, slice):
            return {"slice": [_value(v.start, n, key), _value(v.stop, n, key),
                              _value(v.step, n, key)]}
        return None

    owner = "ember.export" if n is None else \
        n.target.prim.name if isinstance(n.target, prims.PrimitiveOp) else n.name
    return encode_param(value, owner, key, other, who="ember.export.save")


def _arg(a: TensorArgument | ConstantArgument) -> list:
    if isinstance(a, ConstantArgument):
        return [a.name, _value(a.value)]
    return [a.name]


def _structure(spec: Any, what: str) -> Any:
    """A pytree spec as JSON: the tree with its leaves numbered (tuples, lists and dicts;
    ``what`` is the program's part it describes, for the error another class is)."""
    tree = tree_unflatten(list(range(spec.num_leaves)), spec)
    try:
        return _value(_tagged(tree))
    except ArgumentError:
        raise ArgumentError(
            f"ember.export.save: the file cannot rebuild the class {_classes(spec)} in the "
            f"program's {what} (a class registered with "
            "ember.func.pytree.register_pytree_node). Hint: use tuples, lists or dicts in the "
            "model's inputs and outputs to save it") from None


def _classes(spec: Any) -> str:
    """The names of the classes other than tuples, lists and dicts in a pytree spec."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if node.kind is not None and not issubclass(node.kind, (tuple, list, dict)):
            found.add(node.kind.__name__)
        for child in node.children():
            walk(child)

    walk(spec)
    return ", ".join(sorted(found))


# -- reading ------------------------------------------------------------------------------
def _tensor(array: np.ndarray) -> Tensor:
    return ember.from_numpy(array.copy())


def _unvalue(value: Any, nodes: dict | None = None) -> Any:
    def other(tag: str, inner: Any) -> Any:
        if tag == "node":
            return nodes[inner]
        if tag == "size":
            return SizeExpr(inner[0], tuple(inner[1]), inner[2], *inner[3:5])
        if tag == "slice":
            return slice(*(_unvalue(x, nodes) for x in inner))
        if tag == "namedtuple":
            module, qualname, fields, items = inner
            return _namedtuple(module, qualname, fields, [_unvalue(x, nodes) for x in items])
        raise CheckpointError(f"ember.export.load: unknown value tag {tag!r}")

    return decode_param(value, other)


def _unarg(a: list) -> TensorArgument | ConstantArgument:
    return TensorArgument(a[0]) if len(a) == 1 else ConstantArgument(a[0], _unvalue(a[1]))


def _spec(structure: Any) -> Any:
    return tree_flatten(_unvalue(structure))[1]


def _graph(entries: list[dict], where: str) -> fx.Graph:
    g = fx.Graph()
    nodes: dict[str, fx.Node] = {}
    for e in entries:
        args, kwargs = _unvalue(e["args"], nodes), _unvalue(e["kwargs"], nodes)
        op = e["op"]
        if op == "call_function":
            name = e["target"]
            if isinstance(name, dict):
                if name["prim"] not in PRIMITIVES:
                    raise CheckpointError(f"ember.export.load: {where} uses the primitive "
                                          f"{name['prim']!r}, which this version of Ember "
                                          "does not have")
                check_params(PRIMITIVES[name["prim"]], len(args), kwargs,
                             f"ember.export.load: {where}")
                target: Any = prims.op(PRIMITIVES[name["prim"]])
            else:
                target = FUNCTIONS[name]
        else:
            target = e["name"] if op == "placeholder" else "output"
        node = g.create_node(op, target, args, kwargs, e["name"])
        if "val" in e:
            node.meta["val"] = TensorMeta(tuple(_unvalue(e["val"][0])), to_dtype(e["val"][1]))
        if "source" in e:
            node.meta["source"] = Source(*e["source"])
        nodes[e["name"]] = node
    return g
