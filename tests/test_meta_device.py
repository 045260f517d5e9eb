"""The meta device: tensors with a shape, a dtype and strides but no data, checked against
torch's meta tensors (shapes, dtypes, strides, which ops work and which refuse)."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.errors import DeviceError, OpError


def meta(*shape, dtype=None):
    return ember.empty(*shape, dtype=dtype, device="meta")


def tmeta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def same_spec(e, t):
    assert e.is_meta and e.device.type == "meta" and t.is_meta
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).removeprefix("torch.")
    assert e.stride() == t.stride(), (e.stride(), t.stride())


# -- the device and the factories ------------------------------------------------------------
def test_device_is_a_singleton_with_torch_names():
    d = ember.device("meta")
    assert d is ember.device("meta") and d.type == "meta" and d.is_meta
    assert repr(d) == "device(type='meta')" and str(d) == "meta"
    assert not ember.device("cpu").is_meta


@pytest.mark.parametrize("make", [
    lambda m, dev: m.empty(3, 4, device=dev),
    lambda m, dev: m.zeros(2, 3, 5, device=dev),
    lambda m, dev: m.ones(2, dtype=m.float64, device=dev),
    lambda m, dev: m.randn(4, 2, device=dev),
    lambda m, dev: m.rand(4, 2, device=dev),
    lambda m, dev: m.full((2, 3), 7, device=dev),
    lambda m, dev: m.full((2,), 1.5, device=dev),
    lambda m, dev: m.arange(5, device=dev),
    lambda m, dev: m.arange(0, 1, 0.3, device=dev),
    lambda m, dev: m.linspace(0, 1, 5, device=dev),
    lambda m, dev: m.eye(3, 4, device=dev),
    lambda m, dev: m.randint(0, 5, (3,), device=dev),
    lambda m, dev: m.tensor([[1.0, 2.0]], device=dev),
    lambda m, dev: m.empty(1, 3, 2, 2, memory_format=m.channels_last, device=dev),
    lambda m, dev: m.empty_like(m.ones(2, 3), device=dev),
    lambda m, dev: m.zeros_like(m.empty(2, 3, device=dev)),
    lambda m, dev: m.ones(3).to(dev),
    lambda m, dev: m.ones(3).to(dev, m.float64),
], ids=["empty", "zeros", "ones", "randn", "rand", "full_int", "full_float", "arange",
        "arange_float", "linspace", "eye", "randint", "tensor", "channels_last", "empty_like",
        "zeros_like", "to", "to_dtype"])
def test_factories_match_torch(make):
    same_spec(make(ember, "meta"), make(torch, "meta"))


def test_repr_matches_torch():
    assert repr(meta(3, 4)) == repr(tmeta(3, 4))
    assert repr(meta(())) == repr(tmeta(()))
    assert repr(ember.ones(2, dtype=ember.int64, device="meta")) == \
        repr(torch.ones(2, dtype=torch.int64, device="meta")).replace("torch", "ember")
    assert repr(ember.ones(2, device="meta", requires_grad=True)) == \
        "tensor(..., device='meta', size=(2,), requires_grad=True)"


def test_device_context_and_default_device():
    with ember.device("meta"):
        assert ember.zeros(2).is_meta and ember.tensor([1, 2]).is_meta
        with ember.device("cpu"):
            assert not ember.zeros(2).is_meta
        assert ember.randn(2).is_meta
    assert not ember.zeros(2).is_meta
    ember.set_default_device("meta")
    try:
        assert ember.ones(3).is_meta and ember.get_default_device() is ember.device("meta")
    finally:
        ember.set_default_device("cpu")
    assert not ember.ones(3).is_meta


def test_a_huge_tensor_takes_no_memory():
    x = ember.empty(1 << 20, 1 << 20, device="meta")  # 4 TiB of float32 on the CPU
    assert x.numel() == 1 << 40 and x.nbytes == 4 << 40
    assert tuple((x @ x.t()).sum(0).shape) == (1 << 20,)


# -- ops: outputs as torch's -----------------------------------------------------------------
OPS = {
    "mul": lambda m, x: x * 2 + x,
    "matmul": lambda m, x: x @ x.transpose(0, 1),
    "sum": lambda m, x: x.sum(1),
    "mean_keepdim": lambda m, x: x.mean(0, keepdim=True),
    "max": lambda m, x: x.max(1).values,
    "argmax": lambda m, x: x.argmax(1),
    "compare": lambda m, x: x > 0,
    "cast": lambda m, x: x.to(m.int32),
    "softmax": lambda m, x: m.softmax(x, -1),
    "cat": lambda m, x: m.cat([x, x], 1),
    "stack": lambda m, x: m.stack([x, x]),
    "where": lambda m, x: m.where(x > 0, x, 0.0),
    "index": lambda m, x: x[m.tensor([0, 2], device="meta")],
    "index_cpu": lambda m, x: x[m.tensor([0, 2])],
    "gather": lambda m, x: x.gather(1, m.zeros(3, 2, dtype=m.int64, device="meta")),
    "cpu_scalar": lambda m, x: x + m.tensor(2.0),
    "topk": lambda m, x: x.topk(2).indices,
    "cumsum": lambda m, x: x.cumsum(0),
    "layer_norm": lambda m, x: F.layer_norm(x, (4,)) if m is ember else
    torch.nn.functional.layer_norm(x, (4,)),
}


@pytest.mark.parametrize("name", OPS)
def test_ops_match_torch(name):
    e, t = OPS[name](ember, meta(3, 4)), OPS[name](torch, tmeta(3, 4))
    assert tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]
    assert e.is_meta


VIEWS = {
    "t": lambda x: x.t(),
    "t_reshape": lambda x: x.t().reshape(-1),
    "reshape": lambda x: x.reshape(2, 6),
    "view": lambda x: x.view(4, 3),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "expand": lambda x: x.expand(2, 3, 4),
    "slice": lambda x: x[:, 1:3],
    "step": lambda x: x[::2, ::3],
    "select": lambda x: x[1],
    "permute": lambda x: x.permute(1, 0),
    "diagonal": lambda x: x.diagonal(),
    "unfold": lambda x: x.unfold(1, 2, 1),
    "contiguous": lambda x: x.t().contiguous(),
    "flatten_t": lambda x: x.t().flatten(),
    "chunk": lambda x: x.chunk(2, 1)[1],
}


@pytest.mark.parametrize("name", VIEWS)
def test_views_have_torchs_strides(name):
    same_spec(VIEWS[name](meta(3, 4)), VIEWS[name](tmeta(3, 4)))


def test_nn_functional_shapes_match_torch():
    x, w = meta(2, 3, 8, 8), meta(4, 3, 3, 3)
    same_spec(F.conv2d(x, w, padding=1, stride=2), torch.nn.functional.conv2d(
        tmeta(2, 3, 8, 8), tmeta(4, 3, 3, 3), padding=1, stride=2))
    assert tuple(F.max_pool2d(x, 2).shape) == (2, 3, 4, 4)
    assert tuple(F.interpolate(x, scale_factor=2).shape) == (2, 3, 16, 16)
    q = meta(2, 2, 5, 8)
    assert tuple(F.scaled_dot_product_attention(q, q, q, is_causal=True).shape) == (2, 2, 5, 8)
    loss = F.cross_entropy(meta(3, 5), ember.zeros(3, dtype=ember.int64, device="meta"))
    assert loss.is_meta and loss.shape == ()


def test_in_place_ops_keep_the_tensor():
    x = meta(3, 4)
    assert x.add_(1) is x and x.mul_(meta(4)) is x and x.zero_() is x
    assert x.copy_(ember.ones(3, 4)) is x and x.fill_(2.0) is x and x.is_meta
    x[1:, 0] = 5.0
    x[:, 1] = meta(3)
    assert x._version == 7 and x.is_meta
    with pytest.raises(ember.ShapeError):
        x.add_(meta(2, 3, 4))


def test_bad_shapes_raise_the_ops_own_error():
    with pytest.raises(ember.ShapeError, match="matmul"):
        meta(3, 4) @ meta(5, 6)


# -- data access and devices refuse clearly --------------------------------------------------
@pytest.mark.parametrize("read, what", [
    (lambda x: x.sum().item(), r"item\(\)"), (lambda x: x.tolist(), r"tolist\(\)"),
    (lambda x: x.numpy(), r"numpy\(\)"), (lambda x: bool(x[0, 0]), r"bool\(\)"),
    (lambda x: float(x[0, 0]), r"item\(\)"), (lambda x: np.asarray(x), "NumPy conversion"),
    (lambda x: x.to("cpu"), "cannot copy out of a meta tensor"),
    (lambda x: x.cpu(), "cannot copy out of a meta tensor"),
    (lambda x: ember.ones(3, 4).copy_(x), "cannot copy out of a meta tensor"),
    (lambda x: x[x > 0], "nonzero"),
])
def test_reading_values_raises(read, what):
    with pytest.raises(DeviceError, match=what) as info:
        read(meta(3, 4))
    assert "meta" in str(info.value)


def test_a_meta_tensors_missing_values_are_a_not_implemented_error_as_torch():
    # (code written for torch catches "Cannot copy out of meta tensor; no data!" this way)
    for lib in (ember, torch):
        x = lib.empty(2, device="meta")
        for read in (x.tolist, x.cpu):
            with pytest.raises(NotImplementedError):
                read()


def test_torch_refuses_the_same_reads():
    x = tmeta(3, 4)
    for read in (lambda: x.sum().item(), lambda: x.tolist(), lambda: x.numpy(),
                 lambda: x.to("cpu"), lambda: x[x > 0]):
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            read()


def test_data_dependent_ops_raise():
    with pytest.raises(OpError, match="nonzero: the output size depends on the data"):
        meta(3, 4).nonzero()
    with pytest.raises(OpError, match="unique"):
        meta(3).unique()


def test_mixing_devices_as_torch():
    with pytest.raises(DeviceError, match="add: expected all tensors on one device"):
        meta(3, 4) + ember.ones(3, 4)
    with pytest.raises(RuntimeError):
        tmeta(3, 4) + torch.ones(3, 4)
    with pytest.raises(DeviceError, match="where"):  # (torch refuses a 1-d cpu condition too)
        ember.where(ember.ones(4, dtype=ember.bool), meta(4), 0.0)
    assert (ember.tensor(2.0) * meta(3)).is_meta  # a 0-d cpu tensor meets any device


def test_storage_access_and_compiled_functions_take_cpu_tensors_only():
    with pytest.raises(DeviceError, match="CPU only"):
        meta(3, 4).storage_offset()
    with pytest.raises(DeviceError, match="meta tensors have no data"):
        ember.compile(lambda x: x * 2)(meta(3))


@pytest.mark.parametrize("pool", ["avg_pool1d", "avg_pool2d", "avg_pool3d"])
def test_average_pools_run_on_meta(pool):
    shape = (2, 3) + (9,) * int(pool[-2])
    e = getattr(F, pool)(meta(*shape), 3, 2, padding=1, count_include_pad=False)
    t = getattr(torch.nn.functional, pool)(tmeta(*shape), 3, 2, padding=1,
                                           count_include_pad=False)
    same_spec(e, t)


@pytest.mark.parametrize("make", [
    lambda m: m.empty_strided((2, 3), (1, 2), device="meta"),
    lambda m: m.empty_strided((2, 3), (0, 1), dtype=m.float64, device="meta"),
    lambda m: m.empty_permuted((2, 3, 4), (2, 0, 1), device="meta"),
    lambda m: m.tril_indices(4, 3, -1, device="meta"),
    lambda m: m.triu_indices(3, 5, 1, dtype=m.int32, device="meta"),
], ids=["empty_strided", "broadcast_strides", "empty_permuted", "tril_indices",
        "triu_indices"])
def test_strided_and_index_factories_match_torch(make):
    same_spec(make(ember), make(torch))


def test_writing_a_meta_tensor_into_a_cpu_one_raises_clearly():
    for write in (lambda x, m: x.__setitem__(..., m), lambda x, m: x.__setitem__(0, m[0]),
                  lambda x, m: x.copy_(m)):
        with pytest.raises(DeviceError, match="cannot copy out of a meta tensor"):
            write(ember.ones(3), meta(3))


LAYOUTS = {  # elementwise results take their inputs' layout, as in PyTorch
    "unary_t": lambda m: m.empty(3, 4, device="meta").t().exp(),
    "scalar_t": lambda m: m.empty(3, 4, device="meta").t() * 2,
    "t_plus_contiguous": lambda m: m.empty(3, 4, device="meta").t() + m.empty(4, 3,
                                                                            device="meta"),
    "broadcast_t": lambda m: m.empty(3, 4, device="meta").t() + m.empty(3, device="meta"),
    "permuted_4d": lambda m: m.empty(2, 3, 4, 5, device="meta").permute(0, 2, 3, 1).sigmoid(),
    "channels_last": lambda m: m.relu(m.empty(2, 3, 4, 5, device="meta").contiguous(
        memory_format=m.channels_last)),
    "cast_t": lambda m: m.empty(3, 4, device="meta").t().double(),
    "clone_t": lambda m: m.empty(3, 4, device="meta").t().clone(),
    "contiguous_t": lambda m: m.empty(3, 4, device="meta").t().contiguous(),
    "compare_t": lambda m: m.empty(3, 4, device="meta").t() > 0,
    "where_t": lambda m: m.where(m.empty(4, 3, device="meta", dtype=m.bool),
                                 m.empty(3, 4, device="meta").t(), 0.0),
    "expanded": lambda m: m.empty(3, 1, device="meta").expand(3, 4).neg(),
    "softmax_t": lambda m: m.softmax(m.empty(3, 4, device="meta").t(), -1),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_elementwise_results_have_torchs_strides(name):
    same_spec(LAYOUTS[name](ember), LAYOUTS[name](torch))


def test_a_cpu_mask_indexes_a_meta_tensor_as_in_torch():
    mask = [[True, False, True, False]] * 3
    e = meta(3, 4)[ember.tensor(mask)]
    same_spec(e, tmeta(3, 4)[torch.tensor(mask)])
    with pytest.raises(DeviceError, match="nonzero: meta tensors have no data"):
        meta(3, 4)[meta(3, 4, dtype=ember.bool)]


def test_device_block_is_thread_local_as_torchs():
    import threading

    for lib in (ember, torch):
        seen, entered, looked = {}, threading.Event(), threading.Event()

        def other_thread(lib=lib, seen=seen, entered=entered, looked=looked):
            entered.wait()
            seen["device"] = lib.empty(1).device.type
            looked.set()

        thread = threading.Thread(target=other_thread)
        thread.start()
        with lib.device("meta"):
            entered.set()
            looked.wait(10)
        thread.join()
        assert seen == {"device": "cpu"}, lib.__name__


# -- saving, pickling and copying: the layout travels, as torch's meta tensors' does ----------
def _round_trips(lib, x):
    import copy
    import io
    import pickle

    buf = io.BytesIO()
    lib.save(x, buf)
    buf.seek(0)
    return [lib.load(buf, map_location="cpu"), pickle.loads(pickle.dumps(x)), copy.deepcopy(x)]


@pytest.mark.parametrize("make", [
    lambda m: m.empty(3, 4, device="meta"),
    lambda m: m.empty(3, 4, device="meta", dtype=m.int64).t(),
    lambda m: m.empty(2, 3, 4, 5, device="meta").contiguous(memory_format=m.channels_last),
    lambda m: m.empty(3, 4, device="meta", dtype=m.bfloat16).requires_grad_(),
    lambda m: m.nn.Parameter(m.empty(3, device="meta")),
])
def test_save_pickle_and_deepcopy_keep_meta_as_torch(make):
    pairs = zip(_round_trips(ember, make(ember)),
                _round_trips(torch, make(torch)), strict=True)
    for i, (got, want) in enumerate(pairs):
        same_spec(got, want)
        assert got.requires_grad == want.requires_grad
        if i:  # (ember.save keeps data, not classes: a Parameter loads as a tensor, on CPU too)
            assert isinstance(got, ember.nn.Parameter) == isinstance(want, torch.nn.Parameter)


def test_a_meta_modules_state_dict_saves_and_loads_with_assign(tmp_path):
    with ember.device("meta"):
        model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    ember.save(model.state_dict(), tmp_path / "meta.safetensors")
    assert (tmp_path / "meta.safetensors").stat().st_size < 4096  # (no data written)
    loaded = ember.load(tmp_path / "meta.safetensors")
    assert {k: (v.device.type, tuple(v.shape), v.dtype) for k, v in loaded.items()} == \
        {k: ("meta", tuple(v.shape), v.dtype) for k, v in model.state_dict().items()}
    fresh = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    fresh.load_state_dict(loaded, assign=True)  # the meta tensors become the parameters
    assert fresh[0].weight.is_meta and isinstance(fresh[0].weight, ember.nn.Parameter)
    assert fresh[0].weight.requires_grad and not fresh[1].running_mean.requires_grad
    import copy

    twin = copy.deepcopy(model)
    assert twin[0].weight.is_meta and twin[0].weight is not model[0].weight


def test_a_malformed_meta_entry_is_a_checkpoint_error(tmp_path):
    import json

    from ember.io import checkpoint

    doc = json.dumps({"format": checkpoint.FORMAT, "version": 1,
                      "tree": {"$meta": "float32", "size": [2], "stride": "x"}})
    checkpoint.write_arrays(tmp_path / "bad.safetensors", {}, {checkpoint.TREE_KEY: doc})
    with pytest.raises(ember.errors.CheckpointError, match="malformed meta tensor"):
        ember.load(tmp_path / "bad.safetensors")


OPTIMIZERS = [("SGD", dict(lr=0.1, momentum=0.9)), ("SGD", dict(lr=0.1)), ("Adam", {}),
              ("AdamW", {}), ("Adagrad", {}), ("Adadelta", {}), ("Adamax", {}), ("RAdam", {}),
              ("RMSprop", dict(momentum=0.9)), ("Rprop", {})]


def _state(lib, name, kw):
    p = lib.nn.Parameter(lib.empty(3, 2, device="meta"))
    opt = getattr(lib.optim, name)([p], **kw)
    for _ in range(2):
        p.grad = lib.empty(3, 2, device="meta")
        opt.step()
    return {k: (v.device.type, tuple(v.shape), str(v.dtype).split(".")[-1],
                float(v) if v.device.type == "cpu" else None) for k, v in opt.state[p].items()}


@pytest.mark.parametrize("name,kw", OPTIMIZERS)
def test_optimizer_steps_make_torchs_meta_state(name, kw):
    """step() on meta parameters makes the state torch's makes (meta tensors, and step
    counts on the CPU that count)."""
    assert _state(ember, name, kw) == _state(torch, name, kw)
