"""Kernels the passes make: several elementwise equations as one function that writes into one
buffer (``out=``), and single equations that write into a buffer they are given.

A :class:`Kernel` is a pseudo-primitive: it has a ``name``, ``forward(xp, *arrays, out=None)``
and its own Python ``source``, which the generated code of a graph includes, so a user reads
(and steps through) exactly what runs. Each step is one NumPy call per line, commented with
the equation it computes and the user's line.

The values are those of the eager primitives bit for bit: each step calls the very ufunc the
primitive's ``forward`` calls, on operands of one dtype, only with ``out=``. A kernel writes
into ``out`` only when every operand of the output's full shape is C-contiguous (else it runs
the eager calls, allocating), so its result has the memory layout eager execution gives it,
and later reductions and matmuls add in the same order.

Example:
    >>> k = Kernel.fuse(eqns)                  # mul then add, as one function
    >>> print(k.source)                        # doctest: +SKIP
    def fused_mul_add(xp, v3, v4, v5, out=None):
        ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ember.backend import gemm, gemv
from ember.dtypes import FLOATING_DTYPES
from ember.jit.ir import Effect, Eqn, Var
from ember.jit.loops import EXACT, run_loop
from ember.layouts import in_operands_layout
from ember.ops.join import concatenated
from ember.ops.primitive import PRIMITIVES
from ember.ops.relu_kernel import relu_array, relu_grad_array
from ember.ops.unary import Unary
from ember.utils.generated_code import define


def _dense_layout(*arrays: Any, others: tuple = ()) -> tuple | None:
    """The strides that arrays of one shape share when each is dense (C-contiguous, or so
    with its axes sorted by stride: channels-last), where eager's ops give their results
    that layout too, else None. ``others``: the kernel's other operands (broadcast ones, a
    mask of another dtype): in C order when the arrays are (eager's result is C then; an
    operand in another order may decide it), else C-contiguous if broadcast, of the arrays'
    layout if full-size, and NumPy's layout of them all the arrays' (NumPy orders a result
    by the broadcast operands' strides too). ``others`` are arrays of more than one element
    (kernel inputs always are arrays)."""
    first = arrays[0]
    strides = first.strides
    for a in arrays:
        if not a.flags.c_contiguous:
            break
    else:
        for a in others:
            if not a.flags.c_contiguous:
                return None
        return strides
    if any(a.strides != strides for a in arrays[1:]):
        return None
    if others:
        shape, size = first.shape, first.itemsize
        for a in others:
            if not (a.flags.c_contiguous if a.shape != shape else all(
                    s // a.itemsize == t // size for s, t in zip(a.strides, strides))):
                return None
        if _numpy_layout(shape, first.dtype, tuple((a.shape, a.strides, a.dtype) for a in (
                *arrays, *others))) != strides:
            return None
    return strides if _dense(first.shape, strides, first.itemsize) else None


def _follow(xp: Any, out: Any, first: Any, *rest: Any) -> Any:
    """An eager step's result in the layout its primitive gives it (PyTorch's: where a first
    operand that is not C-contiguous of the result's shape meets others in another order,
    the first that tells two dimensions apart decides; NumPy keeps C order there)."""
    if first.flags.c_contiguous and first.shape == out.shape:
        return out
    return in_operands_layout(xp, out, first, *rest)


@lru_cache(maxsize=256)
def _numpy_layout(shape: tuple, dtype: Any, operands: tuple) -> tuple:
    """The strides of the ``shape``/``dtype`` result NumPy allocates for operands of these
    shapes and strides (``order='K'``), found without reading them."""
    views = [np.lib.stride_tricks.as_strided(np.zeros(1, dt), sh, st, writeable=False)
             for sh, st, dt in operands]
    it = np.nditer([*views, None], flags=["zerosize_ok", "refs_ok"], order="K",
                   op_flags=[["readonly"]] * len(views) + [["writeonly", "allocate"]],
                   op_dtypes=[None] * len(views) + [dtype], op_axes=None)
    return it.operands[-1].strides if it.operands[-1].shape == shape else ()


@lru_cache(maxsize=256)
def _dense(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """Whether an array of ``shape`` and ``strides`` is C-contiguous with its axes sorted by
    stride (asked at every kernel call of a channels-last array: remembered)."""
    order = sorted(range(len(shape)), key=lambda d: -strides[d])
    layout = np.lib.stride_tricks.as_strided(np.zeros(1, f"V{itemsize}"), shape, strides,
                                             writeable=False)
    return layout.transpose(order).flags.c_contiguous


def _eager(name: str, **params: Any) -> Callable[..., Any]:
    """Primitive ``name``'s eager forward of one array as a call that may write into ``out``
    (a copy: for the primitives whose forward takes no ``out``)."""
    prim = PRIMITIVES[name]

    def call(xp: Any, a: Any, out: Any = None) -> Any:
        result = prim.forward(xp, a, **params)
        if out is None:
            return result
        xp.copyto(out, result)
        return out
    return call


_half_rsqrt = _eager("rsqrt")


def _rsqrt(xp: Any, a: Any, out: Any = None) -> Any:
    """``1 / sqrt(a)`` as eager's: float16/bfloat16 through float32, rounded once."""
    if a.dtype.itemsize == 2:
        return _half_rsqrt(xp, a, out)
    out = xp.sqrt(a, out=out)
    return xp.reciprocal(out, out=out)


def _reshapes_c_contiguous(a: Any, shape: tuple[int, ...]) -> bool:
    """Whether eager's ``a.reshape(shape)`` is C-contiguous: a view of a C-contiguous array,
    or a copy (NumPy and CuPy copy what they cannot view). Asked of a NumPy array with
    ``a``'s strides over no memory of its own (CuPy's ``reshape`` takes no ``copy=``)."""
    if a.flags.c_contiguous:
        return True
    layout = np.lib.stride_tricks.as_strided(np.zeros(1, a.dtype), a.shape, a.strides,
                                             writeable=False)
    try:
        return layout.reshape(shape, copy=False).flags.c_contiguous
    except ValueError:
        return True


# what kernel sources call besides ``xp``
KERNEL_GLOBALS = {"_gemm": gemm.matmul, "_one_row": gemm.one_row, "_relu": relu_array,
                  "_relu_grad": relu_grad_array, "_dense_layout": _dense_layout, "_follow": _follow,
                  "_reshapes_c": _reshapes_c_contiguous, "_cat": concatenated,
                  "_loop": run_loop, "_erf": _eager("erf"),
                  "_gelu": _eager("gelu", approximate="none"),
                  "_gelu_slope": _eager("gelu_slope"), "_rsqrt": _rsqrt}


def _ufunc(name: str, *extra: str) -> Callable[[list[str], str, bool], list[str]]:
    def emit(args: list[str], dst: str, into: bool) -> list[str]:
        call = ", ".join([*args, *extra])
        return [f"xp.{name}({call}, out={dst})"] if into else [f"{dst} = xp.{name}({call})"]
    return emit


def _call(function: str) -> Callable[[list[str], str, bool], list[str]]:
    """Emits a call of one of :data:`KERNEL_GLOBALS` that takes ``out=``."""
    def emit(args: list[str], dst: str, into: bool) -> list[str]:
        call = ", ".join(["xp", *args])
        return [f"{function}({call}, out={dst})"] if into else [f"{dst} = {function}({call})"]
    return emit


def _where(args: list[str], dst: str, into: bool) -> list[str]:
    cond, a, b = args
    if not into:
        return [f"{dst} = xp.where({cond}, {a}, {b})"]
    if dst == b:
        return [f"xp.copyto({dst}, {a}, where={cond})"]
    if dst == a:
        return [f"xp.copyto({dst}, {b}, where=xp.logical_not({cond}))"]
    return [f"xp.copyto({dst}, {b})", f"xp.copyto({dst}, {a}, where={cond})"]


# how each primitive's forward is written as NumPy calls that may write into a buffer; the
# unary primitives whose forward is their ufunc join below
EMITTERS: dict[str, Callable[[list[str], str, bool], list[str]]] = {
    "add": _ufunc("add"), "sub": _ufunc("subtract"), "mul": _ufunc("multiply"),
    "div": _ufunc("true_divide"), "neg": _ufunc("negative"), "maximum": _ufunc("maximum"),
    "minimum": _ufunc("minimum"), "relu": _call("_relu"), "rsqrt": _call("_rsqrt"),
    "where": _where, "relu_grad": _call("_relu_grad"),
    "reciprocal": _ufunc("reciprocal"),  # (its own forward for complex only; steps are real)
    # (whose float32 steps numba's loop computes as eager's kernels do)
    "erf": _call("_erf"), "gelu": _call("_gelu"), "gelu_slope": _call("_gelu_slope"),
}
EMITTERS.update({name: _ufunc(prim.ufunc) for name, prim in PRIMITIVES.items()
                 if isinstance(prim, Unary) and type(prim).forward is Unary.forward})
_FLOATS = frozenset(FLOATING_DTYPES)
# the steps of several operands whose forward orders its result as PyTorch's (relu_grad's
# kernel keeps its gradient's layout by itself)
_FOLLOWING = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "where"})


def writes_into(eqn: Eqn) -> bool:
    """Whether ``eqn`` can compute into a buffer it is given: kernels, elementwise equations
    (made kernels when given one) and plain matmuls."""
    prim = eqn.prim
    if isinstance(prim, Kernel):
        return True
    if prim is PRIMITIVES.get("matmul"):
        return eqn.params.get("compute") is None
    return elementwise(eqn)


def makes_fresh(eqn: Eqn) -> bool:
    """Whether ``eqn``'s first output is surely a new array, never memory of its inputs
    (and, for a primitive that ``allocates``, every output)."""
    return writes_into(eqn) or getattr(eqn.prim, "allocates", False)


def owner(array: Any) -> int:
    """The id of the object owning the memory ``array`` views (its base's base ..., or its
    own)."""
    while (base := getattr(array, "base", None)) is not None:
        array = base
    return id(array)


def may_share(eqns: list[Eqn], roots: dict[Var, set], effects: bool = False) -> dict[Var, set]:
    """For each variable, the items whose memory it may share: its root's (``roots``: a
    variable -> the items its array is part of), and what a view or any equation that may
    return its input (not surely making new arrays) makes from one; with ``effects``, an
    effect's output what its input at that position does (the array it wrote in place: an
    optimizer step's parameters), where it has one per input (else nothing)."""
    seen_as = dict(roots)
    for e in eqns:
        if effects and isinstance(e.prim, Effect):
            if len(e.inputs) == len(e.outputs):
                seen_as.update((o, seen_as[i]) for i, o in zip(e.inputs, e.outputs)
                               if i in seen_as)
            continue
        inherited = set().union(*(seen_as.get(v, set()) for v in e.inputs))
        if inherited and not makes_fresh(e):
            seen_as.update((v, inherited) for v in e.outputs)
    return seen_as


def into_kernel(eqn: Eqn) -> Kernel:
    """The kernel that computes ``eqn`` into a given buffer."""
    if isinstance(eqn.prim, Kernel):
        return eqn.prim
    return Kernel.matmul(eqn) if eqn.prim.name == "matmul" else Kernel.fuse([eqn])


def elementwise(eqn: Eqn) -> bool:
    """Whether ``eqn`` is an elementwise primitive a kernel can compute: a known one, on float
    operands of the output's dtype (``where``'s condition boolean)."""
    prim = eqn.prim
    if getattr(prim, "name", None) not in EMITTERS or PRIMITIVES.get(prim.name) is not prim:
        return False
    out = eqn.outputs[0]
    values = eqn.inputs[1:] if prim.name == "where" else eqn.inputs
    if prim.name == "where" and eqn.inputs[0].dtype.name != "bool" or \
            eqn.params.get("approximate", "none") != "none":  # (gelu's tanh form: not a step)
        return False
    return out.dtype in _FLOATS and all(v.dtype is out.dtype for v in values)


@dataclass(eq=False)
class Step:
    """One equation of a kernel: ``dst = prim(*args)`` (args name kernel arguments or earlier
    steps' buffers); ``into`` says whether ``dst`` is a buffer it writes into."""

    eqn: Eqn
    args: list[str]
    dst: str
    into: bool


class Kernel:
    """Elementwise equations as one function; see the module docstring."""

    nout = 1
    view = False
    differentiable = False
    pure = True

    def __init__(self, name: str, eqns: list[Eqn], inputs: list[Var],
                 source: str | None = None) -> None:
        self.name = name
        self.eqns = eqns  # in order; the last one makes the output
        self.inputs = inputs
        self.out = eqns[-1].outputs[0]
        self.fused = source is None  # elementwise steps, written here (else given whole)
        self.source = source or self._write()
        self._fn: Callable | None = None

    @classmethod
    def fuse(cls, eqns: list[Eqn]) -> Kernel:
        """A kernel for ``eqns`` (in order; every one but the last read only by later ones)."""
        made = {v for e in eqns for v in e.outputs}
        inputs: list[Var] = []
        for e in eqns:
            inputs.extend(v for v in e.inputs if v not in made and v not in inputs)
        ops = "_".join(dict.fromkeys(e.prim.name for e in eqns))
        name = ("fused_" + ops)[:40] if len(eqns) > 1 else f"{ops}_into"
        return cls(name, eqns, inputs)

    @classmethod
    def matmul(cls, eqn: Eqn) -> Kernel:
        """A ``matmul`` (no compute dtype) that writes into ``out``, through the backend's
        GEMM choice as eager's: NumPy's matmul returns a C-contiguous array, so a
        C-contiguous ``out`` keeps eager's layout."""
        source = ("def matmul_into(xp, a, b, out=None):\n"
                  "    if out is None or not out.flags.c_contiguous:\n"
                  "        return _gemm(xp, a, b)\n"
                  "    return _gemm(xp, a, b, out=out)\n")
        return cls("matmul_into", [eqn], list(eqn.inputs), source)

    @classmethod
    def permuted_matmul(cls, matmul: Eqn, permute: Eqn) -> Kernel:
        """``permute(matmul(a, b))`` (a permute that keeps the last dimension) as a
        C-contiguous array: BLAS writes the product into it seen unpermuted, so a reshape
        after it views what it would copy."""
        dims = permute.params["dims"]
        back = tuple(dims.index(d) for d in range(len(dims)))
        shape = permute.outputs[0].shape
        source = ("def matmul_permuted(xp, a, b, out=None):\n"
                  "    if out is None or not out.flags.c_contiguous:\n"
                  f"        out = xp.empty({shape!r}, xp.result_type(a, b))\n"
                  f"    _gemm(xp, a, b, out=out.transpose({back!r}))\n"
                  "    return out\n")
        return cls("matmul_permuted", [matmul, permute], list(matmul.inputs), source)

    @classmethod
    def row_product(cls, matmul: Eqn, after: list[Eqn]) -> Kernel:
        """A one-row ``matmul`` (a Linear layer on one sample) then ``after``: the addition
        of a bias (one value per column), maybe then a ``relu``, as one pass on numba's
        threads where eager would run the product there (:func:`ember.backend.gemm.one_row`,
        each step rounded as eager's calls round it), else eager's calls (always, for a
        product too small for those threads), into a C-contiguous ``out``."""
        a, b = matmul.inputs
        add, product = after[0], matmul.outputs[0]
        bias = next(v for v in add.inputs if v is not product)
        relu = after[-1].prim.name == "relu"
        name = "linear_relu" if relu else "linear"
        lines = [f"def {name}(xp, a, b, bias, out=None):",
                 "    if out is None or not out.flags.c_contiguous:",
                 f"        out = xp.empty({product.shape!r}, a.dtype)"]
        # numba's pass for a product large enough (else BLAS's, always) that is the sum's first
        # addend: of two NaNs x86 keeps the first's sign, and the compiler may swap a sum's
        # operands; ``x @ W.T + b`` was seen to keep NumPy's signs, ``b + x @ W.T`` was not
        if a.shape[-1] * product.shape[-1] >= gemv.MIN_MACS and add.inputs[0] is product:
            lines += [f"    if _one_row(xp, a, b, bias, {relu}, out=out) is not None:"
                      f"  # all {len(after) + 1} in one pass",
                      "        return out"]
        lines.append(f"    _gemm(xp, a, b, out=out)  # {_describe(matmul)}")
        names = {product: "out", bias: "bias", add.outputs[0]: "out"}
        lines += [f"    {line}" for line in cls._lines(
            [Step(e, [names[v] for v in e.inputs], "out", True) for e in after])]
        source = "\n".join([*lines, "    return out"]) + "\n"
        return cls(name, [matmul, *after], [a, b, bias], source)

    @classmethod
    def join(cls, cat: Eqn, chains: dict[Var, list[Eqn]]) -> Kernel:
        """A ``cat`` that writes each operand into its slice of ``out``: one made by a chain
        of ``chains`` (``[reshape]`` or ``[matmul, permute, reshape]``, in order) as that
        reshape's input, into the slice viewed in its shape (the caller checks that the
        slice of a C-contiguous ``out`` has such a view), a matmul's product straight from BLAS.
        Eager's ``cat`` (:func:`~ember.ops.join.concatenated`) is C-ordered unless all its
        operands are channels-last(-3d), so ``out`` is C-contiguous as eager's when it has
        neither 4 nor 5 dimensions, when one operand without dimensions of size 1 is, or all
        are; else the kernel runs eager's calls (the caller takes a product only where its
        reshape copies it: C-contiguous)."""
        lines, inputs, eager = [], [], []
        dense: dict[Var, str] = {}  # operand -> code: whether eager's array of it is C-contiguous
        for v, where in zip(cat.inputs, cls.join_slices(cat)):
            dst = "out[" + ", ".join(_slice_text(s) for s in where) + "]"
            chain = chains.get(v, [])
            if not chain:
                inputs.append(v)
                eager.append(v.name)
                dense[v] = f"{v.name}.flags.c_contiguous"
                lines.append(f"    xp.copyto({dst}, {v.name})  # {v.name}")
                continue
            seen = chain[-1].inputs[0]
            dst += f".reshape({seen.shape!r})"  # (a view: the caller checked)
            if len(chain) == 1:
                inputs.append(seen)
                eager.append(f"{seen.name}.reshape({v.shape!r})")
                dense[v] = f"_reshapes_c({seen.name}, {v.shape!r})"
                lines.append(f"    xp.copyto({dst}, {seen.name})  # {_describe(chain[-1])}")
                continue
            matmul, permute = chain[0], chain[1]
            dims = permute.params["dims"]
            back = tuple(dims.index(d) for d in range(len(dims)))
            a, b = matmul.inputs
            inputs.extend((a, b))
            eager.append(f"_gemm(xp, {a.name}, {b.name}).transpose({dims!r})"
                         f".reshape({v.shape!r})")
            dense[v] = "True"
            lines.append(f"    _gemm(xp, {a.name}, {b.name}, out={dst}.transpose({back!r}))"
                         f"  # {_describe(matmul)}")
        inputs = list(dict.fromkeys(inputs))
        out = cat.outputs[0]
        head = [f"def cat_into(xp, {', '.join(v.name for v in inputs)}, out=None):"]
        anchors = [test for v, test in dense.items() if min(v.shape, default=2) > 1]
        if "True" not in anchors and len(out.shape) in (4, 5):  # (else eager's is C too)
            every = [f"({' and '.join(dense.values())})"] if len(anchors) < len(dense) else []
            test = " or ".join([*anchors, *every])
            head += [f"    if not ({test}):  # eager's calls, eager's layout",
                     f"        return _cat(xp, [{', '.join(eager)}], {cat.params['dim']})"]
        head += ["    if out is None or not out.flags.c_contiguous:",
                 f"        out = xp.empty({out.shape!r}, {inputs[0].name}.dtype)"]
        eqns = [e for v in cat.inputs for e in chains.get(v, [])]
        source = "\n".join([*head, *lines, "    return out"]) + "\n"
        return cls("cat_into", [*eqns, cat], inputs, source)

    @staticmethod
    def join_slices(cat: Eqn) -> list[tuple[slice, ...]]:
        """Where each operand of ``cat`` lies in its result, as an index."""
        ndim = len(cat.outputs[0].shape)
        dim = cat.params["dim"] % ndim
        slices, start = [], 0
        for v in cat.inputs:
            slices.append((slice(None),) * dim + (slice(start, start + v.shape[dim]),))
            start += v.shape[dim]
        return slices

    def overwrites_safely(self, v: Var) -> bool:
        """Whether ``out`` may be operand ``v``'s own buffer: no step reads ``v`` after the
        first one that writes ``out``, and that one reads it element by element, as a ufunc
        may with ``out=`` its input (``where`` copies its other branch into ``out`` before
        it reads the first). Never for a matmul (BLAS must not write over its operands) nor a
        join (it copies whole operands)."""
        if not self.fused:
            return False
        steps = self._steps(into=True)
        first = next(k for k, step in enumerate(steps) if step.dst == "out")
        if steps[first].eqn.prim.name == "where" and steps[first].args[1] == v.name:
            return False
        return all(v.name not in step.args for step in steps[first + 1:])

    def forward(self, xp: Any, *arrays: Any, out: Any = None) -> Any:
        if self._fn is None:
            self._fn = define(self.source, f"ember.jit kernel {self.name}", self.name,
                              KERNEL_GLOBALS)
        return self._fn(xp, *arrays, out=out)

    def __repr__(self) -> str:
        return f"<kernel {self.name}>"

    # -- the source ------------------------------------------------------------------------
    def _write(self) -> str:
        """The function's text: a layout check, the eager calls for other layouts, then the
        calls that write into ``out``."""
        shape = self.out.shape
        # (a full-size bool mask is read by NumPy or the loop in any layout)
        full = [v.name for v in self.inputs if v.shape == shape and v.dtype is self.out.dtype]
        params = ", ".join(["xp", *(v.name for v in self.inputs), "out=None"])
        lines = [f"def {self.name}({params}):"]
        eager = self._steps(into=False)
        if full:  # one dense layout (C or channels-last): the result's, as eager gives it
            # (operands of one element never decide a layout)
            others = [v.name for v in self.inputs if v.name not in full and
                      int(np.prod(v.shape)) > 1]
            among = f", others=({', '.join(others)},)" if others else ""
            lines.append(f"    layout = _dense_layout({', '.join(full)}{among})")
            lines.append("    if layout is None:  # eager's calls, eager's layout")
            lines.extend(f"        {line}" for line in self._lines(eager, follow=True))
            lines.append(f"        return {eager[-1].dst}")
            lines.append("    if out is None or out.strides != layout:")
            lines.append(f"        out = xp.empty_like({full[0]})")
            if all(e.prim.name in EXACT for e in self.eqns):
                operands = ", ".join(v.name for v in self.inputs)
                lines.append(f"    if _loop({self._loop_steps()!r}, out, {operands}):"
                             "  # one numba pass")
                lines.append("        return out")
        else:
            lines.append("    if out is None or not out.flags.c_contiguous:")
            like = next(v.name for v in self.inputs if v.dtype is self.out.dtype)
            lines.append(f"        out = xp.empty({shape!r}, {like}.dtype)")
        lines.extend(f"    {line}" for line in self._lines(self._steps(into=True)))
        lines.append("    return out")
        return "\n".join(lines) + "\n"

    def _loop_steps(self) -> tuple:
        """The steps as :func:`ember.jit.loops.run_loop` takes them."""
        names = {v: f"a{i}" for i, v in enumerate(self.inputs)}
        steps = []
        for k, e in enumerate(self.eqns):
            steps.append((e.prim.name, tuple(names[v] for v in e.inputs)))
            names[e.outputs[0]] = f"t{k}"
        return tuple(steps)

    def _steps(self, into: bool) -> list[Step]:
        """Each equation's buffer: with ``into``, the output's chain writes into ``out`` and
        every step of the output's shape into its consumer's buffer when that is free."""
        buffer: dict[Var, str] = {}
        if into:
            buffer[self.out] = "out"
            for e in reversed(self.eqns):
                dst = buffer.get(e.outputs[0])
                if dst is None:
                    continue
                for v in e.inputs:  # one operand inherits the buffer; the others get their own
                    producer = self._producer(v)
                    if producer is not None and v.shape == e.outputs[0].shape:
                        buffer[v] = dst
                        break
        steps = []
        written: set[str] = set()
        for e in self.eqns:
            out = e.outputs[0]
            dst = buffer.get(out, out.name)
            args = [buffer.get(v, v.name) for v in e.inputs]
            steps.append(Step(e, args, dst, dst in written or dst == "out"))
            written.add(dst)
        return steps

    def _producer(self, v: Var) -> Eqn | None:
        return next((e for e in self.eqns if e.outputs[0] is v), None)

    @staticmethod
    def _lines(steps: list[Step], follow: bool = False) -> list[str]:
        """The steps' NumPy calls; with ``follow``, each result of several operands laid out
        as its primitive's forward lays it out (:func:`_follow`)."""
        out = []
        for step in steps:
            code = EMITTERS[step.eqn.prim.name](step.args, step.dst, step.into)
            out.extend(code[:-1])
            out.append(f"{code[-1]}  # {_describe(step.eqn)}")
            if follow and step.eqn.prim.name in _FOLLOWING:
                out.append(f"{step.dst} = _follow(xp, {step.dst}, {', '.join(step.args)})")
        return out


def _slice_text(s: slice) -> str:
    return ":" if s.start is None else f"{s.start}:{s.stop}"


def _describe(eqn: Eqn) -> str:
    """``v7 = mul(v5, v6)  model.py:12``: the equation a kernel line computes."""
    args = ", ".join(v.name for v in eqn.inputs)
    where = f"  {eqn.source}" if eqn.source is not None else ""
    return f"{eqn.outputs[0].name} = {eqn.prim.name}({args}){where}"
