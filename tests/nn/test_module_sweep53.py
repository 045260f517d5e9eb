"""Module API and nn.utils corners found by the session-53 sweep, each checked against torch."""

import pytest
import torch

import ember
from tests.test_tensor import TO_CASES, to_outcome


@pytest.mark.parametrize("assign", [False, True])
def test_load_state_dict_takes_a_one_element_entry_into_a_0d_one(assign):
    def scenario(lib):
        m = lib.nn.Module()
        m.register_buffer("s", lib.tensor(1.0))
        m.register_parameter("p", lib.nn.Parameter(lib.tensor(2.0)))
        m.load_state_dict({"s": lib.tensor([5.0]), "p": lib.tensor([6.0])}, assign=assign)
        return m.s.shape == (), float(m.s), m.p.shape == (), float(m.p), m.p.requires_grad

    assert scenario(ember) == scenario(torch) == (True, 5.0, True, 6.0, True)


def test_load_state_dict_still_refuses_other_shapes_into_0d_and_0d_into_1d():
    for lib in (ember, torch):
        m = lib.nn.Module()
        m.register_buffer("s", lib.tensor(1.0))
        m.register_buffer("t", lib.tensor([1.0]))
        with pytest.raises(RuntimeError, match="size mismatch for s"):
            m.load_state_dict({"s": lib.tensor([5.0, 6.0]), "t": lib.tensor([1.0])})
        with pytest.raises(RuntimeError, match="size mismatch for t"):
            m.load_state_dict({"s": lib.tensor(5.0), "t": lib.tensor(1.0)})


@pytest.mark.parametrize("args", [("cpu", "float64", False), ("float64", True), ("tensor64", True)])
def test_module_to_takes_non_blocking_positionally(args):
    def scenario(lib):
        names = {"float64": lib.float64, "tensor64": lib.zeros(1, dtype=lib.float64)}
        m = lib.nn.Linear(1, 1).to(*[names.get(a, a) if isinstance(a, str) else a for a in args])
        return str(m.weight.dtype).split(".")[-1], str(m.bias.device)

    assert scenario(ember) == scenario(torch) == ("float64", "cpu")


@pytest.mark.parametrize("call", [("cuda", 0), ("xpu",), ("mtia", 1), ("ipu",), ("to", "mps"),
                                  ("to", "xpu:0")])
def test_module_moves_to_a_device_without_a_backend_raise_a_device_error(call):
    # torch without these backends raises AssertionError or RuntimeError; Ember's
    # DeviceUnavailableError is both (module.cuda(0) read 0 as a dtype; to('mps') read 'mps'
    # as a dtype name; xpu/mtia/ipu were missing)
    name, *args = call
    m = ember.nn.Linear(1, 1)
    with pytest.raises(ember.errors.DeviceError, match="no (cuda|xpu|mtia|ipu|mps) backend"):
        getattr(m, name)(*args)
    with pytest.raises((AssertionError, RuntimeError)):
        getattr(torch.nn.Linear(1, 1), name)(*args)
    assert m.weight.device.type == "cpu"


def test_call_super_init_passes_the_arguments_to_a_mixin():
    def scenario(lib):
        class Mixin:
            def __init__(self, tag):
                self.tag = tag

        class M(lib.nn.Module, Mixin):
            call_super_init = True

        m = M(tag="x")
        with pytest.raises(TypeError):
            lib.nn.Module(1)
        return m.tag, m.training, lib.nn.Module.call_super_init, lib.nn.Module.dump_patches

    assert scenario(ember) == scenario(torch) == ("x", True, False, False)


@pytest.mark.parametrize("method", ["half", "float", "double", "bfloat16"])
def test_module_float_casts_keep_complex_parameters_complex(method):
    def scenario(lib):  # (Ember dropped the imaginary parts: complex -> the float dtype)
        m = lib.nn.Module()
        m.c = lib.nn.Parameter(lib.tensor([1 + 2j, 3j]))
        m.f = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        m.register_buffer("i", lib.tensor([1, 2]))
        m.f.grad = lib.ones(2, dtype=lib.float64)
        getattr(m, method)()
        names = [str(t.dtype).split(".")[-1] for t in (m.c, m.f, m.f.grad, m.i)]
        return names, m.c.detach().tolist(), type(m.c).__name__

    assert scenario(ember) == scenario(torch)


@pytest.mark.parametrize("args", [(True,), ("float64", "float32"), ("cpu", "cpu"),
                                  ("tensor64", "cpu"), (True, "cpu"), ("cpu", "float64", 1),
                                  ("float64", True, True), ("cpu", "float64", True, False)])
def test_module_to_refuses_what_torch_refuses(args):
    # a bool is non_blocking only right after the target, and no argument comes after it;
    # to(True) was a silent no-op (every positional bool skipped), and a second dtype or
    # device replaced the first
    def call(lib):
        names = {"float64": lib.float64, "float32": lib.float32,
                 "tensor64": lib.zeros(1, dtype=lib.float64)}
        m = lib.nn.Linear(1, 1)
        with pytest.raises((TypeError, RuntimeError)) as info:
            m.to(*[names.get(a, a) if isinstance(a, str) else a for a in args])
        assert m.weight.dtype == lib.float32
        return info.value

    call(torch)
    assert isinstance(call(ember), TypeError)


@pytest.mark.parametrize("device", [True, "cpu", ember.device("cpu")])
def test_module_cuda_refuses_a_bool_and_another_device_as_torch(device):
    m = ember.nn.Linear(1, 1)
    with pytest.raises((TypeError, RuntimeError), match="must be a cuda device|not bool"):
        m.cuda(device)  # (cuda(True) was a silent no-op, cuda('cpu') moved to the CPU)
    with pytest.raises((TypeError, RuntimeError)):
        torch.nn.Linear(1, 1).cuda(torch.device("cpu") if not isinstance(device, bool)
                                   else device)
    assert m.weight.device.type == "cpu"


@pytest.mark.parametrize("args,kwargs", TO_CASES)
def test_module_to_parses_its_arguments_with_tensor_to_s_parser_as_torch(args, kwargs):
    def call(lib, a, k):
        return lib.nn.Linear(2, 2).to(*a, **k).weight.dtype

    want, got = to_outcome(torch, call, args, kwargs), to_outcome(ember, call, args, kwargs)
    assert got == want if isinstance(want, str) else issubclass(got, want), (want, got)


def test_module_to_reads_a_bool_after_the_device_as_non_blocking():
    # (a leniency: PyTorch raises, the bool in the dtype's place)
    assert ember.nn.Linear(2, 2).to("cpu", True).weight.dtype is ember.float32
    with pytest.raises(TypeError):
        ember.nn.Linear(2, 2).to(None, True)
