"""The Python source of a :class:`~ember.fx.Graph`'s ``forward``, as ``torch.fx`` writes it: one
line per node, infix operators for ``operator`` functions, ``ember.``-qualified names for
Ember's functions, and each value dropped (``x = None``) after its last use."""

from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
import textwrap
from collections.abc import Iterable
from typing import Any

import ember
import ember.nn.functional as F
from ember.dtypes import DType
from ember.fx.node import Node

__all__ = ["CodeGen", "PythonCode", "Namespace", "python_code"]

BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
          operator.matmul: "@", operator.and_: "&", operator.or_: "|", operator.xor: "^",
          operator.lshift: "<<", operator.rshift: ">>", operator.eq: "==", operator.ne: "!=",
          operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}
UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}

#: names a generated forward may not give a value (they are its globals or its ``self``)
RESERVED = {"self", "ember", "operator", "math", "inf", "nan"}


class Namespace:
    """Unique Python identifiers made from any candidate text, as torch.fx's: ``add``,
    ``add_1``, …; a candidate ending in ``_<n>`` counts on from the highest number its base
    has had (``add_1`` taken: ``add_2``, or further)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._counts: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        name = re.sub(r"[^0-9a-zA-Z_]", "_", candidate) or "_unnamed"
        if name[0].isdigit():
            name = "_" + name
        numbered = re.fullmatch(r"(.*)_(\d+)", name)
        base, i = (numbered[1], int(numbered[2])) if numbered else (name, 0)
        i = i or self._counts.get(base, 0)
        while (name in self._used or keyword.iskeyword(name) or name in RESERVED
               or hasattr(builtins, name)):
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        self._counts[base] = i
        return name


def snake_case(name: str) -> str:
    """``name`` in snake case, as node and global names are made (an underscore before a
    capital that follows a lower-case letter, as torch.fx's): ``snake_case("fooBar")`` is
    ``"foo_bar"``, ``snake_case("conv2D")`` is ``"conv2d"``."""
    return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", name).lower()


class PythonCode:
    """``src``: the ``forward`` function's source; ``globals``: the names it reads."""

    def __init__(self, src: str, globals_: dict[str, Any]) -> None:
        self.src, self.globals = src, globals_


class CodeGen:
    r"""How a graph's ``forward`` is written and called, as ``torch.fx.CodeGen``: a subclass
    given to :meth:`Graph.set_codegen <ember.fx.Graph.set_codegen>` changes the ``def`` line
    (``gen_fn_def``) or the ``return`` (``generate_output``) and, to match, the inputs and
    output :class:`~ember.fx.Interpreter` runs with (``process_inputs`` /
    ``process_outputs``).

    Example:
        >>> class ListCodeGen(CodeGen):
        ...     def gen_fn_def(self, free_vars, maybe_return_annotation):
        ...         return f"def forward(self, args):\n    {', '.join(free_vars)}, = args"
        ...     def process_inputs(self, *inputs):
        ...         return inputs[0]
        >>> gm = ember.fx.symbolic_trace(lambda x, y: x + y)
        >>> gm.graph.set_codegen(ListCodeGen())
        >>> _ = gm.recompile()
        >>> gm([ember.ones(1), ember.ones(1)])
        tensor([2.])
    """

    def __init__(self) -> None:
        # (as torch.fx's: the on_generate_code transformer, and the generated function's name)
        self._body_transformer: Any = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        """The ``def`` line of ``forward`` taking ``free_vars`` (``self`` first, added where
        they lack it)."""
        if not free_vars or free_vars[0] != "self":
            free_vars = ["self", *free_vars]
        return f"def forward({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Any) -> str:
        """The ``return`` statement of the output node's argument (the default one writes
        constants as globals, so it is not this ``repr``)."""
        return f"return {output_args!r}"

    def process_inputs(self, *args: Any) -> Any:
        """The placeholders' values for the inputs a caller passes to ``forward``."""
        return args

    def process_outputs(self, outputs: Any) -> Any:
        """The value a caller gets for the output node's value."""
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        """``(name, object)`` pairs the generated code may read as globals."""
        return []


class _Globals:
    """The objects the generated code refers to, each under a stable readable name."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = taken  # the values' names
        self.names: dict[str, Any] = {"ember": ember, "operator": operator, "math": math,
                                      "inf": math.inf, "nan": math.nan}
        self._ids: dict[int, str] = {}

    def taken(self, name: str) -> bool:
        """Whether ``name`` is a value's (a node's) name."""
        return name in self._taken

    def ref(self, obj: Any, hint: str) -> str:
        if id(obj) in self._ids:
            return self._ids[id(obj)]
        name = re.sub(r"[^0-9a-zA-Z_]", "_", hint) or "_obj"
        base, i = name, 0
        while (name in self.names or name in self._taken or keyword.iskeyword(name)
               or hasattr(builtins, name)):  # (the code may call the builtin of that name)
            i += 1
            name = f"{base}_{i}"
        self.names[name], self._ids[id(obj)] = obj, name
        return name


def qualified_function(fn: Any, glob: _Globals) -> str:
    """``ember.relu``, ``ember.nn.functional.gelu``, a builtin's name, ``math.sqrt``, the path
    a function object names as its ``_qualified_name`` (``ember.export.prims.relu``), else a
    global."""
    path = getattr(fn, "_qualified_name", None)
    if isinstance(path, str) and path.startswith("ember."):
        return path
    name = getattr(fn, "__name__", None)
    if name is not None:
        top = getattr(ember, name, None)
        if top is fn or getattr(top, "__wrapped__", None) is fn:  # (its out= form: the same op)
            return f"ember.{name}"
        if getattr(F, name, None) is fn:
            return f"ember.nn.functional.{name}"
        if getattr(builtins, name, None) is fn:
            return name
        if getattr(operator, name, None) is fn:
            return f"operator.{name}"
        if getattr(math, name, None) is fn:
            return f"math.{name}"
    return glob.ref(fn, name or type(fn).__name__)


def attribute_path(root: str, target: str) -> str:
    """``self.layer1`` + ``0.conv1`` -> ``getattr(self.layer1, "0").conv1``."""
    expr = root
    for part in target.split("."):
        expr = f"{expr}.{part}" if part.isidentifier() and not keyword.iskeyword(part) \
            else f'getattr({expr}, "{part}")'
    return expr


def render(a: Any, glob: _Globals) -> str:
    """The Python expression of an argument value."""
    if isinstance(a, Node):
        return a.name
    if a is None or a is Ellipsis or isinstance(a, (bool, int, float, str)):
        return repr(a)  # (a float's repr is 'inf', '-inf' or 'nan', globals of the code)
    if isinstance(a, tuple):
        inner = ", ".join(render(x, glob) for x in a)
        if hasattr(a, "_fields"):  # a named tuple: rebuilt by its class, a global
            return f"{glob.ref(type(a), type(a).__name__)}({inner})"
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(render(x, glob) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{render(k, glob)}: {render(v, glob)}"
                               for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({render(a.start, glob)}, {render(a.stop, glob)}, {render(a.step, glob)})"
    if isinstance(a, DType) and getattr(ember, repr(a).removeprefix("ember."), None) is a:
        return repr(a)
    if callable(a) and hasattr(a, "__name__"):
        return qualified_function(a, glob)
    return glob.ref(a, "_" + snake_case(type(a).__name__))


def _call_args(args: Iterable[Any], kwargs: dict, glob: _Globals) -> str:
    parts = [render(a, glob) for a in args]
    parts += [f"{k} = {render(v, glob)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _expression(node: Node, glob: _Globals) -> str:
    args, kwargs = node.args, node.kwargs
    if node.op == "get_attr":
        return attribute_path("self", node.target)
    if node.op == "call_module":
        return f"{attribute_path('self', node.target)}({_call_args(args, kwargs, glob)})"
    if node.op == "call_method":
        return f"{render(args[0], glob)}.{node.target}({_call_args(args[1:], kwargs, glob)})"
    fn = node.target
    if not kwargs and len(args) == 2 and fn in BINARY:
        return f"{render(args[0], glob)} {BINARY[fn]} {render(args[1], glob)}"
    if not kwargs and len(args) == 1 and fn in UNARY:
        return f"{UNARY[fn]}{render(args[0], glob)}"
    if fn is getattr and not kwargs and len(args) == 2 and isinstance(args[1], str) \
            and args[1].isidentifier() and not keyword.iskeyword(args[1]):
        return f"{render(args[0], glob)}.{args[1]}"
    if fn is operator.getitem and not kwargs and len(args) == 2:
        return f"{render(args[0], glob)}[{render(args[1], glob)}]"
    return f"{qualified_function(fn, glob)}({_call_args(args, kwargs, glob)})"


def python_code(nodes: list[Node], codegen: CodeGen | None = None) -> PythonCode:
    """The source of ``forward(self, <placeholders>)`` computing ``nodes`` in order, written
    with ``codegen``'s ``def`` and ``return`` where it is given."""
    codegen = codegen or CodeGen()
    glob = _Globals({node.name for node in nodes})
    glob.names.update(codegen.additional_globals())
    last_use: dict[Node, Node] = {}
    for node in reversed(nodes):
        for used in node.all_input_nodes:
            last_use.setdefault(used, node)
    dropped_after: dict[Node, list[str]] = {}
    for used, user in last_use.items():
        dropped_after.setdefault(user, []).append(used.name)
    placeholders, body = [], []
    for node in nodes:
        if node.op == "placeholder":
            placeholders.append(node)
            continue
        if node.op == "output":
            # (torch.fx's default writes the output's repr; Ember's own, used unless a
            # subclass overrides it, writes constants as globals)
            custom = type(codegen).generate_output is not CodeGen.generate_output
            body.append(textwrap.indent(codegen.generate_output(node.args[0]) if custom
                                        else f"return {render(node.args[0], glob)}", "    "))
            continue
        line = f"    {node.name} = {_expression(node, glob)}"
        # (a value nothing uses, an in-place call's result, is dropped at once, as torch.fx)
        drops = dropped_after.get(node, []) + ([] if node.users else [node.name])
        if drops:
            line += ";  " + " = ".join(drops) + " = None"
        body.append(line)
    if not body or not body[-1].lstrip().startswith("return"):
        body.append("    pass")
    params, renames = [], []
    used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(body)))  # (builtins the code calls too)
    for node in placeholders:
        if node.target.startswith("*"):  # (``*args`` / ``**kwargs``, a tuple / dict)
            params.append(node.target)
            if node.name != node.target.lstrip("*"):
                renames.append(f"    {node.name} = {node.target.lstrip('*')}")
            continue
        param = _parameter_name(node, glob, used)
        params.append(f"{param} = {render(node.args[0], glob)}" if node.args else param)
        if param != node.name:
            renames.append(f"    {node.name} = {param}")
    transform = codegen._body_transformer  # (see Graph.on_generate_code)
    if transform is not None:  # (it takes and gives statements without indent, as torch.fx)
        stmts = "".join(transform([textwrap.dedent(line) + "\n" for line in renames + body]))
        renames, body = [], ["    " + line for line in stmts.rstrip("\n").split("\n")]
    src = codegen.gen_fn_def(params, "") + "\n" + "\n".join(renames + body) + "\n"
    return PythonCode(src, glob.names)


def _parameter_name(node: Node, glob: _Globals, used: set[str]) -> str:
    """The name ``forward`` takes a placeholder under: the traced parameter's own (``input``,
    whose node is ``input_1``), so that a call by keyword works, unless the code uses that
    name (a builtin it calls: ``slice``, ``getattr``; a global; another value) or it is
    ``self``."""
    target = node.target
    if target == node.name:
        return target
    if isinstance(target, str) and target.isidentifier() and not keyword.iskeyword(target) \
            and target != "self" and target not in used and target not in glob.names \
            and not glob.taken(target):
        return target
    return node.name
