"""``to_model``: a module or function, traced on example inputs, as an ``onnx.ModelProto``;
``export``: the same, written to a file (``torch.onnx.export``'s signature)."""

from __future__ import annotations

import io
import os
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import onnx
from onnx import helper

from ember.errors import ArgumentError
from ember.export.capture import Capture, retrace_resized, state_restored, trace, twins
from ember.func.pytree import tree_flatten
from ember.jit.arguments import argument_names
from ember.jit.ir import Graph, Source, Var
from ember.jit.sources import DataDependentShape
from ember.onnx import (
    converters,  # noqa: F401 - registers the converters
    external,
)
from ember.onnx.below import BelowTrace
from ember.onnx.context import Context, onnx_type
from ember.onnx.dynamic_shapes import as_dynamic_axes
from ember.onnx.modes import TrainingMode, export_mode
from ember.onnx.registry import CONVERTERS, SHAPE_PARAMS, ExportError
from ember.onnx.strides import hidden_counts, hint, refuse_hidden_counts, stride_spreads
from ember.ops.random import Sample
from ember.tensor import Tensor

DEFAULT_OPSET = 18
MIN_OPSET = 17  # LayerNormalization
WHO = "ember.onnx.export"  # (named in the errors of tracing)


def to_model(model: Any, args: Any = (), *, kwargs: dict[str, Any] | None = None,
             input_names: Sequence[str] | None = None,
             output_names: Sequence[str] | None = None,
             dynamic_axes: Mapping[str, Any] | None = None,
             opset_version: int | None = None, do_constant_folding: bool = True,
             export_params: bool = True, training: TrainingMode | int = TrainingMode.EVAL,
             keep_initializers_as_inputs: bool | None = None,
             dynamic_shapes: Any = None) -> onnx.ModelProto:
    """Traces ``model(*args)`` in eval mode and returns it as an ONNX model (see
    :func:`export` for the arguments).

    Example:
        >>> proto = ember.onnx.to_model(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
        >>> [n.op_type for n in proto.graph.node]
        ['Transpose', 'MatMul', 'Add', 'Identity']
    """
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ArgumentError(f"ember.onnx.export: opset_version {opset} is not supported; use "
                            f"{MIN_OPSET} to {newest}")
    args, kwargs = _as_args(args, kwargs)
    leaves, spec = tree_flatten((args, kwargs))
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    leaf_names = _argument_names(model, args, kwargs, leaves)
    in_names = _names(input_names, len(tensors), leaf_names, "input")
    if dynamic_shapes is not None:
        if dynamic_axes is not None:
            raise ArgumentError("ember.onnx.export: give dynamic_axes or dynamic_shapes, not both")
        dynamic_axes = as_dynamic_axes(dynamic_shapes, leaf_names, in_names)
    with export_mode(model, training), state_restored(model):
        try:
            capture, graph = trace(model, args, kwargs, do_constant_folding, WHO)
        except DataDependentShape as e:  # (tracing stops at the first such op)
            raise ExportError(_unsupported({e.primitive: [e.source]}, _DATA_DEPENDENT,
                                           "calls with output sizes that depend on values")) \
                from None
        _unshare_constants(graph)
        out_names = _output_names(output_names, graph, capture.compiled.last.out_consts)
        axes = _dynamic_axes(dynamic_axes, in_names, out_names, tensors, graph)
        second = third = None
        probe = None
        if any(axes[0].values()):
            second = retrace_resized(capture, leaves, spec, axes[0])
            third = _farther_trace(capture, leaves, spec, axes[0],
                                   stride_spreads(graph, axes[0]))
            if third is not None:
                probe = _far_trace(capture, graph, leaves, spec, axes[0])
    _check_distinct(in_names, out_names, [ref.label for ref in graph.state])
    names = (in_names, out_names)
    below = None if second is None else BelowTrace(capture, graph, leaves, spec, axes[0], WHO)
    ctx = _converted(graph, second, opset, names, below=below) if third is None else \
        _checked(graph, second, third, opset, names, below)
    if probe is not None:
        _check_far(ctx, graph, second, *probe, opset, names, below)
    return _model(ctx, graph, in_names, out_names, axes, export_params,
                  bool(keep_initializers_as_inputs))


def export(model: Any, args: Any = (), f: str | os.PathLike | io.IOBase | None = None, *,
           kwargs: dict[str, Any] | None = None,
           input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None,
           dynamic_axes: Mapping[str, Any] | None = None,
           opset_version: int | None = None, do_constant_folding: bool = True,
           export_params: bool = True, verbose: bool = False,
           training: TrainingMode | int = TrainingMode.EVAL,
           keep_initializers_as_inputs: bool | None = None,
           external_data: bool | None = None, dynamic_shapes: Any = None,
           dynamo: bool = False) -> onnx.ModelProto:
    """Exports ``model`` to ONNX as ``torch.onnx.export`` (its TorchScript-style form) does:
    the model is called once on ``args`` in eval mode and under ``no_grad``, and what the
    call computes is written to ``f``, its parameters and buffers as initializers.

    Args:
        model: an ``nn.Module`` or a function of tensors.
        args: the example inputs: a tensor, or a tuple of arguments (nested tuples, lists
            and dicts of tensors too; a dict last holds keyword arguments, as in torch).
        f: a path, or a binary file object to write into; None writes nothing (the model is
            returned).
        kwargs: keyword arguments of the call.
        input_names: names of the graph's inputs, in order (default: the argument names).
        output_names: names of its outputs (default ``output`` or ``output_0``, ...).
        dynamic_axes: ``{name: {axis: "dim_name"}}`` or ``{name: [axis, ...]}`` for inputs
            and outputs whose sizes may change, e.g. ``{"x": {0: "batch"}}``.
        opset_version: the ONNX opset (default 18, at least 17).
        do_constant_folding: compute what depends only on constants at export time.
        export_params: store parameters as initializers; with False they become inputs.
        verbose: print the exported graph.
        training: :class:`TrainingMode` ``EVAL`` (every submodule in eval mode for the call)
            or ``PRESERVE`` (each in its own mode); ``TRAINING`` is refused.
        keep_initializers_as_inputs: also list the parameters and buffers among the graph's
            inputs (their initializers are then defaults a caller may override), as torch's
            legacy exporter does; None or False lists only the model's inputs.
        external_data: write the weights to ``<f>.data`` beside the model file (``f`` a
            path; ignored when ``f`` is None). None (the default) or False does it only for
            a model over protobuf's 2 GiB limit, as torch's TorchScript exporter (its dynamo
            exporter switches at 1536 MiB of weights and defaults to True: pass True for
            its layout). A later export to ``f`` without external data leaves an old
            ``<f>.data`` in place (the new model does not read it).
        dynamic_shapes: the dynamic axes in torch.export's form, as ``torch.onnx.export``
            (dynamo) takes them: ``{"x": {0: Dim("batch")}}`` (a Dim, a name, ``Dim.AUTO``;
            None or ``Dim.STATIC`` for a fixed size), keyed by argument name, or a tuple
            with one entry per tensor argument; instead of ``dynamic_axes``.
        dynamo: accepted for torch's signature; Ember has one exporter, so it changes
            nothing.

    Returns:
        The ``onnx.ModelProto`` that was written.

    Example:
        >>> model = ember.models.cnn().eval()
        >>> ember.onnx.export(model, ember.randn(1, 1, 28, 28), "cnn.onnx",
        ...                   input_names=["image"], output_names=["logits"],
        ...                   dynamic_axes={"image": {0: "batch"}})  # doctest: +SKIP
    """
    proto = to_model(model, args, kwargs=kwargs, input_names=input_names, output_names=output_names,
                     dynamic_axes=dynamic_axes, opset_version=opset_version,
                     do_constant_folding=do_constant_folding, export_params=export_params,
                     training=training, keep_initializers_as_inputs=keep_initializers_as_inputs,
                     dynamic_shapes=dynamic_shapes)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        external.write(proto, f, external_data)
    return proto


# -- arguments ---------------------------------------------------------------------------
def _as_args(args: Any, kwargs: dict[str, Any] | None) -> tuple[tuple, dict[str, Any]]:
    """``(args, kwargs)`` of the call: a single argument is a one-tuple, and a dict at the
    end of ``args`` holds keyword arguments (torch's convention) when ``kwargs`` is None."""
    args = tuple(args) if isinstance(args, tuple | list) else (args,)
    if kwargs is None and args and isinstance(args[-1], dict):
        return args[:-1], dict(args[-1])
    return args, dict(kwargs or {})


def _argument_names(model: Any, args: tuple, kwargs: dict, leaves: list) -> list[str]:
    """Each tensor leaf's parameter name (``x``, ``pair[0]``, a keyword), ``input_i`` for
    one of ``*args``."""
    names = argument_names(model, args, kwargs)
    tensors = [name for name, leaf in zip(names, leaves) if isinstance(leaf, Tensor)]
    return [f"input_{i}" if name.startswith("#") else name for i, name in enumerate(tensors)]


def _names(given: Sequence[str] | None, count: int, default: list[str] | None,
           prefix: str) -> list[str]:
    if given is None:
        if default is not None and len(set(default)) == len(default):
            return default
        return [prefix] if count == 1 else [f"{prefix}_{i}" for i in range(count)]
    given = list(given)
    if len(given) > count:
        raise ArgumentError(f"ember.onnx.export: {len(given)} {prefix}_names for {count} "
                            f"{prefix}s: {given}")
    if len(set(given)) != len(given):
        raise ArgumentError(f"ember.onnx.export: {prefix}_names repeat a name: {given}")
    return given + [f"{prefix}_{i}" for i in range(len(given), count)]  # (torch's rule)


def _output_names(given: Sequence[str] | None, graph: Graph, consts: list) -> list:
    """The name of each of the graph's outputs; None for an output that is None, which is
    left out of the model (as torch.onnx leaves it out)."""
    dropped = [var is None and i < len(consts) and consts[i] is None
               for i, var in enumerate(graph.outputs)]
    names = iter(_names(given, dropped.count(False), None, "output"))
    return [None if drop else next(names) for drop in dropped]


def _check_distinct(in_names: list[str], out_names: list[str], weights: list[str]) -> None:
    """ONNX values have one name each: an input named as a weight would read the weight."""
    clash = sorted((set(in_names) | set(out_names)) & set(weights))
    both = sorted(set(in_names) & set(out_names))
    if clash or both:
        what = f"{clash} also name parameters or buffers" if clash else \
            f"{both} name both an input and an output"
        raise ArgumentError(f"ember.onnx.export: the names {what}; give other input_names or "
                            "output_names")


def _dynamic_axes(dynamic_axes: Mapping[str, Any] | None, in_names: list[str],
                  out_names: list[str], tensors: list[Tensor], graph: Graph) -> tuple:
    """``({input index: {axis: dim_name}}, {name: {axis: dim_name}})`` from
    ``dynamic_axes``."""
    by_input: dict[int, dict[int, str]] = {}
    dim_names: dict[str, dict[int, str]] = {}
    for name, spec in (dynamic_axes or {}).items():
        if name in in_names:
            rank = len(tensors[in_names.index(name)].shape)
        elif name in out_names:
            var = graph.outputs[out_names.index(name)]
            rank = len(var.shape) if var is not None else 0
        else:
            raise ArgumentError(f"ember.onnx.export: dynamic_axes names {name!r}, which is no "
                                f"input ({in_names}) or output ({out_names})")
        named = dict(spec) if isinstance(spec, Mapping) else \
            {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(spec)}
        for axis in named:
            if not -rank <= axis < rank:
                raise ArgumentError(f"ember.onnx.export: dynamic axis {axis} of {name!r}, which "
                                    f"has {rank} dimensions")
        dim_names[name] = {a % rank: str(n) for a, n in named.items()}
        if name in in_names:
            by_input[in_names.index(name)] = dim_names[name]
    return by_input, dim_names


# -- conversion --------------------------------------------------------------------------
_CHECK_STEPS = (3, 2, 1)  # (the check trace moves the k-th dynamic axis name by
# step·(k + 1)², in other proportions than the second trace's k + 1: a size that followed one
# axis there by chance, as W / 3 follows the batch when W grows 3 times as fast, follows none
# here; the largest step the model accepts, grown or else shrunk where the size stays >= 2)


def _farther_trace(capture: Capture, leaves: list, spec: Any,
                   axes: dict[int, dict[int, str]],
                   spreads: dict[str, int] | None = None) -> Graph | None:
    """A third trace, with the dynamic axes moved farther than the second's: grown by
    ``3·(k + 1)²`` plus each name's ``spreads`` (:func:`~ember.onnx.strides.stride_spreads`),
    or where the model refuses those sizes (it may bound them: a GPT's block size) shrunk by
    as much, then smaller steps, then the spreads alone (``k²`` elsewhere: T = 20 shrinks to 4
    past a step of 16 in a model bounded at 32), then the same without the spreads (a strided
    count then the
    same in every trace is refused: :func:`~ember.onnx.strides.refuse_hidden_counts`); None,
    with a warning, when it refuses all."""
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    traced: dict[str, int] = {}  # each dim name's size, in the order resized grows them
    for index, t in enumerate(tensors):
        for axis, name in sorted(axes.get(index, {}).items()):
            traced.setdefault(name, t.shape[axis])
    tried = [{name: size + k + 1 for k, (name, size) in enumerate(traced.items())}]  # (2nd)
    last = None
    for widened in [True, False] if spreads else [False]:
        spread = spreads if widened else {}
        for step in _CHECK_STEPS + ((0,) if widened else ()):
            for shrink in (False, True):
                sizes = {}
                for k, (name, size) in enumerate(traced.items()):
                    base = step * (k + 1) ** 2 + spread.get(name, 0) or (k + 1) ** 2
                    for move in (base, base + 1):  # (step 0: the strides' moves alone, the
                        # others a little; never to the second trace's size: a clamp there,
                        # min(B, 3) at B = 2, 3, 3, would look like B)
                        sizes[name] = size - move if shrink and size - move >= 2 else \
                            size + move
                        if sizes[name] != tried[0][name]:
                            break
                if sizes in tried:
                    continue
                tried.append(sizes)
                try:
                    third = retrace_resized(capture, leaves, spec, axes, sizes=sizes)
                except ExportError as e:
                    last = str(e).splitlines()[-1]
                    continue
                return third
    warnings.warn(f"{WHO}: the model refused every size of the check trace ({tried[1:]}), "
                  "so the sizes that follow the dynamic axes were read from two traces "
                  "only: a size clamped or rounded (ember.arange(T).clamp(max=5)) may be "
                  "exported as if it followed the axis. Hint: trace at sizes the model "
                  f"accepts with some room to grow or shrink. Its last refusal: {last}",
                  UserWarning, stacklevel=3)
    return None


def _far_trace(capture: Capture, graph: Graph, leaves: list, spec: Any,
               axes: dict[int, dict[int, str]]) -> tuple[dict[str, int], Graph] | None:
    """One more trace, with every dynamic axis name far from its traced size T (2T + k for
    the k-th name, so that two names traced at one size stay apart; not ember.export's
    T + 32 from a small T: every name moves at once, and a batch of 2 traced at 34 with the
    image twice as high and wide costs 68 times the export's trace): a size clamped or
    rounded near the traced ones
    (``x[:, T // 16 * 16:]`` starts at 0 for every T below 16, ``min(T, 30)``) follows no
    rule there, which the three near traces cannot see. Where the model refuses those sizes
    (it may bound them: a GPT's block size) or takes another path there (``cdist`` computes
    through a matrix product from 25 rows on), halfway there (T + (T + k) // 2); None, with a
    warning, where it refuses both: the near traces' graph stands."""
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    traced: dict[str, int] = {}
    for index, t in enumerate(tensors):
        for axis, name in sorted(axes.get(index, {}).items()):
            traced.setdefault(name, t.shape[axis])
    tried, why, other_path = [], "", None
    for part in (1, 2):
        sizes = {name: size + max((size + k) // part, k + 2)
                 for k, (name, size) in enumerate(traced.items())}
        if sizes in tried:
            continue
        tried.append(sizes)
        try:
            probe = retrace_resized(capture, leaves, spec, axes, sizes=sizes)
        except ExportError as e:
            why = str(e).splitlines()[-1]
            continue
        try:
            twins(graph, probe, WHO)
        except ExportError as e:
            why, other_path = str(e).splitlines()[-1], sizes
            continue
        if other_path is not None:
            warnings.warn(f"{WHO}: at {other_path} the model runs other ops than at the "
                          "traced sizes, so the exported graph may be wrong there (a count "
                          "rounded from a size, x.repeat(1, T // 16 + 1, 1), or another "
                          "algorithm for larger inputs, cdist's). Hint: trace at the sizes "
                          f"the model is run at. The difference: {why}", UserWarning,
                          stacklevel=3)
        return sizes, probe
    warnings.warn(f"{WHO}: the model refused the far check sizes {tried}, or took another "
                  "path there, so a size computed in Python from a shape that is rounded or "
                  "clamped beyond the traced sizes (x[:, T // 16 * 16:] at T = 10) may be "
                  "exported as the rule it follows near them. Hint: trace at the sizes the "
                  f"model is run at. Its last refusal: {why}", UserWarning, stacklevel=3)
    return None


def _check_far(ctx: Context, graph: Graph, second: Graph, sizes: dict[str, int], probe: Graph,
               opset: int, names: tuple[list[str], list[str]],
               below: BelowTrace | None = None) -> None:
    """Refuses a model whose graph, converted against the far trace ``probe`` (at
    ``sizes``), is not the ONNX graph ``ctx`` that the near traces gave."""
    at = ", ".join(f"{n} = {s}" for n, s in sizes.items())
    try:
        far = _converted(graph, probe, opset, names, second, below)
    except ExportError as e:
        raise ExportError(f"{_NO_RULE}. {_FAR_HINT}; traced again at {at}:\n{e}") from None
    if _serialized(far) != _serialized(ctx):
        raise ExportError(f"{_NO_RULE}, or at {at}. {_FAR_HINT}")


def _converted(graph: Graph, other: Graph | None, opset: int,
               names: tuple[list[str], list[str]], check: Graph | None = None,
               below: BelowTrace | None = None) -> Context:
    """``graph`` converted, its sizes that follow a dynamic axis read from ``other`` (the
    graph traced with those axes resized; None without dynamic axes), from dimensions that
    follow them in ``check`` too (a third trace, when given)."""
    mapping, changed, pairs = twins(graph, other, WHO) if other is not None else (None, {}, {})
    try:
        checked = None if check is None else twins(graph, check, WHO)[::2]
    except ExportError as e:
        raise ExportError(f"{_NO_RULE}. {_NO_RULE_HINT}; resized farther:\n{e}") from None
    ctx = Context(graph, opset, mapping, other.consts if other is not None else {}, changed,
                  pairs, checked)
    ctx.below = below
    ctx.reserved.update(*names, (ref.label for ref in graph.state))
    _convert(ctx, graph, names[0], changed)
    return ctx


_NO_RULE = ("ember.onnx.export: some sizes follow no rule over the dynamic axes: they follow "
            "one at the traced size and the first resized one, but not when the axes are "
            "resized farther (a size clamped or rounded: ember.arange(T).clamp(max=5), "
            "x[:, :min(T, 5)], x[:, :T // 2])")
_NO_RULE_HINT = "Hint: trace at sizes where the limit shows, or export with fixed sizes"
_FAR_HINT = ("Hint: trace at the sizes the model is run at (a size computed in Python from a "
             "shape, T // 16 * 16, is exported as the rule it follows at the traced sizes), "
             "export with fixed sizes, or with do_constant_folding=False where a folded "
             "constant (ember.arange(T).clamp(max=25)) depends on the size")


def _checked(graph: Graph, second: Graph, third: Graph, opset: int,
             names: tuple[list[str], list[str]], below: BelowTrace | None = None) -> Context:
    """``graph`` converted against ``second``. Two traces tell a size that follows a dynamic
    axis from a constant only where the rule holds at both sizes (``arange(T).clamp(max=5)``
    is an arange at T = 4 and 5): the model converted against a third, farther trace must be
    the same ONNX graph (sizes are read, in both, from dimensions that follow them in all
    three traces: 2·B and W agree at B, W = 2, 4 and 3, 6 only)."""
    ctx = _converted(graph, second, opset, names, third, below)
    try:
        other = _converted(graph, third, opset, names, second, below)
    except ExportError as e:
        raise ExportError(f"{_NO_RULE}. {_NO_RULE_HINT}; resized farther:\n{e}") from None
    if _serialized(ctx) != _serialized(other):
        cuts = hidden_counts(ctx, graph, 2)
        raise ExportError(_NO_RULE + (":" if cuts else f". {_NO_RULE_HINT}") + "".join(
            f"\n  {ctx.where(eqn)}: {text}, and another count resized farther"
            for eqn, _, text in cuts) +
            (f"\n{hint(cuts[0][0], cuts[0][1], ctx)}" if cuts else ""))
    return ctx


def _unshare_constants(graph: Graph) -> None:
    """Gives each repeated read of one constant in an equation its own variable. The tracer
    shares equal constants, and a resized trace may tell them apart: the batch and channel
    grids of a gather over a batch of one and one channel are one (1, 1, 1) zero there."""
    next_id = graph.unused_id()
    for eqn in graph.eqns:
        for i, var in enumerate(eqn.inputs):
            if var in graph.consts and var in eqn.inputs[:i]:
                clone = Var(next_id, var.shape, var.dtype, "const")
                next_id += 1
                graph.consts[clone] = graph.consts[var]
                eqn.inputs[i] = clone


def _serialized(ctx: Context) -> list[bytes]:
    return [part.SerializeToString() for part in ctx.nodes + ctx.initializers]


def _convert(ctx: Context, graph: Graph, in_names: list[str], changed: dict) -> None:
    for var, name in zip(graph.inputs, in_names):
        ctx.names[var] = name
    for ref in graph.state:
        ctx.names[ref.var] = ref.label
    missing: dict[str, list] = {}
    for eqn in graph.eqns:
        if eqn.prim.name not in CONVERTERS:
            missing.setdefault(eqn.prim.name, []).append(eqn.source)
    if missing:
        drawn = any(isinstance(e.prim, Sample) and e.prim.name in missing for e in graph.eqns)
        raise ExportError(_unsupported(missing, _RANDOM if drawn else ""))
    refuse_hidden_counts(ctx, graph)  # (a strided count the same in every trace)
    unmade: dict[Var, Any] = {}  # outputs a converter does not compute
    skipped: set[Var] = set()  # outputs of refused equations (the refusal says why)
    for eqn in graph.eqns:
        ctx.eqn = eqn
        if any(v in skipped for v in eqn.inputs):
            skipped.update(eqn.outputs)
            continue
        before = len(ctx.problems)
        for v in eqn.inputs:
            if v in unmade:
                ctx.refuse(f"reads output {unmade[v].outputs.index(v)} of {unmade[v].prim.name}"
                           ", which ONNX export does not compute")
        if id(eqn) in changed and eqn.prim.name not in SHAPE_PARAMS:
            ctx.refuse(f"its params {eqn.params} change with the size of a dynamic axis")
        made = CONVERTERS[eqn.prim.name](ctx, eqn) if len(ctx.problems) == before else None
        if len(ctx.problems) > before:
            skipped.update(eqn.outputs)
            continue
        made = made if isinstance(made, list | tuple) else [made]
        for var, name in zip(eqn.outputs, made):
            if name is None:
                unmade[var] = eqn
            else:
                ctx.names[var] = name
    ctx.eqn = None
    for var in graph.outputs:
        if var in unmade and var not in skipped:
            ctx.refuse(f"the output {var.name} comes from {unmade[var].prim.name}'s output that "
                       "ONNX export does not compute")
    _raise_problems(ctx)


def _raise_problems(ctx: Context) -> None:
    """One :class:`ExportError` listing why each equation cannot be exported; a reason
    given for several equations of one line (each layer of an LSTM) once, with its count
    after the place (``lstm_scan at f.py:5 (2x): ...``)."""
    if ctx.problems:
        counts = Counter(ctx.problems)
        raise ExportError("ember.onnx.export: the model cannot be exported:\n  " + "\n  ".join(
            where + (f" ({n}x)" if n > 1 else "") + f": {why}"
            for (where, why), n in counts.items()))


_DATA_DEPENDENT = ("Its output size depends on the input's values (boolean-mask indexing "
                   "x[mask] runs nonzero; unique, bincount), and an exported graph has the "
                   "sizes of its trace (tracing stops at the first such call). Hint: select "
                   "with ember.where(mask, x, 0) instead of x[mask]")


_RANDOM = ("Among them a random draw (ember.randn(...), or an in-place fill such as "
           "t.normal_() of a tensor the model makes): the exported graph would hold this "
           "trace's draw as one fixed value, not a new draw per call. Hint: pass the noise in "
           "as an input; a module's random initial weights fold when it is built in the call")


def _unsupported(missing: dict[str, list[Source | None]], why: str = "",
                 what: str = "no ONNX converter for these primitives") -> str:
    """The error listing each primitive that cannot be exported (``what`` says why: no
    converter, by default), how often and where it is called (``why`` after the list, when
    given)."""
    lines = []
    for name, sources in sorted(missing.items()):
        where = sorted({str(s) for s in sources if s is not None})
        lines.append(f"  {name} ({len(sources)}x{', at ' + ', '.join(where[:3]) if where else ''}"
                     f"{' ...' if len(where) > 3 else ''})")
    hint = f"\n{why}" if why else (
        "\nHint: compute the model with supported ops (ember.onnx.supported_primitives() "
        "lists them), or register a converter with @ember.onnx.converter(\"name\") (see "
        "docs/onnx.md)")
    return f"ember.onnx.export: {what}:\n" + "\n".join(lines) + hint


def _model(ctx: Context, graph: Graph, in_names: list[str], out_names: list[str],
           axes: tuple, export_params: bool, weights_as_inputs: bool) -> onnx.ModelProto:
    dim_names = axes[1]
    # a dynamic size of an output takes the name of the input axis it follows (in every
    # trace: a size equal in the first two may differ in the third)
    followed = {ctx.sizes(v, a): dim for v, n in zip(graph.inputs, in_names)
                for a, dim in dim_names.get(n, {}).items()}

    def value_info(name: str, var: Var) -> Any:
        named = dim_names.get(name, {})
        sizes = [ctx.sizes(var, d) for d in range(len(var.shape))]
        shape = [named.get(d, size if len(set(sizes[d])) == 1 and
                           (var, d) not in ctx.run_time else
                           followed.get(sizes[d], f"{name}_dim{d}"))
                 for d, size in enumerate(var.shape)]
        return helper.make_tensor_value_info(name, onnx_type(var.dtype), shape)

    inputs = [value_info(n, v) for v, n in zip(graph.inputs, in_names)]
    outputs = []
    for var, name in zip(graph.outputs, out_names):
        if name is None:  # (a None output)
            continue
        if var is None:
            raise ExportError(f"ember.onnx.export: output {name} is not a tensor")
        ctx.nodes.append(helper.make_node("Identity", [ctx.value(var)], [name],
                                          name=ctx.node_name("Identity")))
        outputs.append(value_info(name, var))
    _raise_problems(ctx)  # (an output that is a constant following a dynamic axis, unrebuilt)
    weights = []
    for ref in graph.state:
        data = ref.tensor.grad if ref.grad else ref.tensor
        if export_params:
            weights.append(onnx.numpy_helper.from_array(data.detach().numpy(), ref.label))
        if weights_as_inputs or not export_params:
            inputs.append(value_info(ref.label, ref.var))
    huge = external.place_huge(weights)
    body = helper.make_graph(ctx.nodes, graph.name, inputs, outputs,
                             initializer=weights + ctx.initializers)
    opsets = [helper.make_opsetid("", ctx.opset)]
    model = helper.make_model(body, opset_imports=opsets, producer_name="ember",
                              ir_version=helper.find_min_ir_version_for(opsets))
    external.adopt(model, huge)
    try:  # (with type and shape inference: an op given a type it does not take fails here)
        external.check(model)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise ExportError(f"ember.onnx.export: the exported graph fails ONNX's checker (a "
                          f"converter made an invalid node): {e}") from None
    return model
