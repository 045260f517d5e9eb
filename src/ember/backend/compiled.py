"""Kernels compiled by numba, when the optional ``fast`` extra (``pip install ember[fast]``)
is installed.

NumPy evaluates a chain of elementwise operations one pass at a time; numba compiles the chain
into one loop that reads each element once. Ember's numba kernels are serial and release the
GIL: :func:`ember.backend.parallel.run` spreads their blocks over the cores, so one thread pool
(sized by Ember's thread setting, safe across ``fork``) runs them; the batch-1 GEMV alone runs
on numba's OpenMP threads (:mod:`ember.backend.gemv_numba`). Every such kernel has a NumPy
twin, used when numba is missing, turned off (``EMBER_NUMBA=0``, or :func:`use_numba`), or
fails to compile them (:func:`load` warns and turns it off).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
from functools import cache
from types import CodeType, ModuleType
from typing import Any

import numpy as np

from ember.backend.switches import switched_off

__all__ = ["Lazy", "describe", "load", "numba_enabled", "preload", "ready", "register", "turn_off",
           "use_numba"]

# why numba's kernels are off, or None while they may run (read once, at import)
_OFF_BECAUSE: list[str | None] = [
    "EMBER_NUMBA=" + os.environ["EMBER_NUMBA"] if switched_off("EMBER_NUMBA") else None]


@cache
def _numba() -> Any:
    try:
        import numba
    except ImportError:
        return None
    return numba


def numba_enabled() -> bool:
    """Whether Ember's numba kernels run: numba is installed and not turned off.

    Example:
        >>> ember.backend.compiled.numba_enabled()
        True
    """
    return _OFF_BECAUSE[0] is None and _numba() is not None


def describe() -> str:
    """One line for ``ember info``: which kernels numba runs."""
    if _numba() is None:
        return "NumPy (pip install 'ember[fast]' adds numba's one-pass kernels)"
    state = "on" if _OFF_BECAUSE[0] is None else f"off ({_OFF_BECAUSE[0]})"
    return (f"numba {_numba().__version__}: one-pass float32 erf and gelu, softplus, relu, "
            f"softmax, layer norm, im2col and col2im, depthwise convolutions, Winograd's 3×3 "
            f"convolution, channels-last max pooling and batch norm, embedding's and "
            f"interpolate's backward, bias gradients' column sums, "
            f"Adam's and SGD's updates, lerp, float32 fmod, remainder, hypot, copysign, logaddexp, "
            f"the shrinks, sign, frac, rsqrt, erfc, erfinv, ndtri, lgamma, digamma, trigamma, "
            f"complex reciprocal, "
            f"I0 and I1, "
            f"batch-1 GEMVs on its OpenMP threads, {state}")


def use_numba(enabled: bool) -> None:
    """Turns Ember's numba kernels on or off (their NumPy twins run instead). The environment
    variable ``EMBER_NUMBA=0`` (or ``false``, ``off``, ``no``), read when Ember is imported,
    starts with them off.

    Example:
        >>> ember.backend.compiled.use_numba(False)
    """
    _OFF_BECAUSE[0] = None if enabled else "use_numba(False)"


def njit(signature: Any, reassociate: bool = False, contract: bool = False,
         own_flags: bool = False, parallel: bool = False) -> Any:
    """Decorator: the function as a numba kernel for ``signature`` (one numba signature or a
    list), compiled for all of them on its first call (:class:`Lazy`), as a serial kernel that
    releases the GIL, cached on disk and inlined where another kernel calls it; float errors as
    NumPy's (inf and nan, no exception checks, so loops vectorize). Only for modules imported
    when :func:`numba_enabled`.

    ``reassociate`` lets the compiler reorder the function's additions (only that: nan, inf
    and signed zeros keep their meaning), so that a running sum vectorizes as several partial
    sums. ``contract`` lets it fuse a product and a sum into one multiply-add (one rounding
    instead of two; half the instructions and half the dependent steps of a polynomial).
    Such a function, or one with ``own_flags``, keeps its own flags where another kernel calls
    it: numba calls it rather than inlining it (which would compile it with its caller's
    flags), and the compiler inlines it afterwards, so the loop still vectorizes.
    ``parallel`` runs its ``prange`` loops on numba's own threads (see
    :mod:`ember.backend.gemv_numba`, the one such kernel, and why)."""
    fastmath = {flag for flag, on in (("reassoc", reassociate), ("contract", contract)) if on}
    options: dict[str, Any] = {"nogil": True, "cache": True, "error_model": "numpy"}
    if fastmath or own_flags or parallel:
        options.update(fastmath=fastmath or False, parallel=parallel)
    else:
        options["inline"] = "always"
    return lambda fn: Lazy(fn, signature, options)


_COMPILING = threading.RLock()


class Lazy:
    """A numba kernel that compiles on its first call, and then takes its own place in its
    module (a later lookup finds numba's kernel itself, whose call costs no Python step).

    Compiling a module's kernels when it is imported cost a fresh install's first training
    step a minute (a CNN with Adam, 5 December: the optimizers' module compiled all nine
    optimizers' updates for each dtype, the convolution's every layout). On its first call a
    kernel compiles the signature that declares the call's arrays as they are (dtype,
    dimensions, layout, read-only: numba's choice among all of them), on a dispatcher of its
    own; only where none does, those of the arrays' dtypes (numba converts no array to another
    dtype). A call with other arrays compiles theirs: the first ``where`` of float32 blocks
    compiles one of its eight read-only variants, not eight (1.9 s -> 0.4 s without a disk
    cache, 6 December). A dispatcher holding the groups' code (one group a dtype) then takes
    the kernel's place in its module (:meth:`_step_aside`); a call none of its signatures
    takes exactly comes back here (numba's ``_compile_for_args``, which compiles nothing
    itself). Where another kernel calls it (numba types that call by the signatures it has by
    then), or for :func:`preload`, it compiles every signature first (:meth:`ready`). numba's
    dispatcher is made at import, with its disk cache where numba finds a writable folder for
    one (next to the module, else ``NUMBA_CACHE_DIR`` or the user's cache folder) and without
    one where it finds none; a cache file that fails to load or save is passed over. A kernel
    that fails to compile turns numba off (:func:`turn_off`: later calls run NumPy's twins)
    and raises.

    Example:
        >>> kernel = compiled.njit(["float64(float64[::1])", "float32(float32[::1])"])(total)
        >>> kernel(np.ones(3, np.float32))  # (compiles the float32 signature only)
        3.0
    """

    def __init__(self, fn: Any, signature: Any, options: dict[str, Any]) -> None:
        self.fn, self.options = fn, options
        self.declared = signature if isinstance(signature, list) else [signature]
        self.dispatcher = self._dispatcher()  # (for every signature: see ready)
        self.kernel: Any = None  # the dispatcher, once compiled
        self.groups: dict[tuple, Any] = {}  # the arguments' arrays' numba types -> dispatcher
        self.calls: dict[bytes, Any] = {}  # numba's fingerprint of a call's arguments -> the same
        self.compiling: int | None = None  # the thread compiling it (see ready())
        self.front: Any = None  # the group's dispatcher in the module's place (_step_aside)
        self.__name__, self.__doc__ = fn.__name__, fn.__doc__

    def __call__(self, *args: Any) -> Any:
        return self._target(args)(*args)

    def _target(self, args: tuple) -> Any:
        """The dispatcher that runs a call with ``args``, compiled now if it is not yet."""
        kernel = self.kernel
        if kernel is not None:
            return kernel
        try:  # (one C call for all the arguments: ~0.4 µs where a Python loop over them took ~1.3)
            key = _fingerprint(args)
        except Exception:  # (an argument numba has no fingerprint for: a string, an object)
            key = None
        return self.calls.get(key) or self._group(args, key)

    def ready(self) -> Any:
        """numba's kernel, compiled now for every signature if it is not yet."""
        with _COMPILING:  # (pieces on several threads may call it first at once)
            if self.kernel is None:
                self.kernel = self._compiled(self.dispatcher, self.declared)
                self._take_place(self.kernel)
        return self.kernel

    def _take_place(self, kernel: Any) -> None:
        """Puts ``kernel`` in the module's place of the function, where this kernel (or its
        front) still is."""
        current = self.fn.__globals__.get(self.fn.__name__)
        if current is self or current is not None and current is self.front:
            self.fn.__globals__[self.fn.__name__] = kernel

    def _step_aside(self, arrays: tuple, group: Any) -> None:
        """Puts a front in the module's place: a dispatcher of its own holding the compiled
        code of ``group`` (the first call's ``arrays``' numba types), and of each later group
        of other dtypes (float32 training after a float64 warm-up), so their calls go straight
        to numba's code. It runs exact type matches only: a call that no signature takes
        exactly (a read-only or strided block of a dtype it holds, where numba would find two
        matches and miss both were that group added too; an ``np.float32`` or int scalar for
        a float64) comes back to :meth:`_target` through numba's ``_compile_for_args`` (which
        converts it). Not where a declared signature has an array of any layout ("A"): numba
        would run a contiguous array's call on such a signature, where :meth:`_group` compiles
        the contiguous one (a read-only one where it has a writable one is the same code)."""
        from numba.core import sigutils

        dtypes = tuple(t and t.dtype for t in arrays)
        if self.front is None:
            if any(getattr(t, "layout", None) == "A" for s in self.declared
                   for t in sigutils.normalize_signature(s)[0]):
                return
            front = self._dispatcher()
            front._compile_for_args = lambda *args, **kws: self._target(args)
            front.ember_lazy, front.ember_dtypes, self.front = self, set(), front
        elif dtypes in self.front.ember_dtypes:
            return
        for compiled_code in group.overloads.values():
            self.front.add_overload(compiled_code)
        self.front.ember_dtypes.add(dtypes)
        self._take_place(self.front)

    def _group(self, args: tuple, key: bytes | None) -> Any:
        """The dispatcher for ``args``' arrays' types (dtype, dimensions, layout, read-only),
        compiled now if it is not yet: for the signatures that declare exactly those arrays
        (most often one), or else for those that declare their dtypes; every signature's
        (:meth:`ready`) where those are all of them, or where the call has no array. Kept for
        later calls whose arguments have numba's fingerprint ``key`` (None: none)."""
        from numba.core import sigutils

        types = [_numba().typeof(a) if isinstance(a, np.ndarray) else None for a in args]
        if not any(types):
            return self.ready()
        with _COMPILING:
            arrays = tuple(types)
            group = self.groups.get(arrays)
            if group is None:
                declared = [(s, sigutils.normalize_signature(s)[0]) for s in self.declared]
                taking = [s for s, parameters in declared if _takes(parameters, types)] or [
                    s for s, parameters in declared
                    if _takes(parameters, [t and t.dtype for t in types], by_dtype=True)]
                if len(taking) in (0, len(self.declared)):  # (none: numba's own TypeError)
                    return self.ready()
                group = self.groups[arrays] = self._compiled(self._dispatcher(), taking)
                if self.kernel is None:
                    self._step_aside(arrays, group)
            if key is not None:
                self.calls[key] = group
        return group

    def _dispatcher(self) -> Any:
        """numba's dispatcher of the function: with its disk cache where numba can place one
        (without, where it cannot), whose failures to load or save leave it to compile."""
        try:
            dispatcher = _numba().njit(**self.options)(self.fn)
        except RuntimeError as exc:  # (no folder to cache it in: numba's "no locator")
            if not self.options.get("cache") or "locator" not in str(exc):
                raise
            return _numba().njit(**{**self.options, "cache": False})(self.fn)
        cache = getattr(dispatcher, "_cache", None)
        if hasattr(cache, "save_overload"):
            cache.load_overload = _guarded(cache.load_overload)
            cache.save_overload = _guarded(cache.save_overload)
        return dispatcher

    def _compiled(self, dispatcher: Any, signatures: list) -> Any:
        """``dispatcher`` compiled for ``signatures`` (after the kernels that the function
        calls), then closed to others, as numba's own ``njit(signatures)``."""
        self.compiling = threading.get_ident()
        try:
            _ready_callees(self.fn)
            for signature in signatures:
                dispatcher.compile(signature)
            dispatcher.disable_compile()
        except Exception as exc:  # any failure of numba's: NumPy's twins run next
            turn_off(f"{self.fn.__module__}.{self.fn.__name__} failed to compile: "
                     f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.compiling = None
        return dispatcher


def _fingerprint(args: tuple) -> bytes:
    """numba's fingerprint of the types of ``args`` (arrays: dtype, dimensions, layout,
    read-only; scalars: their kind), in place of this function once numba is imported."""
    global _fingerprint
    from numba._dispatcher import compute_fingerprint as _fingerprint

    return _fingerprint(args)


def _takes(parameters: tuple, types: list, by_dtype: bool = False) -> bool:
    """Whether a signature's ``parameters`` are the numba types ``types`` of the call's arrays
    (None: not an array) at their places; ``by_dtype``: arrays of those dtypes."""
    return len(parameters) == len(types) and all(
        t is None or hasattr(parameter, "layout") and
        (getattr(parameter, "dtype", None) if by_dtype else parameter) == t
        for parameter, t in zip(parameters, types))


def _guarded(method: Any) -> Any:
    """``method`` of numba's disk cache, giving None where it fails (a cache folder gone
    read-only or full, a damaged file): the kernel is compiled, and kept in memory only."""
    def guarded(*args: Any) -> Any:
        try:
            return method(*args)
        except Exception:  # (a cache never breaks an op)
            return None
    return guarded


def ready(kernel: Any) -> Any:
    """numba's kernel for ``kernel`` (a :class:`Lazy` compiled now if it is not yet; its
    dispatcher to the thread compiling it: a kernel that calls itself), for code that hands it
    to numba itself (a kernel called from a loop compiled elsewhere).

    Example:
        >>> compiled.ready(erf_numba.erf)
        CPUDispatcher(<function erf at 0x...>)
    """
    kernel = getattr(kernel, "ember_lazy", kernel)  # (a Lazy's front: see Lazy._step_aside)
    if not isinstance(kernel, Lazy):
        return kernel
    return kernel.dispatcher if kernel.compiling == threading.get_ident() else kernel.ready()


def _ready_callees(fn: Any) -> None:
    """Compiles the lazy kernels that ``fn`` names (as globals of its module, variables of an
    enclosing function, or attributes of a module it names) and puts them in their place."""
    names = _names(fn.__code__)
    scope = fn.__globals__
    for name in names:
        value = scope.get(name)
        if isinstance(value, Lazy) or hasattr(value, "ember_lazy"):
            scope[name] = ready(value)
        elif isinstance(value, ModuleType):
            for attribute in names:
                ready(getattr(value, attribute, None))
    for cell in fn.__closure__ or ():
        if isinstance(cell.cell_contents, Lazy):
            cell.cell_contents = ready(cell.cell_contents)


def _names(code: CodeType) -> set[str]:
    """The global and attribute names that ``code`` and the code nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _names(const)
    return names


_MODULES: list[str] = []  # every module of kernels, named by the op modules that use them


def register(module: str) -> str:
    """Names a module of numba kernels that an op module loads on first use (so
    :func:`preload` can load it earlier); returns the name.

    Example:
        >>> _KERNELS = compiled.register("ember.ops.relu_numba")
    """
    if module not in _MODULES:
        _MODULES.append(module)
    return module


def preload() -> bool:
    """Loads every registered module of kernels now and compiles each of their kernels, if
    numba runs: the first use of numba costs time and ~100 MiB of resident code, which a
    server (or a memory measurement) pays before it starts. Returns whether numba's kernels
    run.

    Example:
        >>> ember.backend.compiled.preload()
        True
    """
    if not numba_enabled():
        return False
    for name in list(_MODULES):
        module = load(name)
        if module is None:
            return False
        try:
            for kernel in list(vars(module).values()):
                ready(kernel)
        except Exception:  # (turned off, with a warning that says why)
            return False
    return True


_LOADED: dict[str, Any] = {}  # the modules ``load`` has imported whole


def load(module: str) -> Any:
    """Imports a module of numba kernels, or turns numba off with a warning and returns None
    when that fails (an unwritable cache, a numba that cannot compile them): the NumPy twins
    then run.

    Example:
        >>> kernels = ember.backend.compiled.load("ember.ops.erf_numba")
    """
    # every kernel call asks, so the quick way first: a module another thread is still
    # importing is not in _LOADED yet (``import_module`` waits for it)
    loaded = _LOADED.get(module)
    if loaded is not None and sys.modules.get(module) is loaded:
        return loaded
    try:
        _compiles()
        loaded = _LOADED[module] = importlib.import_module(module)
        return loaded
    except Exception as exc:  # any failure of numba's: Ember still runs, on NumPy
        turn_off(f"{module} failed to load: {type(exc).__name__}: {exc}")
        return None


def _one_more(x: int) -> int:
    return x + 1


@cache
def _compiles() -> None:
    """Compiles a kernel of one line once a process (from numba's disk cache after the first
    time): a numba that cannot compile (its LLVM missing or mismatched) fails here, where
    :func:`load` still gives NumPy's twins, rather than in the user's op (:class:`Lazy`)."""
    Lazy(_one_more, "int64(int64)", {"cache": True}).ready()(1)


def turn_off(reason: str) -> None:
    """Turns numba's kernels off because of ``reason``, with a warning (NumPy's run)."""
    _OFF_BECAUSE[0] = reason
    warnings.warn(f"ember: numba's kernels are off, NumPy's run instead: {reason}",
                  RuntimeWarning, stacklevel=3)
