"""The hardware-abstraction layer: devices, their array namespaces, capabilities and threads
(BLAS's, and a pool for independent pieces of one computation), and host memory reuse.

Primitives never import NumPy for device work: they receive the device's namespace (``xp``).
A CUDA backend registers a device type here with CuPy as its namespace; no op changes.
"""

from ember.backend.allocator import cache_host_memory, configure_from_environment
from ember.backend.capabilities import Capabilities, capabilities, compute_dtype
from ember.backend.cpu import CPU
from ember.backend.device import (
    Device,
    DeviceUnavailableError,
    device,
    get_default_device,
    register_backend,
    set_default_device,
)
from ember.backend.device import _default as _default_device
from ember.backend.gemm import set_single_thread_gemm_below
from ember.backend.meta import META, MetaArray
from ember.backend.settings import *  # noqa: F403
from ember.backend.settings import __all__ as _settings
from ember.backend.threads import (
    blas_info,
    cpu_count,
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)

_default_device.append(CPU)
configure_from_environment()

__all__ = ["CPU", "META", "MetaArray", "Capabilities", "Device", "DeviceUnavailableError",
           "blas_info",
           "cache_host_memory", "capabilities", "compute_dtype", "cpu_count", "device",
           "get_default_device", "get_num_threads",
           "get_num_interop_threads", "register_backend", "set_default_device",
           "set_num_threads", "set_num_interop_threads", "set_single_thread_gemm_below",
           *_settings]
