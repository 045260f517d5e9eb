""":class:`ExportedProgram`: what :func:`ember.export.export` returns, as torch's — a
functional graph of primitives whose parameters, buffers and constants are placeholders, its
signature, the state it was exported with, and :meth:`ExportedProgram.module` to run it as a
module again."""

from __future__ import annotations

import copy
import inspect
import operator
import re
from collections.abc import Iterator
from typing import Any

import ember
from ember import fx
from ember.errors import ArgumentError
from ember.export.dynamic_shapes import ValueRange
from ember.export.graph_signature import ExportGraphSignature, InputKind
from ember.export.guards import Guards
from ember.export.verifier import verify
from ember.func.pytree import TreeSpec, tree_unflatten
from ember.fx import tracer as fx_trace
from ember.nn import Module
from ember.tensor import Tensor

__all__ = ["ExportedProgram"]


class ExportedProgram:
    """An exported model (see :func:`ember.export.export`).

    Attributes:
        graph_module: the graph as an ``ember.fx.GraphModule`` whose ``forward`` takes the
            lifted parameters, buffers and constants, then the user's tensors, and returns
            the buffers' new values, then the user's outputs (flat).
        graph_signature: what each placeholder and output is (:class:`ExportGraphSignature`).
        state_dict: the parameters and persistent buffers, by their keys in the model.
        constants: non-persistent buffers and lifted tensor constants.
        range_constraints: each dynamic dim's range (``{"batch": VR[1, 64]}``).
        example_inputs: ``(args, kwargs)`` of the export.

    Example:
        >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
        >>> ep.graph_signature.parameters
        ('weight', 'bias')
        >>> ep.module()(ember.ones(3, 4)).shape
        ember.Size([3, 2])
    """

    def __init__(self, graph_module: fx.GraphModule, graph_signature: ExportGraphSignature,
                 state_dict: dict[str, Tensor], range_constraints: dict[str, ValueRange],
                 constants: dict[str, Tensor], example_inputs: tuple[tuple, dict],
                 guards: Guards, argument_names: list[str], out_spec: Any) -> None:
        self.graph_module, self.graph_signature = graph_module, graph_signature
        self.state_dict, self.constants = state_dict, constants
        self.range_constraints, self.example_inputs = range_constraints, example_inputs
        self._guards, self._argument_names, self._out_spec = guards, argument_names, out_spec

    @property
    def graph(self) -> fx.Graph:
        """The graph of :attr:`graph_module`."""
        return self.graph_module.graph

    def named_parameters(self) -> Iterator[tuple[str, Tensor]]:
        """``(key, parameter)`` for each parameter, in placeholder order."""
        for key in self.graph_signature.parameters:
            yield key, self.state_dict[key]

    def parameters(self) -> Iterator[Tensor]:
        """The parameters, in placeholder order."""
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self) -> Iterator[tuple[str, Tensor]]:
        """``(key, buffer)`` for each buffer (non-persistent ones too), in placeholder order.

        Example:
            >>> ep = ember.export.export(ember.nn.BatchNorm1d(2), (ember.randn(3, 2),))
            >>> [k for k, _ in ep.named_buffers()]
            ['running_mean', 'running_var', 'num_batches_tracked']
        """
        for key in self.graph_signature.buffers:
            yield key, self._tensor(InputKind.BUFFER, key)

    def buffers(self) -> Iterator[Tensor]:
        """The buffers, in placeholder order."""
        for _, b in self.named_buffers():
            yield b

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def module(self) -> fx.GraphModule:
        """The program as a module: a ``GraphModule`` taking the model's arguments (checked
        against the export's guards, a :class:`~ember.export.guards.GuardError` naming the
        input otherwise), holding the parameters and buffers under their keys in the model,
        writing the buffers' new values into them (BatchNorm's running statistics in
        training mode) and returning the model's output structure. It shares the tensors of
        :attr:`state_dict`; gradients flow as through the model.

        Example:
            >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
            >>> m = ep.module()
            >>> sorted(m.state_dict())
            ['bias', 'weight']
        """
        g = fx.Graph()
        leaves = _leaf_nodes(g, self._argument_names, self._guards)
        env: dict[fx.Node, Any] = {}
        attrs: dict[str, Tensor] = {}
        user = iter(leaves)
        for spec, node in zip(self.graph_signature.input_specs, self._placeholders()):
            if spec.kind is InputKind.USER_INPUT:
                env[node] = next(user)
                continue
            attrs[spec.target] = self._tensor(spec.kind, spec.target)
            env[node] = g.get_attr(spec.target)
        outputs = g.graph_copy(self.graph, env)
        mutated = self.graph_signature.buffers_to_mutate
        # (a buffer returned as it was, then given a new value: a delay line's
        # ``out = self.buf; self.buf = x`` returns a copy of the old value, as eager does)
        held = {env[node] for spec, node in zip(self.graph_signature.input_specs,
                                                self._placeholders())
                if spec.kind is InputKind.BUFFER and spec.target in mutated.values()}
        returned = [g.call_method("clone", (v,)) if isinstance(v, fx.Node) and v in held else v
                    for v in outputs[len(mutated):]]
        for target, value in zip(mutated.values(), outputs):
            g.call_function(assign_buffer, (g.get_attr(target), value))
        structured = tree_unflatten(returned, self._out_spec)
        reached: list[fx.Node] = []
        fx.map_arg(structured, reached.append)
        # (a class registered as a pytree node, which the graph's output cannot reach into:
        # a node of the graph builds the structure from the leaves)
        if len(reached) < sum(isinstance(v, fx.Node) for v in returned):
            structured = g.call_function(unflatten_output, (list(returned), self._out_spec))
        g.output(structured)
        gm = ExportedModule(attrs, g)
        hidden = {s.target for s in self.graph_signature.input_specs
                  if s.kind is InputKind.CONSTANT_TENSOR or s.persistent is False}
        for target in hidden:  # (not in the module's state_dict, as in the model's)
            *path, name = target.split(".")
            owner = gm.get_submodule(".".join(path)) if path else gm
            owner._non_persistent_buffers_set.add(name)
        names, guards = self._argument_names, self._guards
        renamed = dict(zip(inspect.signature(gm.forward).parameters, names))

        def check_inputs(module: Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            values = _bound(list(renamed), args, kwargs,
                            {p: guards.defaults[n] for p, n in renamed.items()
                             if n in guards.defaults},
                            {p: guards.packed[n] for p, n in renamed.items()
                             if n in guards.packed})
            guards.check({renamed[k]: v for k, v in values.items()})
            return (), values  # (by name: a defaulted argument may precede a given one)

        gm.register_forward_pre_hook(check_inputs, with_kwargs=True)
        return gm

    @property
    def tensor_constants(self) -> dict[str, Tensor]:
        """:attr:`constants` (torch's older name)."""
        return self.constants

    def validate(self) -> None:
        """Checks that the graph and the signature still agree (after a pass edited them),
        as torch's verifier: only placeholders, primitive calls and one output; each
        placeholder with its spec, in order, each state target in :attr:`state_dict` or
        :attr:`constants`; each output with its spec. Raises
        :class:`~ember.export.verifier.SpecViolationError` naming the first mismatch.

        Example:
            >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
            >>> ep.validate()
            >>> del ep.state_dict["bias"]
            >>> ep.validate()
            Traceback (most recent call last):
            ...
            ember.export.verifier.SpecViolationError: the parameter bias is missing from the ...
        """
        verify(self)

    def run_decompositions(self, decomp_table: dict | None = None) -> ExportedProgram:
        """The program with its operators decomposed. Ember's graphs already hold only
        primitives (the analogue of torch's core ATen set) and are already functional, so
        this is a copy of the program (a new graph, the same tensors); ``decomp_table`` must
        be None or empty.

        Example:
            >>> ep = ember.export.export(ember.nn.ReLU(), (ember.randn(2),))
            >>> ep.run_decompositions().graph_signature.user_outputs
            ('relu',)
        """
        if decomp_table:
            raise ArgumentError("ExportedProgram.run_decompositions: Ember's exported graphs hold "
                                "primitives only, which decompose no further; pass no "
                                "decomp_table")
        gm = copy.deepcopy(self.graph_module)
        return ExportedProgram(gm, copy.deepcopy(self.graph_signature), dict(self.state_dict),
                               dict(self.range_constraints), dict(self.constants),
                               self.example_inputs, self._guards, self._argument_names,
                               self._out_spec)

    def _placeholders(self) -> list[fx.Node]:
        return [n for n in self.graph.nodes if n.op == "placeholder"]

    def _tensor(self, kind: InputKind, target: str) -> Tensor:
        if kind is InputKind.CONSTANT_TENSOR or target not in self.state_dict:
            return self.constants[target]
        return self.state_dict[target]

    def __str__(self) -> str:
        ranges = "{" + ", ".join(f"{k}: {v!r}" for k, v in self.range_constraints.items()) + "}"
        code = _readable(self.graph_module)
        return (f"ExportedProgram:\n{code}\nGraph signature: {self.graph_signature}\n"
                f"Range constraints: {ranges}\n")

    def __repr__(self) -> str:
        return str(self)


class ExportedModule(fx.GraphModule):
    """What :meth:`ExportedProgram.module` returns: a ``GraphModule`` whose graph was
    captured in one mode, so that ``train()`` and ``eval()`` are refused, as torch refuses
    them (they would leave a captured dropout or batch statistic as it was)."""

    def train(self, mode: bool = True) -> Module:
        raise NotImplementedError(
            f"Calling {'train' if mode else 'eval'}() is not supported on an exported "
            "module: its graph holds the mode the model was exported in (dropout, batch "
            "statistics). Hint: export the model again in eval() or train() mode")


def unflatten_output(leaves: list, spec: TreeSpec) -> Any:
    """An exported module's output, of a class registered as a pytree node, rebuilt from its
    ``leaves`` by the graph's last node (as torch's pytree codegen unflattens), so that
    ``forward``, ``code`` and :func:`ember.fx.symbolic_trace` give the structure too."""
    if fx_trace.active and (traced := fx_trace.record_call(unflatten_output, (leaves, spec),
                                                           {})) is not None:
        return traced  # (symbolic_trace of the exported module: a node)
    return tree_unflatten(list(leaves), spec)


unflatten_output._qualified_name = "ember.export.program.unflatten_output"


def assign_buffer(buffer: Tensor, value: Tensor) -> None:
    """Writes a buffer's new value into it (outside autograd, as BatchNorm updates its
    running statistics)."""
    if fx_trace.active and fx_trace.record_call(assign_buffer, (buffer, value), {}) is not None:
        return  # (symbolic_trace of the exported module: a node)
    with ember.no_grad():
        buffer.copy_(value)


assign_buffer._qualified_name = "ember.export.program.assign_buffer"


def _bound(params: list[str], args: tuple, kwargs: dict, defaults: dict,
           packed: dict[str, str]) -> dict[str, Any]:
    """A call's arguments by the module's parameter names, ``defaults`` where not given (a
    TypeError as Python's when the call does not fit). The extra positional arguments go
    into the ``*args`` parameter's tuple and the extra keywords into the ``**kwargs`` one's
    dict (``packed`` names those two), as ``inspect.Signature.bind`` does."""
    def wrong(why: str) -> TypeError:
        return TypeError(f"the exported module takes ({', '.join(params)}): {why}")

    star = next((p for p in params if packed.get(p) == "*"), None)
    stars = next((p for p in params if packed.get(p) == "**"), None)
    positional = params[:params.index(star)] if star else [p for p in params if p != stars]
    if len(args) > len(positional) and star is None:
        raise wrong(f"too many positional arguments ({len(args)})")
    values: dict[str, Any] = dict(zip(positional, args))
    if star is not None:
        values[star] = tuple(args[len(positional):])
    extra: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in values:
            raise wrong(f"got multiple values for argument {key!r}")
        if key in params and key not in packed:
            values[key] = value
        elif stars is not None:
            extra[key] = value
        else:
            raise wrong(f"got an unexpected keyword argument {key!r}")
    if stars is not None:
        values[stars] = extra
    for name in params:
        if name not in values:
            if name not in defaults:
                raise wrong(f"missing a required argument: {name!r}")
            values[name] = defaults[name]
    return values


def _leaf_nodes(g: fx.Graph, names: list[str], guards: Guards) -> list[fx.Node]:
    """A placeholder per argument of the call (the trailing ones the example call left to
    their defaults with those defaults), and a node for each tensor leaf in it."""
    required = max((i + 1 for i, n in enumerate(names) if n not in guards.defaults), default=0)
    top = {name: g.placeholder(name) if i < required else
           g.placeholder(name, default_value=guards.defaults[name])
           for i, name in enumerate(names)}
    leaves = []
    for guard in guards.inputs:
        if guard.dims is None:  # (a value baked into the graph: checked, never read)
            continue
        node = top[guard.name]
        for key in guard.keys:
            node = g.call_function(operator.getitem, (node, key))
        leaves.append(node)
    return leaves


def _readable(gm: fx.GraphModule) -> str:
    """The generated ``forward``, each value annotated with its dtype and shape (dynamic
    sizes by their dims' names) and preceded by the user's line that made it."""
    meta = {n.name: n for n in gm.graph.nodes}
    lines = []
    for line in gm.code.splitlines():
        if line.startswith("def forward("):
            args = [a.strip() for a in line[len("def forward("):-2].split(",")]
            typed = [a if a not in meta else f'{a}: "{meta[a].meta.get("val", "")}"'
                     for a in args]
            lines.append(f"def forward({', '.join(typed)}):")
            continue
        match = re.match(r"    (\w+) = ", line)
        node = meta.get(match.group(1)) if match else None
        if node is not None and "val" in node.meta:
            source = node.meta.get("source")
            if source is not None:
                lines.append(f"    # File: {source.file}:{source.line}, code: {source.text}")
            line = f'    {node.name}: "{node.meta["val"]}" = {line[match.end():]}'
        lines.append(line)
    body = "\n".join("        " + line if line else line for line in lines)
    return f"    class GraphModule(ember.nn.Module):\n{body}\n"
