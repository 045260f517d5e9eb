"""ember.cuda, ember.accelerator and ember.backends answer as torch's do on a machine without
CUDA (the venv's torch is a CPU build), and their docstring examples run."""

import doctest
import importlib
import warnings

import pytest
import torch

import ember
import ember.nn.attention

NO_OPS = [("manual_seed", (0,)), ("manual_seed_all", (0,)), ("seed", ()), ("seed_all", ()),
          ("empty_cache", ()), ("set_rng_state_all", ([],))]
VALUES = ["is_available", "device_count", "is_initialized", "is_bf16_supported",
          "get_arch_list", "memory_allocated", "max_memory_allocated", "memory_reserved",
          "max_memory_reserved", "memory_stats", "get_rng_state_all"]
RAISING = [("synchronize", ()), ("current_device", ()), ("init", ()), ("get_device_name", ()),
           ("get_device_capability", ()), ("get_rng_state", ()), ("initial_seed", ()),
           ("mem_get_info", ())]


@pytest.mark.parametrize("name", VALUES)
def test_cuda_queries_match_torch(name):
    assert getattr(ember.cuda, name)() == getattr(torch.cuda, name)()


@pytest.mark.parametrize("name,args", NO_OPS)
def test_cuda_no_ops_match_torch(name, args):
    assert getattr(torch.cuda, name)(*args) is None
    assert getattr(ember.cuda, name)(*args) is None


@pytest.mark.parametrize("name,args", RAISING + [("reset_peak_memory_stats", ()),
                                                 ("set_device", (0,))])
def test_cuda_device_functions_raise_as_torch(name, args):
    with pytest.raises(Exception):  # noqa: B017 - torch's own types vary (Assertion/Attribute)
        getattr(torch.cuda, name)(*args)
    with pytest.raises(AssertionError, match=f"ember.cuda.{name}: Ember has no CUDA backend"):
        getattr(ember.cuda, name)(*args)
    with pytest.raises(ember.DeviceError):
        getattr(ember.cuda, name)(*args)


def test_out_of_memory_error_is_catchable_as_torch_s():
    assert issubclass(ember.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)


def test_cuda_amp_is_deprecated_and_disabled():
    with pytest.warns(FutureWarning, match="deprecated"), \
            pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = ember.cuda.amp.GradScaler()
    assert not scaler.is_enabled()
    loss = ember.ones(())
    assert scaler.scale(loss) is loss
    with pytest.warns(FutureWarning), pytest.warns(UserWarning, match="Disabling"):
        cast = ember.cuda.amp.autocast()
    with cast:
        y = ember.nn.Linear(2, 2)(ember.ones(1, 2))
    assert y.dtype is ember.float32
    with pytest.warns(FutureWarning, match="custom_fwd"):
        assert callable(ember.cuda.amp.custom_fwd(lambda ctx, x: x))


def test_accelerator_matches_torch():
    A, T = ember.accelerator, torch.accelerator
    assert A.is_available() == T.is_available()
    assert A.current_accelerator() == T.current_accelerator() is None
    assert A.device_count() == T.device_count() == 0
    for name in ("current_device_index", "synchronize", "empty_cache", "memory_allocated",
                 "max_memory_allocated", "reset_peak_memory_stats"):
        with pytest.raises(RuntimeError, match="none is available"):
            getattr(T, name)()
        with pytest.raises(RuntimeError, match=f"accelerator.{name}: Cannot access"):
            getattr(A, name)()


def test_backends_report_this_build():
    B = ember.backends
    assert (B.cudnn.is_available(), B.cudnn.version()) == (False, None)
    assert (B.mps.is_available(), B.mps.is_built(), B.mkldnn.is_available()) == (False,) * 3
    assert B.cuda.is_built() is False
    blas = ember.backend.blas_info()[0]
    assert B.mkl.is_available() == (blas["internal_api"] == "mkl")
    assert B.openmp.is_available() == (blas["threading_layer"] == "openmp")
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(B.cudnn, name) == getattr(torch.backends.cudnn, name)


def test_cudnn_flags_restore_and_stay_apart_from_deterministic_algorithms():
    cudnn = ember.backends.cudnn
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, True)
        assert not ember.are_deterministic_algorithms_enabled()  # as torch: separate flags
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, False, False)
    ember.use_deterministic_algorithms(True)
    try:
        assert cudnn.deterministic is False
    finally:
        ember.use_deterministic_algorithms(False)


def test_matmul_allow_tf32_is_float32_matmul_precision():
    matmul = ember.backends.cuda.matmul
    assert matmul.allow_tf32 is False and matmul.allow_fp16_reduced_precision_reduction
    try:
        matmul.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == "high"
        ember.set_float32_matmul_precision("highest")
        assert matmul.allow_tf32 is False
        ember.set_float32_matmul_precision("medium")
        assert matmul.allow_tf32 is True
    finally:
        ember.set_float32_matmul_precision("highest")
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf3"):
        matmul.allow_tf3 = True
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo  # noqa: B018


def test_sdp_switches_choose_attention_backends_as_torch():
    B, TB = ember.backends.cuda, torch.backends.cuda
    for kind in ("flash", "math", "mem_efficient", "cudnn"):
        assert getattr(B, f"{kind}_sdp_enabled")() == getattr(TB, f"{kind}_sdp_enabled")()
    q = ember.ones(1, 2, 4, 8)
    try:
        B.enable_flash_sdp(False)
        B.enable_math_sdp(False)
        assert not B.flash_sdp_enabled() and not B.math_sdp_enabled()
        with pytest.raises(RuntimeError, match="No viable backend"):
            ember.nn.functional.scaled_dot_product_attention(q, q, q)
        with ember.nn.attention.sdpa_kernel(ember.nn.attention.SDPBackend.MATH):
            assert B.math_sdp_enabled() and not B.flash_sdp_enabled()
            ember.nn.functional.scaled_dot_product_attention(q, q, q)
        assert not B.math_sdp_enabled()  # the block restored the switches
    finally:
        B.enable_flash_sdp(True)
        B.enable_math_sdp(True)
    assert ember.ops.attention_backends.allowed_backends()[0] == \
        ember.ops.attention_backends._EVERY  # (back in the default order)
    ember.nn.functional.scaled_dot_product_attention(q, q, q)


@pytest.mark.parametrize("module", ["cuda", "cuda.amp", "accelerator", "backends",
                                    "backends.cudnn", "backends.cuda", "backends.mkl",
                                    "backends.openmp", "backends.mkldnn", "backends.mps",
                                    "backends.quantized", "compiler", "cpu", "cpu.amp",
                                    "version"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"ember.{module}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(mod, extraglobs={"ember": ember},
                                 optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("kind", ["flash", "math", "mem_efficient", "cudnn"])
def test_sdp_switches_take_only_a_bool_as_torch(kind):
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="bool"):
            getattr(lib.backends.cuda, f"enable_{kind}_sdp")(0)
    assert getattr(ember.backends.cuda, f"{kind}_sdp_enabled")()
