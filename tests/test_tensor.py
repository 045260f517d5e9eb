"""Making tensors and the Tensor's properties, conversions and Python protocol."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("data", [[1, 2, 3], [1.5, 2.0], [True, False], 3, 2.5, [[1, 2], [3, 4]],
                                  np.arange(3, dtype=np.float64), np.arange(4, dtype=np.int32)],
                         ids=str)
def test_tensor_infers_dtype_like_torch(data):
    mine, ref = ember.tensor(data), torch.tensor(data)
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    assert mine.shape == tuple(ref.shape)
    np.testing.assert_array_equal(mine.numpy(), ref.numpy())


def test_creation_functions_match_torch():
    pairs = [
        (ember.zeros(2, 3), torch.zeros(2, 3)),
        (ember.ones((2, 3), dtype=ember.int64), torch.ones((2, 3), dtype=torch.int64)),
        (ember.full((2,), 7), torch.full((2,), 7)),
        (ember.full((2,), 7.5), torch.full((2,), 7.5)),
        (ember.arange(5), torch.arange(5)),
        (ember.arange(1, 2.5, 0.5), torch.arange(1, 2.5, 0.5)),
        (ember.arange(10, 0, -3), torch.arange(10, 0, -3)),
        (ember.linspace(0, 1, 5), torch.linspace(0, 1, 5)),
        (ember.eye(3, 2), torch.eye(3, 2)),
        (ember.zeros_like(ember.ones(2, dtype=ember.int32)),
         torch.zeros_like(torch.ones(2, dtype=torch.int32))),
        (ember.full_like(ember.ones(2), 3), torch.full_like(torch.ones(2), 3)),
    ]
    for mine, ref in pairs:
        assert mine.dtype.name == str(ref.dtype).removeprefix("torch."), ref
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-6)
    assert ember.empty(2, 3).shape == (2, 3) and ember.empty_like(ember.ones(4)).shape == (4,)


def test_from_numpy_shares_memory_and_as_tensor_avoids_copies():
    a = np.zeros(3)
    t = ember.from_numpy(a)
    a[0] = 5
    assert t[0].item() == 5 if hasattr(ember.Tensor, "__getitem__") else t.numpy()[0] == 5
    assert ember.as_tensor(a).numpy() is a or np.shares_memory(ember.as_tensor(a).numpy(), a)
    assert not np.shares_memory(ember.tensor(a).numpy(), a)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        ember.from_numpy([1, 2])


def test_properties_and_conversions():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.shape == (2, 2) and x.size() == (2, 2) and x.size(-1) == 2
    assert x.dim() == 2 and x.ndim == 2 and x.numel() == 4 and len(x) == 2
    assert x.dtype is ember.float32 and x.device == ember.device("cpu")
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.to(ember.float64).dtype is ember.float64 and x.double().dtype is ember.float64
    assert x.long().dtype is ember.int64 and x.half().dtype is ember.float16
    assert x.bfloat16().dtype is ember.bfloat16 and x.bool().dtype is ember.bool_
    assert x.to("cpu") is x and x.to(ember.ones(1, dtype=ember.int32)).dtype is ember.int32
    # torch's flags: non_blocking (a CPU copy is synchronous), then copy, also positionally
    assert x.to("cpu", non_blocking=True) is x and x.to(ember.float32, True) is x
    assert x.to("cpu", ember.float32, False, True) is not x
    with pytest.raises(TypeError, match="too many positional arguments"):
        x.to(ember.float32, True, True, True)
    # a flag before the target, or a target after a flag, is refused (it returned a float32
    # copy; torch reads to(True) as dtype bool and refuses to(True, 'cpu'))
    for args in [(True,), (True, "cpu"), (ember.float64, False, "cpu")]:
        with pytest.raises(TypeError, match="positional flag|copy must be a bool"):
            x.to(*args)
    with pytest.raises(TypeError, match="non_blocking must be a bool"):  # torch: invalid
        x.to(ember.float64, ember.float32)
    with pytest.raises(TypeError, match="dtype must be a dtype"):
        x.to("cpu", "cpu")
    assert x.stride() == (2, 1) and x.is_contiguous() and x.element_size() == 4
    one = ember.tensor([2.5])
    assert one.item() == 2.5 and float(one) == 2.5 and bool(one)
    assert int(ember.tensor(3)) == 3
    with pytest.raises(ValueError, match="4 elements"):
        x.item()
    with pytest.raises(RuntimeError, match="0 elements"):  # torch's item() error class
        ember.zeros(0).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)


def test_clone_detach_contiguous_and_requires_grad():
    x = ember.ones(3, requires_grad=True)
    c = x.clone()
    assert c.requires_grad and not np.shares_memory(c.detach().numpy(), x.detach().numpy())
    d = x.detach()
    assert not d.requires_grad and np.shares_memory(d.numpy(), x.detach().numpy())
    y = ember.zeros(2).requires_grad_()
    assert y.requires_grad and y.is_leaf
    with pytest.raises(ember.errors.GradError, match="detach"):
        x.numpy()


@pytest.mark.parametrize("lib", [ember, torch])
def test_numpy_of_a_tensor_requiring_grad_is_read_under_no_grad_only(lib):
    w = lib.ones(2, requires_grad=True)
    with lib.no_grad():
        assert w.numpy().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="detach"):
        w.numpy()


@pytest.mark.parametrize("spec", ["", ".2f", ">8", "e"])
def test_format_of_a_0d_tensor_is_its_numbers_as_torch(spec):
    for values in (0.5, 3, [1.5]):
        e, t = ember.tensor(values), torch.tensor(values)
        if spec and not isinstance(values, float):
            continue  # (an int takes no .2f; a 1-d tensor takes no spec: TypeError in both)
        assert format(e, spec) == format(t, spec)
    loss = ember.tensor(0.25, requires_grad=True) * 2
    assert f"{loss:.3f}" == "0.500"


def test_bfloat16_storage():
    x = ember.tensor([1.0, 2.5], dtype=ember.bfloat16)
    assert x.dtype is ember.bfloat16 and x.element_size() == 2
    assert x.tolist() == [1.0, 2.5] and (x * 2).dtype is ember.bfloat16


def test_repr_looks_like_torch():
    assert repr(ember.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ember.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(ember.tensor([1.0], dtype=ember.float64)) == "tensor([1.], dtype=ember.float64)"
    assert repr(ember.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(ember.tensor(3.5)) == "tensor(3.5000)"


def test_iteration_and_reflected_operators():
    x = ember.tensor([1.0, 2.0])
    assert [t.item() for t in x] == [1.0, 2.0] if hasattr(ember.Tensor, "__getitem__") else True
    np.testing.assert_allclose((1 - x).numpy(), [0.0, -1.0])
    np.testing.assert_allclose((2 / x).numpy(), [2.0, 1.0])
    np.testing.assert_allclose((-x).numpy(), [-1.0, -2.0])


def test_pickling_copies_data_and_parameters_like_torch():
    import pickle

    for lib in (torch, ember):  # strides kept (a slice, channels-last), as torch's
        view = lib.arange(6.0).reshape(2, 3)[:, 1]
        back = pickle.loads(pickle.dumps(view))
        assert back.tolist() == [1.0, 4.0] and back.stride() == (3,)
        cl = lib.arange(24.0).reshape(1, 2, 3, 4).contiguous(memory_format=lib.channels_last)
        back = pickle.loads(pickle.dumps([cl, cl.t() if cl.ndim == 2 else cl[:, :, ::2]]))
        assert back[0].stride() == (24, 1, 8, 2) and back[1].stride() == (24, 1, 16, 2)
        assert back[1].tolist() == cl[:, :, ::2].tolist()
    w = ember.nn.Parameter(ember.ones(2, dtype=ember.bfloat16))
    w2 = pickle.loads(pickle.dumps(w))
    assert type(w2) is ember.nn.Parameter and w2.requires_grad and w2.dtype is ember.bfloat16
    for lib in (torch, ember):
        copied = pickle.loads(pickle.dumps(lib.ones(2, requires_grad=True) * 2))
        assert copied.tolist() == [2.0, 2.0] and copied.requires_grad and copied.is_leaf


class _Tagged(ember.Tensor):
    pass


class _TorchTagged(torch.Tensor):
    pass


class _Slotted(ember.Tensor):
    __slots__ = ("meta", "unset")


class _TorchSlotted(torch.Tensor):
    __slots__ = ("meta", "unset")


def test_copy_shares_memory_and_keeps_strides_like_torch():
    import copy

    for lib in (torch, ember):
        x = lib.arange(6.0).reshape(2, 3).t().requires_grad_()
        y = copy.copy(x)
        assert y is not x and y.stride() == (1, 3) and y.requires_grad and y.is_leaf
        with lib.no_grad():
            y[0, 0] = 7.0
        assert x[0, 0].item() == 7.0  # the same memory, as torch's shallow copy
        assert copy.copy(x * 2).is_leaf


def test_copy_shares_the_version_counter_so_backward_sees_writes_through_it():
    # Deliberately unlike torch (whose copy gets its own counter: the write below goes
    # unnoticed there and x.grad is cos(2), not cos(1)): the copy is the same memory.
    import copy

    x = ember.ones(3, requires_grad=True)
    b = x * 1
    y = b.sin()
    c = copy.copy(b.detach())
    c.add_(1)
    assert b._version == c._version == 1
    with pytest.raises(ember.GradError, match="sin .*modified in place.*version 0 .*version 1"):
        y.sum().backward()


def test_copies_and_pickles_keep_a_subclass_and_its_attributes():
    import copy
    import pickle

    for lib, cls in ((torch, _TorchTagged), (ember, _Tagged)):
        t = lib.ones(2, 3).as_subclass(cls)
        t.note = ["a"]
        for made in (copy.copy(t), pickle.loads(pickle.dumps(t))):
            assert type(made) is cls and made.note == ["a"] and made.tolist() == t.tolist()
    for lib, cls in ((torch, _TorchSlotted), (ember, _Slotted)):  # (slots: copyreg's names)
        t = lib.ones(2).as_subclass(cls)
        t.meta = {"k": 1}
        for made in (copy.copy(t), pickle.loads(pickle.dumps(t))):
            assert type(made) is cls and made.meta == {"k": 1} and not hasattr(made, "unset")
    t = ember.ones(2).as_subclass(_Tagged)  # (torch's deepcopy refuses such a subclass)
    t.note = ["a"]
    kept = copy.deepcopy(t)
    assert type(kept) is _Tagged and kept.note == ["a"] and kept.note is not t.note


def test_plain_tensors_and_parameters_take_attributes_as_torch():
    # (PyTorch code tags tensors and parameters: ``p._is_hf_initialized = True``)
    import copy
    import pickle

    def kept(lib):
        t = lib.ones(2)
        t.tag = "a"
        p = lib.nn.Parameter(lib.ones(2))
        p.flag = 1
        m = lib.nn.Linear(2, 2)
        m.weight.flag = 2
        m.double()
        return [t.tag, t.__dict__, hasattr(t.detach(), "tag"), hasattr(t + 1, "tag"),
                hasattr(t[0:], "tag"), hasattr(t.clone(), "tag"), copy.copy(t).tag,
                copy.deepcopy(t).tag, pickle.loads(pickle.dumps(t)).tag,
                pickle.loads(pickle.dumps(p)).flag, hasattr(copy.deepcopy(p), "flag"),
                hasattr(lib.nn.Parameter(t), "tag"), m.weight.flag]

    assert kept(ember) == kept(torch)


def test_deepcopy_copies_leaves_like_torch():
    import copy

    for lib in (ember, torch):
        w = lib.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        state = {"w": w, "same": w, "plain": lib.arange(3)}
        kept = copy.deepcopy(state)
        with lib.no_grad():
            w.mul_(5)
        assert kept["w"] is kept["same"] and kept["w"].requires_grad
        assert kept["w"].tolist() == [1.0] * 3 and kept["w"].grad.tolist() == [2.0] * 3
        assert kept["plain"].tolist() == [0, 1, 2] and not kept["plain"].requires_grad
    with pytest.raises(ember.errors.GradError, match="only a leaf tensor.*detach"):
        copy.deepcopy(ember.ones(2, requires_grad=True) * 2)


def test_repr_of_empty_tensors_names_their_dtype_like_torch():
    for make in (lambda m: m.arange(0, 0), lambda m: m.zeros(0, dtype=m.bool),
                 lambda m: m.zeros(0), lambda m: m.zeros(2, 0, dtype=m.int64)):
        assert repr(make(ember)) == repr(make(torch)).replace("torch.", "ember.")


@pytest.mark.parametrize("sci_mode", [None, False, True])
def test_float_printing_chooses_notation_as_torch(sci_mode):
    import torch
    cases = [[1.0, 2000.0], [1.0, 1e8], [0.5, 1e5], [1e-5, 1.0], [1.5, 2.25], [0.0, 0.0],
             [float("nan"), 1.0], [float("inf"), -2.5, 0.0], [-3.0, 1000.0], [-3.0, 1001.0],
             [1.00001e8, 2e5], [1e-4, 1.0], [5e-5]]
    ember.set_printoptions(sci_mode=sci_mode)
    torch.set_printoptions(sci_mode=sci_mode)
    try:
        for values in cases:
            assert repr(ember.tensor(values)) == repr(torch.tensor(values))
    finally:
        ember.set_printoptions(sci_mode=None)
        torch.set_printoptions(sci_mode=None)


_NP = np.random.default_rng(0)
_GRID, _ROW, _CUBE = (_NP.standard_normal(s) for s in ((3, 17), (11,), (12, 10, 10)))
_INTS = _NP.integers(-99, 99, (4, 30))


@pytest.mark.parametrize("make, options", [
    (lambda m: m.tensor([-0.0, 1.0]), {}),  # the width of the nonzero values only
    (lambda m: m.tensor([1e-4]), {}),  # float32 1e-4 is below 1e-4: scientific
    (lambda m: m.tensor([6e-8, 65504.0, -0.0], dtype=m.float16), {}),
    (lambda m: m.tensor([float("nan"), float("inf"), -0.0, 2.0]), {"sci_mode": True}),
    (lambda m: m.tensor(_GRID, dtype=m.float32), {"linewidth": 80}),  # torch's line breaks
    (lambda m: m.tensor(_ROW, dtype=m.float64, requires_grad=True), {}),  # suffixes wrap
    (lambda m: m.tensor(_CUBE, dtype=m.float32), {}),  # the format of the printed part only
    (lambda m: m.tensor(np.r_[np.ones(1000), 0.5, np.ones(1000)], dtype=m.float32), {}),
    (lambda m: m.arange(2000.0), {"edgeitems": 0}),
    (lambda m: m.tensor(_INTS, dtype=m.int8), {"linewidth": 60}),
])
def test_repr_lays_out_like_torch(make, options):
    options = {"linewidth": 100, **options}  # (Ember's default width, torch's is 80)
    torch.set_printoptions(**options)
    ember.set_printoptions(**options)
    try:
        assert repr(make(ember)) == repr(make(torch)).replace("torch.", "ember.")
    finally:
        torch.set_printoptions(profile="default")
        ember.set_printoptions(profile="default")


def test_base_and_is_view_match_torch():
    import torch

    for lib in (ember, torch):
        x = lib.ones(4, requires_grad=True)
        y = x[1:]
        z = y.view(3)
        assert (y._base is x, z._base is x, x._base, x.detach()[1:].detach()._base) == \
            (True, True, None, None)
        assert (x._is_view(), y._is_view(), z.detach()._is_view()) == (False, True, False)


def test_repr_of_a_dual_tensor_shows_its_tangent_as_torch():
    shown = {}
    for lib in (ember, torch):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([1.0, 2.0], dtype=lib.float64),
                             lib.tensor([1.0, 0.5], dtype=lib.float64))
            shown[lib] = [repr(x), repr(x.sum()), repr(x * 2), repr(lib.ones(2))]
    assert shown[ember] == [r.replace("torch.", "ember.") for r in shown[torch]]


def test_repr_of_a_subclass_names_it_as_torch():
    shown = {}
    for lib in (ember, torch):
        class Tagged(lib.Tensor):
            pass
        x = lib.tensor(np.arange(40.0).reshape(2, 20) * 1.5, dtype=lib.float64)
        shown[lib] = [repr(x.as_subclass(Tagged)), repr(lib.tensor(1.0).as_subclass(Tagged)),
                      repr(lib.nn.Buffer(lib.ones(1))), repr(lib.nn.Parameter(lib.ones(1)))]
    assert shown[ember] == [r.replace("torch.", "ember.") for r in shown[torch]]


def test_numpy_conversion_keeps_the_copy_protocol():
    t = ember.tensor([1.5, 2.0])
    assert np.shares_memory(np.array(t, copy=False), t.numpy())
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())
    assert np.array(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="needs a copy"):  # (it copied, as NumPy refuses)
        np.array(t, dtype=np.float64, copy=False)


def test_default_print_width_is_torchs_80_columns():
    x = np.arange(2000.0).reshape(40, 50)
    assert repr(ember.tensor(x)) == repr(torch.tensor(x)).replace("torch.", "ember.")


def to_spec(lib, spec):
    """A ``to`` argument by name for ``lib`` (torch or ember)."""
    if not isinstance(spec, str) or spec == "cpu":
        return spec
    return {"f64": lib.float64, "f32": lib.float32, "i32": lib.int32, "dev": lib.device("cpu"),
            "x64": lib.zeros(1, dtype=lib.float64), "CL": lib.channels_last}[spec]


def to_outcome(lib, call, args, kwargs):
    """The dtype ``call`` gives, or the class of the error it raises."""
    a = tuple(to_spec(lib, s) for s in args)
    k = {key: to_spec(lib, s) for key, s in kwargs.items()}
    try:
        return str(call(lib, a, k)).split(".")[-1]
    except Exception as e:  # noqa: BLE001 (the error's class is the outcome)
        return type(e)


# (PyTorch's three forms; a target both by position and keyword; a target in a flag's place)
TO_CASES = [
    (("cpu",), {}), ((None,), {}), (("cpu", None), {}), (("cpu", "f64", True, False), {}),
    (("f64", True, False), {}), ((None, None, True), {}), (("dev", "f64"), {}), ((), {}),
    ((), {"device": "cpu", "dtype": "f64"}), ((), {"tensor": "x64"}), (("x64", True), {}),
    (("cpu", "f64"), {"dtype": "f32"}), (("f64",), {"dtype": "f32"}),
    (("cpu",), {"device": "cpu"}), (("f64",), {"device": "cpu"}), (("x64",), {"dtype": "f32"}),
    (("x64",), {"device": "cpu"}), (("f64",), {"dtype": None}), (("cpu",), {"device": None}),
    (("f64", True), {"non_blocking": False}), (("cpu", "f64", False, False), {"copy": True}),
    (("f64", "cpu"), {}), (("x64", "cpu"), {}), (("cpu", "x64"), {}), (("x64", "f64"), {}),
    ((None, True), {}), (("f64", None), {}), (("cpu", "f64", 1), {}), ((), {"non_blocking": 1}),
    (("cpu", True, "f64"), {}), (("f64", True, True, True), {}), ((), {"bogus": 1}),
    (("x64",), {"other": "x64"}), (("cpu", "f64"), {"non_blocking": True}),
    (("f64",), {"memory_format": "CL"}), (("f64",), {"copy": True}), ((), {"copy": False}),
]


@pytest.mark.parametrize("args,kwargs", TO_CASES)
def test_to_parses_its_arguments_as_torch(args, kwargs):
    def call(lib, a, k):
        return lib.zeros(1, 1, 1, 1).to(*a, **k).dtype

    want, got = to_outcome(torch, call, args, kwargs), to_outcome(ember, call, args, kwargs)
    assert got == want if isinstance(want, str) else issubclass(got, want), (want, got)


def test_to_true_stays_refused_with_a_hint():
    with pytest.raises(TypeError, match=r"to\(ember.bool\)"):
        ember.zeros(2).to(True)
