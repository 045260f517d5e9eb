"""Ember's random number generators: :class:`Generator` (NumPy's PCG64 underneath, with its
seed and state), the default one every sampler draws from unless given ``generator=``, and
the functions over it (``manual_seed``, ``seed``, ``initial_seed``, ``get_rng_state``,
``set_rng_state``), which :mod:`ember.ops.random` and :mod:`ember.random` export."""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

from ember import dtypes
from ember.backend import device as to_device
from ember.backend.device import no_backend_error
from ember.errors import ArgumentError, ArgumentTypeError, OpError, describe
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor, _wrap

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator", "remap_seed"]


class Generator:
    """A source of random numbers with its own state. A new one starts from PyTorch's default
    seed (``initial_seed()`` 67280421310721), so its draws repeat from run to run until it is
    seeded, as PyTorch's; the default generator starts from fresh entropy.

    Example:
        >>> g = ember.Generator().manual_seed(0)
        >>> a = ember.randn(3, generator=g)
        >>> ember.Generator().initial_seed()
        67280421310721
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = to_device(device)
        if not self.device.has_backend:  # (its numbers would have nowhere to go)
            raise no_backend_error(str(self.device), "Generator")
        self._reseed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Resets the state from ``seed``; returns the generator. (Inside ``ember.jit.compile``
        the reseeding happens on every call, as in eager code.) ``seed`` must be an integer,
        as PyTorch's (``ember.manual_seed`` also takes what ``int()`` converts)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ArgumentTypeError(f"manual_seed expected an integer seed, but got "
                                    f"{type(seed).__name__}, as PyTorch refuses. Hint: int(seed)")
        return _on_every_call("manual_seed", lambda: self._reseed(remap_seed(seed)))

    def seed(self) -> int:
        """Reseeds from fresh entropy; returns the new seed. (Inside ``ember.jit.compile`` it
        reseeds on every call, but the seed it returns is the one drawn when tracing.)"""
        return _on_every_call("seed", lambda: self._reseed(_entropy())._seed)

    def _reseed(self, seed: int) -> Generator:
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def initial_seed(self) -> int:
        """The seed the current stream started from."""
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor, as PyTorch's (its bytes are Ember's own: the seed
        and NumPy's PCG64 state, 45 of them). (Inside ``ember.jit.compile``, the state at each
        call, as in eager code.)"""
        read = None if (h := DISPATCH.handler) is None else _jit_hook(h, "generator_state")
        return self._state() if read is None else read(self._state)

    def _state(self) -> Tensor:
        bits = self._rng.bit_generator.state
        raw = (self._seed.to_bytes(8, "little") + bits["state"]["state"].to_bytes(16, "little")
               + bits["state"]["inc"].to_bytes(16, "little") + bytes([bits["has_uint32"]])
               + bits["uinteger"].to_bytes(4, "little"))
        return _wrap(np.frombuffer(raw, np.uint8).copy(), self.device)

    def set_state(self, state: Tensor | dict) -> Generator:
        """Restores a state from :meth:`get_state` (or the dict older Ember versions saved)."""
        if isinstance(state, dict):
            self._seed = int(state["seed"])
            self._rng.bit_generator.state = state["bit_generator"]
            return self
        if not (isinstance(state, Tensor) and state.dtype == dtypes.uint8
                and tuple(state.shape) == (_STATE_BYTES,)):
            got = (describe(state.shape, state.dtype) if isinstance(state, Tensor)
                   else type(state).__name__)
            raise OpError(f"set_state: expected the uint8 tensor of {_STATE_BYTES} bytes that "
                          f"get_state() returns, got {got}; hint: a state from another "
                          "framework's generator cannot be restored here")
        # (jit's tracer: the state is restored at each call, from that call's value)
        write = None if (h := DISPATCH.handler) is None else _jit_hook(h, "set_generator_state")
        if write is None:
            self._restore(state._data)
        else:
            write(state, self._restore)
        return self

    def _restore(self, array: Any) -> None:
        """Sets the state from the 45 bytes of :meth:`get_state`'s array (a CuPy one copied
        to the host)."""
        raw = bytes(array.get() if hasattr(array, "get") else array)
        word = lambda a, b: int.from_bytes(raw[a:b], "little")  # noqa: E731
        self._seed = word(0, 8)
        self._rng.bit_generator.state = {
            "bit_generator": "PCG64", "state": {"state": word(8, 24), "inc": word(24, 40)},
            "has_uint32": raw[40], "uinteger": word(41, 45)}

    def clone_state(self) -> Generator:
        """A new generator on the same device, in this one's state (they then draw the same
        numbers independently).

        Example:
            >>> g = ember.Generator().manual_seed(3)
            >>> bool((ember.rand(2, generator=g.clone_state()) == ember.rand(2, generator=g)).all())
            True
        """
        return Generator(self.device).set_state(self.get_state())

    def get_offset(self) -> NoReturn:
        """PyTorch's Philox offset; a CPU generator has none, so it raises, as PyTorch's."""
        raise OpError("get_offset: Ember's generators (PCG64) do not use an offset, as "
                      "PyTorch's CPU Generator. Hint: get_state() / set_state()")

    def set_offset(self, offset: int) -> NoReturn:
        """Raises, as :meth:`get_offset` (PyTorch's CPU Generator has no offset either)."""
        return self.get_offset()

    def graphsafe_get_state(self) -> NoReturn:
        """PyTorch's CUDA-graph state swap; unsupported here, as on PyTorch's CPU Generator."""
        raise NotImplementedError("graphsafe_get_state is not supported by Ember's generators, "
                                  "as by PyTorch's CPU Generator. Hint: clone_state()")

    def graphsafe_set_state(self, state: Generator) -> NoReturn:
        """Raises, as :meth:`graphsafe_get_state`."""
        return self.graphsafe_get_state()

    def __copy__(self) -> Generator:
        """``copy.copy``: an independent generator in this one's state, as PyTorch's (the
        NumPy generator underneath is not shared, so drawing from one leaves the other)."""
        return self.clone_state()

    @property
    def numpy(self) -> np.random.Generator:
        """The NumPy generator underneath (CPU)."""
        return self._rng


def _entropy() -> int:
    """A fresh seed from the operating system's entropy."""
    return int(np.random.SeedSequence().entropy % (2 ** 63))


_STATE_BYTES = 45  # the seed (8), PCG64's state and increment (16 each), its cached word (1 + 4)
_DEFAULT_SEED = 67280421310721  # PyTorch's default_rng_seed_val
default_generator = Generator()._reseed(_entropy())


def _on_every_call(what: str, run: Any) -> Any:
    """``run()``; under a tracer that records Python effects (``ember.jit``), also recorded,
    so that a compiled function reseeds on each call as its eager code does."""
    record = None if (h := DISPATCH.handler) is None else _jit_hook(h, "python_effect")
    return run() if record is None else record(f"Generator.{what}", run)


def _jit_hook(handler: Any, name: str) -> Any:
    """The method ``name`` of ``handler`` (the current one, not None: callers check that
    inline, so eager code pays one attribute read), or else of the nearest handler below it
    that has it (jit's tracer, also under autocast's or vmap's handler inside a compiled
    function); None if none has it."""
    hook = getattr(handler, name, None)
    if hook is not None:
        return hook
    stack = DISPATCH.stack  # (below it only: code run_below a handler sees none above)
    for h in reversed(stack[:stack.index(handler)] if handler in stack else ()):
        hook = getattr(h, name, None)
        if hook is not None:
            return hook
    return None


def remap_seed(seed: int) -> int:
    """``seed`` as PyTorch's generators take it: any integer in ``[-2**63, 2**64)``, a
    negative one remapped to ``seed + 2**64`` (so ``initial_seed()`` reads the same)."""
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ArgumentError(f"manual_seed: the seed must be in [-2**63, 2**64) (a 64-bit "
                            f"integer, as in PyTorch), got {seed}")
    return seed + 2 ** 64 if seed < 0 else seed


def manual_seed(seed: int) -> Generator:
    """Seeds the default generator, making runs repeatable: ``ember.manual_seed(0)``."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Seeds the default generator from fresh entropy and returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed of the default generator."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (see :meth:`Generator.get_state`)."""
    return default_generator.get_state()


def set_rng_state(state: Tensor | dict) -> None:
    """Restores the default generator's state."""
    default_generator.set_state(state)
