"""``ember.cuda``: ``torch.cuda``'s everyday functions, answering truthfully for a build with no
CUDA backend (Ember computes on the CPU).

They behave as ``torch.cuda`` does on a machine without CUDA: queries report no device
(``is_available()`` False, ``device_count()`` 0, memory counters 0), seeding and
``empty_cache`` do nothing, and whatever needs a device (``synchronize``, ``current_device``,
``get_device_name``, ``reset_peak_memory_stats`` …) raises :class:`CudaUnavailableError`, an
``AssertionError`` as PyTorch's "Torch not compiled with CUDA enabled" is (and a
:class:`~ember.errors.DeviceError`).

Example:
    >>> ember.cuda.is_available(), ember.cuda.device_count()
    (False, 0)
    >>> device = "cuda" if ember.cuda.is_available() else "cpu"
    >>> device
    'cpu'
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, NoReturn

from ember.backend.device import DeviceUnavailableError
from ember.cuda import amp

__all__ = ["CudaUnavailableError", "OutOfMemoryError", "amp", "current_device", "device_count",
           "empty_cache", "get_arch_list", "get_device_capability", "get_device_name",
           "get_device_properties", "get_rng_state", "get_rng_state_all", "init", "initial_seed",
           "is_available", "is_bf16_supported", "is_initialized", "manual_seed",
           "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info",
           "memory_allocated", "memory_reserved", "memory_stats", "reset_peak_memory_stats",
           "seed", "seed_all", "set_device", "set_rng_state", "set_rng_state_all", "synchronize"]


class CudaUnavailableError(DeviceUnavailableError):
    """Raised by an ``ember.cuda`` function that needs a CUDA device (Ember has none); an
    ``AssertionError`` and a :class:`~ember.errors.DeviceError`."""


class OutOfMemoryError(RuntimeError):
    """A CUDA allocation failing: never raised by Ember (it has no CUDA memory; NumPy raises
    :class:`MemoryError` when host memory runs out), and there so that ``except`` clauses
    written for ``torch.cuda.OutOfMemoryError`` work.

    Example:
        >>> issubclass(ember.cuda.OutOfMemoryError, RuntimeError)
        True
    """


def _no_cuda(name: str) -> NoReturn:
    raise CudaUnavailableError(
        f"ember.cuda.{name}: Ember has no CUDA backend (it computes on the CPU; "
        "ember.cuda.is_available() is False), as torch.cuda raises 'Torch not compiled with "
        "CUDA enabled'. Hint: guard GPU-only code with `if ember.cuda.is_available():`")


def is_available() -> bool:
    """Whether a CUDA device can be used: always False in Ember.

    Example:
        >>> ember.cuda.is_available()
        False
    """
    return False


def device_count() -> int:
    """The number of CUDA devices: 0.

    Example:
        >>> ember.cuda.device_count()
        0
    """
    return 0


def is_initialized() -> bool:
    """Whether CUDA has been initialised: never (False).

    Example:
        >>> ember.cuda.is_initialized()
        False
    """
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether a CUDA device computes in bfloat16: False (no device).

    Example:
        >>> ember.cuda.is_bf16_supported()
        False
    """
    return False


def get_arch_list() -> list[str]:
    """The CUDA architectures this build was compiled for: none.

    Example:
        >>> ember.cuda.get_arch_list()
        []
    """
    return []


def manual_seed(seed: int) -> None:
    """Seeds the current CUDA device's generator: with no device, does nothing (as torch
    without CUDA). Seed the CPU with :func:`ember.manual_seed`.

    Example:
        >>> ember.cuda.manual_seed(0)
    """


def manual_seed_all(seed: int) -> None:
    """Seeds every CUDA device's generator: does nothing (no devices).

    Example:
        >>> ember.cuda.manual_seed_all(0)
    """


def seed() -> None:
    """Seeds the current CUDA device from a random number: does nothing (no device).

    Example:
        >>> ember.cuda.seed()
    """


def seed_all() -> None:
    """Seeds every CUDA device from a random number: does nothing (no devices).

    Example:
        >>> ember.cuda.seed_all()
    """


def empty_cache() -> None:
    """Releases cached CUDA memory: there is none, so it does nothing.

    Example:
        >>> ember.cuda.empty_cache()
    """


def memory_allocated(device: Any = None) -> int:
    """Bytes of CUDA memory held by tensors: 0. (CPU tensors: :func:`ember.memory.allocated`.)

    Example:
        >>> ember.cuda.memory_allocated()
        0
    """
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """Peak bytes of CUDA memory held by tensors: 0.

    Example:
        >>> ember.cuda.max_memory_allocated()
        0
    """
    return 0


def memory_reserved(device: Any = None) -> int:
    """Bytes of CUDA memory the caching allocator holds: 0.

    Example:
        >>> ember.cuda.memory_reserved()
        0
    """
    return 0


def max_memory_reserved(device: Any = None) -> int:
    """Peak bytes of CUDA memory the caching allocator held: 0.

    Example:
        >>> ember.cuda.max_memory_reserved()
        0
    """
    return 0


def memory_stats(device: Any = None) -> OrderedDict:
    """The CUDA allocator's statistics: empty, as torch's without CUDA.

    Example:
        >>> ember.cuda.memory_stats()
        OrderedDict()
    """
    return OrderedDict()


def reset_peak_memory_stats(device: Any = None) -> NoReturn:
    """Resets the CUDA allocator's peaks: raises (no device; torch without CUDA raises too).
    For CPU tensors use :func:`ember.memory.reset_peak`."""
    _no_cuda("reset_peak_memory_stats")


def synchronize(device: Any = None) -> NoReturn:
    """Waits for a CUDA device's work: raises, as torch without CUDA (CPU ops are synchronous,
    so CPU code needs no such call).

    Example:
        >>> ember.cuda.synchronize()
        Traceback (most recent call last):
        ...
        ember.cuda.CudaUnavailableError: ember.cuda.synchronize: Ember has no CUDA backend...
    """
    _no_cuda("synchronize")


def init() -> NoReturn:
    """Initialises CUDA: raises (no CUDA backend)."""
    _no_cuda("init")


def current_device() -> NoReturn:
    """The index of the current CUDA device: raises (there is none)."""
    _no_cuda("current_device")


def set_device(device: Any) -> NoReturn:
    """Selects a CUDA device: raises (there is none)."""
    _no_cuda("set_device")


def get_device_name(device: Any = None) -> NoReturn:
    """A CUDA device's name: raises (there is none)."""
    _no_cuda("get_device_name")


def get_device_capability(device: Any = None) -> NoReturn:
    """A CUDA device's compute capability: raises (there is none)."""
    _no_cuda("get_device_capability")


def get_device_properties(device: Any = None) -> NoReturn:
    """A CUDA device's properties: raises (there is none)."""
    _no_cuda("get_device_properties")


def mem_get_info(device: Any = None) -> NoReturn:
    """A CUDA device's free and total memory: raises (there is none)."""
    _no_cuda("mem_get_info")


def get_rng_state(device: Any = "cuda") -> NoReturn:
    """A CUDA generator's state: raises (there is none)."""
    _no_cuda("get_rng_state")


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Sets a CUDA generator's state: does nothing (torch without CUDA queues it for a device
    that never comes).

    Example:
        >>> ember.cuda.set_rng_state(ember.zeros(8, dtype=ember.uint8))
    """


def get_rng_state_all() -> list:
    """Every CUDA generator's state, one per device: none, as torch without CUDA (so code
    saving them for a checkpoint runs on the CPU).

    Example:
        >>> ember.cuda.get_rng_state_all()
        []
    """
    return []


def set_rng_state_all(new_states: Any) -> None:
    """Sets every CUDA generator's state, one per device: does nothing (no devices).

    Example:
        >>> ember.cuda.set_rng_state_all(ember.cuda.get_rng_state_all())
    """


def initial_seed() -> NoReturn:
    """The current CUDA generator's initial seed: raises (there is none)."""
    _no_cuda("initial_seed")
