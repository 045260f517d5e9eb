"""Ember: a deep-learning framework in which every operation is defined once, as a primitive.

Example:
    >>> import ember
    >>> x = ember.randn(3, requires_grad=True)
    >>> (x * x).sum().backward()
    >>> bool((x.grad == 2 * x).all())
    True
"""

import math
import os

# OpenBLAS's worker threads spin for ~0.1 s after each GEMM by default, holding a core that
# Ember's own threads (the float32 kernels' blocks, batches of small products) need between
# GEMMs; 2¹⁶ cycles (~20 µs) still covers back-to-back GEMMs (gpt's step 425 → 385 ms). The
# cost: a GEMM-bound step that starts after an idle spell wakes the workers more often (mlp
# 18 → 29 ms when each step follows 0.2 s of idling); set OPENBLAS_THREAD_TIMEOUT=28 for
# OpenBLAS's own default. A value set by the user is kept. OpenBLAS reads it when NumPy
# loads it; where NumPy came first (`import numpy as np; import ember`) and the process runs
# one thread, OpenBLAS is asked to read it again at the end of this file (resnet18's compiled
# step 509 → 386 ms, gpt's 224 → 201 ms).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")

from ember import autograd, backend, dtypes, errors  # noqa: E402
from ember.autograd.anomaly import (
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.backend import (
    Device,
    are_deterministic_algorithms_enabled,
    device,
    get_default_device,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled,
    set_default_device,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    set_warn_always,
    use_deterministic_algorithms,
)
from ember.dtypes import (
    DType,
    bfloat16,
    bool_,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    result_type,
    set_default_dtype,
    short,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ember.dtypes import DType as dtype  # the class of ember.float32 …, as torch.dtype
from ember.dtypes import bool_ as bool  # noqa: A001 - ember.bool, as torch.bool
from ember.dtypes import float32 as float  # noqa: A001
from ember.dtypes import int32 as int  # noqa: A001
from ember.errors import DeviceError, DTypeError, EmberError, GradError, ShapeError
from ember.layouts import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    jagged,
    layout,
    memory_format,
    preserve_format,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ember.ops import *  # noqa: F403
from ember.size import Size
from ember.tensor import Tensor
from ember.tensor_repr import set_printoptions
from ember.type_info import can_cast, finfo, iinfo

# The layers above the core import it, so they come after it, in layer order (DESIGN.md).
# isort: off
from ember import sparse  # sparse tensors: part of the core, written with the ops
from ember.sparse.row_products import dsmm, hspmm, saddmm, smm, sspaddmm
from ember.sparse import (
    sparse_bsc_tensor,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_coo_tensor,
    sparse_csc_tensor,
    sparse_csr_tensor,
)
from ember import fft, quasirandom, random, signal, special  # torch's namespaces of these, over ops
from ember import futures  # torch.futures: Future, for collectives' results
from ember import data, linalg, models, nn, optim, utils, vision  # layer 3
from ember import testing  # layer 3: torch.testing's helpers
from ember import distributions  # layer 3, over nn.functional
from ember import compiler, func, fx, jit  # layer 4: transforms (compiler: torch.compiler's)
from ember.func import vmap  # as torch.vmap
from ember.jit import compile  # noqa: A004 - as torch.compile
from ember.jit.control import cond, while_loop  # torch.cond, torch's while_loop
from ember import amp, distributed, hub, memory, profiler  # layer 5: systems
from ember import accelerator, backends, cpu, cuda, mps, version, xpu  # torch.cuda, .mps, ...
from ember import overrides, storage  # torch.overrides, torch.storage
from ember.cuda import OutOfMemoryError  # as torch.OutOfMemoryError
from ember import ao, library, masked, nested, quant
from ember.ao import quantization  # torch.quantization, the legacy name of torch.ao's
from ember.quant.functions import (
    _make_per_channel_quantized_tensor,
    _make_per_tensor_quantized_tensor,
    fused_moving_avg_obs_fake_quant,
    int_repr,
    q_per_channel_axis,
    q_per_channel_scales,
    q_per_channel_zero_points,
    q_scale,
    q_zero_point,
    quantize_per_tensor_dynamic,
    quantized_max_pool1d,
    quantized_max_pool2d,
)
from ember.quant.modules.batchnorm import quantized_batch_norm
from ember.quant.qtensor import dequantize, quantize_per_channel, quantize_per_tensor
from ember.quant.qtypes import (
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    quint4x2,
    quint8,
)
from ember.quant.qtypes import QScheme as qscheme  # torch.qscheme: the qschemes' type
from ember.amp import (
    GradScaler,
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)
from ember.io import load, save
from ember import serialization  # noqa: F401 - add_safe_globals, as torch.serialization's
from ember import tensor_sharing  # noqa: F401 - tensors sent to a process share memory
from ember.version import __version__
from ember.ops.numpy_names import add_numpy_names as _add_numpy_names
from ember.ops.out_arg import add_out_arguments as _add_out_arguments
from ember.ops.out_names import TORCH as _OUT_NAMES
# isort: on

_add_out_arguments(globals(), _OUT_NAMES)  # torch's out= keyword, on the functions that take it
_add_numpy_names(globals())  # axis= and keepdims= for dim= and keepdim=, as torch's
_add_numpy_names(Tensor)
backend.threads.apply_openblas_thread_timeout()  # (see the top of this file)

# torch's constants: ember.pi, ember.inf …, and newaxis (None) for indexing
e, pi, inf, nan, newaxis = math.e, math.pi, math.inf, math.nan, None


def __getattr__(name: str) -> object:
    """``ember.onnx``, ``ember.export``, ``ember.multiprocessing`` and ``ember._dynamo`` (as
    ``torch.onnx`` …) are imported on first use: ``onnx`` needs the optional ``onnx`` package,
    which ``import ember`` does not, and both sit on top of ``ember.jit`` and ``ember.fx``."""
    if name in ("onnx", "export", "multiprocessing", "_dynamo"):
        import importlib

        return importlib.import_module(f"ember.{name}")
    raise AttributeError(f"module 'ember' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and ``onnx``, ``export`` and ``multiprocessing`` (imported on first
    use), for tab completion."""
    return sorted({*globals(), "onnx", "export", "multiprocessing"})
