"""A fused kernel as one numba loop: each element read once and written once, where NumPy's
calls make a pass per equation (and a temporary per intermediate that cannot share ``out``).

A kernel (:mod:`ember.jit.kernels`) whose steps are all exactly rounded operations (``+ - * /``,
negation, ``sqrt``, ``abs``, reciprocal, min/max, relu and its gradient, ``where``) or float32
erf, gelu and gelu's slope calls :func:`run_loop` before its NumPy calls. The loop computes
each step in the arrays' dtype, in the same order, so its values are eager's bit for bit: the
first are NumPy's; the float32 functions are the very numba functions eager's kernels loop
over (:mod:`ember.ops.erf_numba`), and only while eager runs them. Other transcendental
functions are left to NumPy (numba's ``exp`` is not NumPy's to the last bit).

The output is seen in its memory order as rows of its innermost dimension. Each operand is, in
that order, the output's own layout (read at the output's index), a scalar, constant along a
row (layer norm's statistics), or contiguous along a row at some offset per row (a bias; a
causal mask repeated over the batch); any other operand, a small array, NumPy, numba turned off
or an output overlapping an operand elsewhere than in place leave the kernel to its NumPy calls.
Each (steps, operand kinds, dtype) compiles on its first call (~0.2 s; numba adds a version
for each new typing of the arrays: a read-only or a bool operand), once: numba's disk cache
keeps it for later processes (see :func:`_compile`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import threading
from functools import lru_cache, partial
from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.backend.home import ember_home
from ember.errors import ArgumentError
from ember.ops import erf_kernel

__all__: list[str] = []

MIN_ELEMENTS = 1 << 13  # below this, the numba call (~7 µs) costs what its single pass saves
_SHARE = 1 << 20  # elements a piece takes at least, when the rows are shared among cores

# each step as a numba expression of its arguments (``z``/``one``: 0 and 1 in the dtype)
_EXPRESSIONS = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "neg": "-{0}", "abs": "abs({0})", "sqrt": "np.sqrt({0})", "reciprocal": "one / {0}",
    "rsqrt": "one / np.sqrt({0})",
    "maximum": "({0} if {0} > {1} or {0} != {0} else {1})",  # NaN wins; a tie gives {1}
    "minimum": "({0} if {0} < {1} or {0} != {0} else {1})",
    "relu": "(z if {0} < z else {0})",
    "relu_grad": "(z if {1} <= z else {0})",
    "where": "({1} if {0} else {2})",
    # float32 only: the functions of one element of eager's numba kernels
    "erf": "_erf({0})", "gelu": "_gelu({0})", "gelu_slope": "_gelu_slope({0})",
}
EXACT = frozenset(_EXPRESSIONS)
_FLOAT32 = frozenset({"erf", "gelu", "gelu_slope"})  # named as in ember.ops.erf_numba

_FULL, _OUT, _SCALAR, _ROW, _RUN = "full", "out", "scalar", "row", "run"
_SAME = "same"  # (a plan's read of an operand in the output's layout: _FULL or _OUT per call)
_COMPILED: dict[tuple, Any] = {}
_PLANS: dict[tuple, tuple | bool] = {}  # per (steps, layouts): see _plan (False: refused)
_KEEP_PLANS = 4096
_LOCK = threading.Lock()
_NUMBA = compiled.register("numba")  # (its first import is the cost :func:`preload` moves)


def run_loop(steps: tuple, out: Any, *operands: Any) -> bool:
    """Computes ``steps`` of ``operands`` into ``out`` (a dense NumPy array) in one numba loop;
    False where the loop does not apply (nothing written). ``steps`` is a tuple of
    ``(primitive name, argument names)``, the names ``a0…`` for operands and ``t0…`` for earlier
    steps; the last step gives the output.

    Example:
        >>> run_loop((("mul", ("a0", "a1")), ("add", ("t0", "a2"))), out, x, w, b)
        True
    """
    if out.size < MIN_ELEMENTS or not compiled.numba_enabled():
        return False
    try:  # (what the plan depends on; a Python number has no shape: NumPy's calls)
        key = (steps, parallel.workers(), type(out), out.shape, out.strides, out.dtype,
               *[(type(a), a.shape, a.strides, a.dtype) for a in operands])
    except AttributeError:
        return False
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _KEEP_PLANS:
            _PLANS.clear()
        plan = _PLANS[key] = _plan(steps, out, operands) or False  # (a refusal is kept too)
    if not plan:
        return False
    order, reads, elements, rows, cols, shares = plan
    kinds, arrays = [], []
    for read, a in zip(reads, operands, strict=True):
        if a is out:
            kinds.append(_OUT)
            continue
        if np.may_share_memory(a, out):  # the output itself seen through another view, or not
            if read is _SAME and a.dtype == out.dtype and a.ctypes.data == out.ctypes.data:
                kinds.append(_OUT)
                continue
            return False  # (a share of the rows could read what another already wrote)
        if read is _SAME:  # the output's layout, in memory apart
            kinds.append(_FULL)
            arrays.append(a.transpose(order).reshape(-1))
        elif read is _SCALAR:
            kinds.append(_SCALAR)
            arrays.append(np.asarray(a).reshape(1))
        else:  # broadcast along the rows, each row at its offset
            kinds.append(read[0])
            arrays.extend((np.ascontiguousarray(a).reshape(-1), read[1]))
    loop = _loop(steps, tuple(kinds), out.dtype.char, elements)
    flat_out = out.transpose(order).reshape(-1)
    if shares == 1:
        loop(flat_out, *arrays, 0, rows, cols)
        return True
    parallel.run([partial(loop, flat_out, *arrays, lo, hi, cols)
                  for lo, hi in parallel.blocks(rows, shares)])
    return True


def _plan(steps: tuple, out: Any, operands: tuple) -> tuple | None:
    """What :func:`run_loop` works out once per steps, layouts and core count: the output's
    memory order, how the loop reads each operand (:data:`_SAME` layout as the output, a
    :data:`_SCALAR`, or (kind, row offsets) of a broadcast one), the float32 functions'
    module, and the loop's rows, row length and core count; None where the loop cannot
    run."""
    if out.dtype not in (np.float32, np.float64) or not isinstance(out, np.ndarray) or \
            compiled.load(_NUMBA) is None:
        return None
    elements = None
    if any(prim in _FLOAT32 for prim, _ in steps):
        elements = erf_kernel.numba_elements()
        if out.dtype != np.float32 or elements is None:
            return None
    order = _memory_order(out.strides)
    if not out.transpose(order).flags.c_contiguous:
        return None
    reads = tuple(_operand(a, out, order) for a in operands)
    if None in reads:
        return None
    cols = out.shape[order[-1]] if out.ndim else 1
    shares = parallel.share_count(out.size, _SHARE)
    if all(not isinstance(read, tuple) for read in reads):  # rows as long as can be
        shares = next(k for k in range(shares, 0, -1) if out.size % k == 0)  # (one a piece)
        cols = out.size // shares
    return order, reads, elements, out.size // cols, cols, min(shares, out.size // cols)


def _operand(a: Any, out: Any, order: tuple) -> Any:
    """How the loop reads operand ``a`` of ``out`` (see :func:`_plan`), from its type, shape,
    strides and dtype; None where it cannot."""
    if isinstance(a, np.generic):
        a = np.asarray(a)
    if not isinstance(a, np.ndarray) or (a.dtype != out.dtype and a.dtype != np.bool_):
        return None
    if a.size == 1:
        return _SCALAR
    if a.shape == out.shape and ((a.dtype == out.dtype and a.strides == out.strides) or
                                 _elements(a) == _elements(out)):  # (a bool mask: 1-byte items)
        return _SAME
    if a.size >= out.size:
        return None  # (a whole operand in another layout: NumPy's calls)
    return _broadcast_plan(a.shape, out.shape, order)


@lru_cache(maxsize=256)
def _memory_order(strides: tuple) -> tuple:
    """The axes from the outermost in memory to the innermost (ties: in axis order)."""
    return tuple(sorted(range(len(strides)), key=lambda d: -strides[d]))


@lru_cache(maxsize=256)
def _broadcast_plan(shape: tuple, out_shape: tuple, order: tuple) -> tuple | None:
    """How a smaller C-contiguous operand of ``shape`` broadcast to ``out_shape`` reads along
    the output's rows (in memory ``order``): constant along a row (``row``) or contiguous
    (``run``), with each row's offset; None otherwise."""
    base = np.empty(shape, np.int8)
    try:
        view = np.broadcast_to(base, out_shape).transpose(order)
    except ValueError:
        return None
    step = view.strides[-1] if view.ndim else 0
    if step not in (0, 1):
        return None
    return (_ROW if step == 0 else _RUN), _row_offsets(view.shape[:-1], view.strides[:-1])


def _elements(a: Any) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


@lru_cache(maxsize=256)
def _row_offsets(shape: tuple, strides: tuple) -> np.ndarray:
    """Each row's first element, as an offset into the operand's flat memory."""
    offsets = np.zeros(shape, np.int64)
    for axis, (n, s) in enumerate(zip(shape, strides, strict=True)):
        index = [1] * len(shape)
        index[axis] = n
        offsets += (np.arange(n, dtype=np.int64) * s).reshape(index)
    offsets = offsets.reshape(-1)
    offsets.flags.writeable = False
    return offsets


def _loop(steps: tuple, kinds: tuple, dtype: str, elements: Any) -> Any:
    key = (steps, kinds, dtype)
    loop = _COMPILED.get(key)
    if loop is None:
        with _LOCK:
            loop = _COMPILED.get(key)
            if loop is None:
                loop = _COMPILED[key] = _compile(loop_source(steps, kinds), elements)
    return loop


def loop_source(steps: tuple, kinds: tuple) -> str:
    """The Python text numba compiles for ``steps`` over operands of ``kinds``.

    Example:
        >>> print(loop_source((("mul", ("a0", "a1")),), ("full", "row")))  # doctest: +SKIP
        def loop(out, a0, a1, a1_rows, lo, hi, cols):
        ...
    """
    params, before, per_row, per_element = ["out"], [], ["        row = out[at:at + cols]"], []
    read = {}
    for i, kind in enumerate(kinds):
        name = f"a{i}"
        if kind == _OUT:
            read[name] = "row[c]"
        elif kind == _FULL:
            params.append(name)
            per_row.append(f"        r{i} = {name}[at:at + cols]")
            read[name] = f"r{i}[c]"
        elif kind == _SCALAR:
            params.append(name)
            before.append(f"    x{i} = {name}[0]")
            read[name] = f"x{i}"
        else:
            params.extend([name, f"{name}_rows"])
            if kind == _ROW:
                per_row.append(f"        x{i} = {name}[{name}_rows[r]]")
                read[name] = f"x{i}"
            else:
                per_row.append(f"        r{i} = {name}[{name}_rows[r]:{name}_rows[r] + cols]")
                read[name] = f"r{i}[c]"
    for k, (prim, args) in enumerate(steps):
        if any(arg.startswith("a") and arg not in read for arg in args):
            raise ArgumentError(f"loop_source: step {k} reads {args}, not all operands or steps")
        values = [read.get(arg, arg) for arg in args]
        per_element.append(f"            t{k} = {_EXPRESSIONS[prim].format(*values)}")
    per_element.append(f"            row[c] = t{len(steps) - 1}")
    # rows as slices: an index from range() is known non-negative, so the loop vectorizes
    lines = [f"def loop({', '.join(params)}, lo, hi, cols):",
             "    z = out.dtype.type(0)",
             "    one = out.dtype.type(1)",
             *before]
    if all(kind in (_FULL, _OUT, _SCALAR) for kind in kinds):
        # rows lo…hi as one row: in a loop nest the compiler reloads the constants of a long
        # step (erf's fit) on every pass of the inner loop (gelu's slope: 30 % slower)
        lines += ["    at, cols = lo * cols, (hi - lo) * cols",
                  *(line[4:] for line in per_row),
                  "    for c in range(cols):",
                  *(line[4:] for line in per_element)]
    else:
        lines += ["    for r in range(lo, hi):",
                  "        at = r * cols",
                  *per_row,
                  "        for c in range(cols):",
                  *per_element]
    return "\n".join(lines) + "\n"


def _compile(source: str, elements: Any) -> Any:
    """The loop of ``source`` compiled by numba. It is defined in a module file in Ember's
    directory (``ember_home("jit")``), named by a hash of its text, of numba's version and of
    the source of the float32 functions it may inline and of their constants, so that
    numba's disk cache spares a later process the compile (0.2-2 s a loop; a cached one loads
    in milliseconds); where that directory cannot be written, from the text alone, compiled
    each process."""
    import numba

    text = "import numpy as np\n\n\n" + source
    try:
        scope, cache = _module(text, numba.__version__, elements is not None).__dict__, True
    except OSError:
        scope, cache = {"np": np}, False
        exec(compile(text, "<ember.jit loop>", "exec"), scope)  # noqa: S102 - our own code
    if elements is not None:
        scope.update({f"_{name}": compiled.ready(getattr(elements, name)) for name in _FLOAT32})
    return numba.njit(nogil=True, error_model="numpy", cache=cache)(scope["loop"])


def _module(text: str, numba_version: str, inlines: bool) -> Any:
    """The module of ``text`` from its file in Ember's directory, written there first (once,
    whole: a reader never sees half a file) if missing."""
    stamp = [text, numba_version]
    if inlines:
        # (the functions, and the fit constants they import from erf_kernel)
        stamp += [inspect.getsource(erf_kernel.numba_elements()), inspect.getsource(erf_kernel)]
    name = "loop_" + hashlib.sha256("\0".join(stamp).encode()).hexdigest()[:32]
    path = os.path.join(ember_home("jit"), f"{name}.py")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        part = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(part, "w") as f:
            f.write(text)
        os.replace(part, path)
    module = sys.modules.get(f"ember.jit.loops.{name}")
    if module is None:  # (where numba's cache finds it again: by name)
        spec = importlib.util.spec_from_file_location(f"ember.jit.loops.{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[spec.name] = module
    return module
