"""What a function's bytecode names: the globals and closure names it reads and assigns, the
attribute chains it reads (``cfg.scale``) and those whose last attribute it assigns
(``self.h = h``), and the chains it reads items of (``cfg['x']``, ``self.cfg[0]``) or reads
whole (``len(cfg)``, ``helper(cfg)``).
:mod:`ember.jit.discover` follows them to what the function reaches."""

from __future__ import annotations

import dis
import functools
import types
from typing import Any

STORES = frozenset({"STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"})
GLOBAL_STORES = frozenset({"STORE_GLOBAL"})
LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
ATTRIBUTE_STORES = frozenset({"STORE_ATTR", "DELETE_ATTR"})
ATTRIBUTE_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
STATE_NAMES = frozenset({"state"})
CHAIN_ROOTS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST"})
NESTED_CHAIN_ROOTS = CHAIN_ROOTS - {"LOAD_FAST"}


def names_assigned(func: types.FunctionType, code: types.CodeType) -> \
        tuple[set[str], list[tuple[Any, str, str]]]:
    """The global and closure names ``func`` (whose code is ``code``) assigns or deletes (a
    counter it bumps is no binding to watch), and ``(its globals or the cell, name, label)``
    for each global and closure variable of an enclosing function it assigns, whose new value
    a trace makes once: ``global step; step += 1``, ``nonlocal cache; cache = x * 3``."""
    stored = set(code_names(code, STORES))
    scope = getattr(func, "__globals__", {})
    where = [(scope, name, "global") for name in code_names(code, GLOBAL_STORES)] + \
        [(cell, name, "closure variable") for name, cell in
         zip(code.co_freevars, getattr(func, "__closure__", None) or ()) if name in stored]
    return stored, [(holder, name, f"{func.__qualname__}: {kind} {name}")
                    for holder, name, kind in where]


@functools.lru_cache(maxsize=1024)  # (one layer class's forward, one hook on many modules)
def code_names(code: types.CodeType, ops: frozenset[str]) -> tuple[str, ...]:
    """The names the instructions ``ops`` of ``code`` (or of code nested in it) use, once
    each: with :data:`LOADS` the globals it reads (not its attribute names: ``opt.step()``
    reads no global ``step``), with :data:`STORES` the globals and closure names it
    assigns."""
    names = [i.argval for i in dis.get_instructions(code) if i.opname in ops]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += code_names(const, ops)
    return tuple(dict.fromkeys(names))


@functools.lru_cache(maxsize=1024)
def attribute_writes(code: types.CodeType) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Each ``name.a.b`` whose last attribute ``code`` (or code nested in it) assigns
    (``self.h = h``, ``model.state = (h, c)``): (the instruction loading ``name``, the name,
    the attribute names). (A list or dict changed in place, ``self.state[0] = h``, is not
    followed: its tensors stay what the trace saw.)"""
    writes, chain = [], None
    for instruction in dis.get_instructions(code):
        op, value = instruction.opname, instruction.argval
        if chain is not None and op in ATTRIBUTE_LOADS:
            chain[2].append(value)
            continue
        if chain is not None and op == "STORE_ATTR":
            writes.append((chain[0], chain[1], (*chain[2], value)))
        chain = (op, value, []) if op in CHAIN_ROOTS else None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            writes += attribute_writes(const)
    return tuple(dict.fromkeys(writes))


@functools.lru_cache(maxsize=1024)
def attribute_chains(code: types.CodeType, roots: frozenset[str] = CHAIN_ROOTS) -> \
        tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Each ``name.a.b…`` that ``code`` reads, once: (the instruction loading ``name``, the
    name, the attribute names). A method call ends a chain (``opt.step()`` reads no value).
    Code nested in it (a hook it defines: ``h.register_hook(lambda g: g * cfg.scale)``)
    counts too, for the globals and closure names it reads (its own locals are not ours)."""
    chains, chain = [], None
    for instruction in [*dis.get_instructions(code), None]:
        if instruction is not None and instruction.opname == "LOAD_ATTR" and chain:
            chain[2].append(instruction.argval)
            continue
        if chain and chain[2]:
            chains.append((chain[0], chain[1], tuple(chain[2])))
        chain = (instruction.opname, instruction.argval, []) \
            if instruction is not None and instruction.opname in roots else None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            chains += attribute_chains(const, NESTED_CHAIN_ROOTS)
    return tuple(dict.fromkeys(chains))


# a container read whole: subscripted by a key it computes (``cfg[k]``, ``cfg[1:3]``), iterated,
# read by a method (``cfg.get('x')``) or used any other way (``len(cfg)``, ``'x' in cfg``,
# ``c = cfg``, ``helper(cfg)``): its link in :func:`item_chains`
WHOLE = ("whole", None)
# the methods that only write a dict or list (a log the function appends to is no input)
WRITE_METHODS = frozenset({"append", "extend", "insert", "remove", "clear", "update", "add",
                           "discard"})
# the chain's object called (``obj(x)``): what runs is its ``__call__``, not a whole read
CALLED = ("called", None)
MISSING_KEY = object()  # (a local assigned other than a constant)
_KEY_LOADS = frozenset({"LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CONST", "LOAD_NAME"})
_ITEM_WRITES = frozenset({"STORE_SUBSCR", "DELETE_SUBSCR"})


@functools.lru_cache(maxsize=1024)
def item_chains(code: types.CodeType, roots: frozenset[str] = CHAIN_ROOTS) -> \
        tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...]:
    """Each ``name.a[k]…`` that ``code`` (or code nested in it, as in
    :func:`attribute_chains`) reads, once: (the instruction loading ``name``, the name, the
    links: ``("attr", a)``, ``("item", k)`` for a constant key (or a local assigned only that
    constant), ``("key", (op, name))`` for a key a global or closure name holds,
    ``("get", k)`` for ``.get(k)`` with a constant key, and last ``("method", m)``
    for a method called, :data:`CALLED` where the chain's object is called with simple
    arguments (``obj(x)``), ``("passed", (op, name, i))`` where it is the ``i``-th of such
    arguments of a call of ``name`` (``helper(cfg)``), nothing after an item or attribute
    write (``cfg['n'] = 1``, ``cfg[k] = 1``, ``obj.n += 1``), or
    :data:`WHOLE` where the chain is then used any other way). The patterns are CPython
    3.11's; an unknown one reads whole."""
    ins = list(dis.get_instructions(code))
    constants = _constant_locals(code, ins)
    chains = []
    for i, root in enumerate(ins):
        if root.opname not in roots:
            continue
        links, j = [], i + 1
        while j < len(ins):
            op = ins[j].opname
            after = ins[j + 1].opname if j + 1 < len(ins) else None
            if op == "LOAD_ATTR":
                links.append(("attr", ins[j].argval))
                j += 1
            elif op in _KEY_LOADS and after == "BINARY_SUBSCR" and \
                    (key := _fixed_key(ins[j], constants)) is not None:
                links.append(key)  # (``cfg['x']``, ``k = 'x'; cfg[k]``, ``cfg[K]``)
                j += 2
            elif op == "LOAD_METHOD" and ins[j].argval == "get" and \
                    (n := _get_call(ins, j)) and \
                    (key := _fixed_key(ins[j + 1], constants)) and key[0] == "item":
                links.append(("get", key[1]))  # (``cfg.get('x')``, ``cfg.get('x', 1.0)``)
                j += n
            elif not links and _called(ins, i, j):
                links.append(CALLED)  # (``obj(x)``: its ``__call__`` runs)
                break
            elif not links and (passed := _passed(ins, i)) is not None:
                links.append(("passed", passed))  # (``helper(cfg)``: what it reads of it)
                break
            else:
                if op == "LOAD_CONST" and after == "COPY":  # (``cfg['n'] += 1``)
                    links.append(("item", ins[j].argval))
                elif op == "LOAD_METHOD":
                    links.append(("method", ins[j].argval))
                elif not (op in ATTRIBUTE_STORES or op == "COPY" and after == "LOAD_ATTR" or
                          _key_then(ins, j, _ITEM_WRITES)):  # (``obj.n = 1``, ``obj.n += 1``)
                    links.append(WHOLE)
                break
        if any(kind != "attr" for kind, _ in links):
            chains.append((root.opname, root.argval, tuple(links)))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            chains += item_chains(const, NESTED_CHAIN_ROOTS)
    return tuple(dict.fromkeys(chains))


def _constant_locals(code: types.CodeType, ins: list) -> dict[str, Any]:
    """The locals of ``code`` (not its parameters) assigned once, a constant (``k = 'x'``),
    and never deleted: a key they hold is as fixed as the constant. One stored where a branch
    joins or leaves (``k = 'a' if c else 'b'``, ``k = name or 'b'``: a jump to the store or
    its constant, or one just before) is not."""
    stores: dict[str, list] = {}
    for i, instruction in enumerate(ins):
        if instruction.opname in ("STORE_FAST", "DELETE_FAST"):
            before = ins[i - 1] if i else None
            stores.setdefault(instruction.argval, []).append(
                before.argval if instruction.opname == "STORE_FAST" and before is not None
                and before.opname == "LOAD_CONST" and _plain_key(before.argval) and
                not _branch_at(ins, i) else MISSING_KEY)
    parameters = set(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount +
                                      bool(code.co_flags & 4) + bool(code.co_flags & 8)])
    return {name: values[0] for name, values in stores.items()
            if len(values) == 1 and values[0] is not MISSING_KEY and name not in parameters}


def _branch_at(ins: list, i: int) -> bool:
    """Whether a jump lands on the store ``ins[i]`` or the constant before it, or one is just
    before that constant."""
    return ins[i].is_jump_target or ins[i - 1].is_jump_target or \
        i >= 2 and ins[i - 2].opcode in _JUMPS


_JUMPS = frozenset(dis.hasjrel + dis.hasjabs)


def _fixed_key(instruction: Any, constants: dict[str, Any]) -> tuple[str, Any] | None:
    """The link a subscript's key loaded by ``instruction`` makes: ``("item", key)`` for a
    constant or a constant local, ``("key", (op, name))`` for a global or closure name
    (watched as a binding: its value is known before the call), or None (computed)."""
    op, name = instruction.opname, instruction.argval
    if op == "LOAD_CONST":
        return ("item", name)
    if op == "LOAD_FAST" and name in constants:
        return ("item", constants[name])
    if op in ("LOAD_GLOBAL", "LOAD_DEREF") and not _null_first(instruction):
        return ("key", (op, name))
    return None


def _get_call(ins: list, j: int) -> int:
    """How many instructions ``.get(key)`` or ``.get(key, constant)`` takes from its
    ``LOAD_METHOD`` at ``j`` (0: another call)."""
    for n, default in ((1, ()), (2, ("LOAD_CONST",))):
        ops = [i.opname for i in ins[j + 2:j + 4 + n - 1]]
        if ops == [*default, "PRECALL", "CALL"] and ins[j + 1 + n].arg == n:
            return 3 + n
    return 0


def _called(ins: list, i: int, j: int) -> bool:
    """Whether the value loaded by instructions ``i`` to ``j - 1`` is called, with arguments
    of simple loads (``obj(x, y=1)``): a NULL pushed before it, then the loads, then
    ``PRECALL`` taking just them."""
    if not (_null_first(ins[i]) or i and ins[i - 1].opname == "PUSH_NULL"):
        return False
    k = j
    while k < len(ins) and ins[k].opname in _KEY_LOADS and not _null_first(ins[k]):
        k += 1
    n = k - j
    if k < len(ins) and ins[k].opname == "KW_NAMES":
        k += 1
    return k < len(ins) and ins[k].opname == "PRECALL" and ins[k].arg == n


def _passed(ins: list, i: int) -> tuple[str, str, int] | None:
    """Where instruction ``i`` loads an argument of a call of a name with simple arguments
    (``helper(x, cfg)``): (the instruction loading the callee, its name, the position)."""
    k = i
    while k > 0 and ins[k - 1].opname in _KEY_LOADS and not _null_first(ins[k - 1]):
        k -= 1
    if k > 0 and _null_first(ins[k - 1]):
        callee, first = ins[k - 1], k
    elif 0 < k < i and ins[k - 1].opname == "PUSH_NULL" and ins[k].opname in CHAIN_ROOTS:
        callee, first = ins[k], k + 1
    else:
        return None
    end = i + 1
    while end < len(ins) and ins[end].opname in _KEY_LOADS and not _null_first(ins[end]):
        end += 1
    if end < len(ins) and ins[end].opname == "PRECALL" and ins[end].arg == end - first:
        return (callee.opname, callee.argval, i - first)
    return None


def _null_first(instruction: Any) -> bool:
    """Whether ``instruction`` loads a global with a NULL pushed first (a callee's load)."""
    return instruction.opname == "LOAD_GLOBAL" and bool(instruction.arg & 1)


def _plain_key(value: Any) -> bool:
    return isinstance(value, bool | int | float | str | bytes) or value is None


def _key_then(ins: list, j: int, ops: frozenset[str]) -> bool:
    """Whether instruction ``j`` starts a key of simple loads (up to 3, then perhaps a
    slice) that an instruction of ``ops`` then uses."""
    k = j
    while k < len(ins) and k - j < 3 and ins[k].opname in _KEY_LOADS:
        k += 1
    if k < len(ins) and ins[k].opname == "BUILD_SLICE":
        k += 1
    return k > j and k < len(ins) and ins[k].opname in ops
