"""Module core: registration, walking the tree, modes, conversions, state dicts, hooks,
reprs, containers, deepcopy and the parameter tree."""

import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def _net_class(lib, tlib):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.Linear(3, 4)
            self.block = lib.Sequential(lib.Linear(4, 4), lib.ReLU(), lib.BatchNorm1d(4))
            self.head = lib.ModuleDict({"a": lib.Linear(4, 2)})
            self.scale = lib.Parameter(tlib.ones(2))
            self.register_buffer("steps", tlib.zeros(1))
            self.register_buffer("cache", tlib.zeros(2), persistent=False)

        def forward(self, x):
            return self.head["a"](self.block(self.fc1(x))) * self.scale
    return Net


Net = _net_class(nn, ember)
TorchNet = _net_class(torch.nn, torch)


def test_parameter_is_a_leaf_tensor():
    p = nn.Parameter(ember.randn(3))
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    y = (p * 2).sum()
    assert type(p * 2) is ember.Tensor
    y.backward()
    assert p.grad.tolist() == [2.0, 2.0, 2.0]
    assert not nn.Parameter(ember.zeros(2), requires_grad=False).requires_grad
    assert repr(nn.Parameter(ember.zeros(1))).startswith("Parameter containing:\ntensor(")
    x = ember.zeros(2)
    q = nn.Parameter(x)
    with ember.no_grad():
        q[0] = 5.0
    assert x.tolist() == [5.0, 0.0]  # shares memory, as PyTorch's does


def test_names_and_order_match_torch():
    e, t = Net(), TorchNet()
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert "cache" not in e.state_dict()
    assert len(list(e.parameters(recurse=False))) == 1
    assert repr(e) == repr(t)


def test_load_state_dict_from_torch_and_forward_match():
    e, t = Net(), TorchNet()
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_errors_list_everything():
    e = Net()
    sd = dict(e.state_dict())
    del sd["fc1.bias"]
    sd["extra.weight"] = ember.zeros(1)
    sd["fc1.weight"] = ember.zeros(5, 5)
    with pytest.raises(RuntimeError) as info:
        e.load_state_dict(sd)
    msg = str(info.value)
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    assert "size mismatch for fc1.weight" in msg and "(5, 5)" in msg and "(4, 3)" in msg
    del sd["fc1.weight"]
    result = e.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.weight", "fc1.bias"]
    assert result.unexpected_keys == ["extra.weight"]


def test_load_state_dict_copies_in_place_or_assigns():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    w = b.weight
    version = w._version
    b.load_state_dict(a.state_dict())
    assert b.weight is w and np.array_equal(w.detach().numpy(), a.weight.detach().numpy())
    assert b.weight._version == version + 1
    new = {"weight": ember.ones(2, 2, dtype=ember.float64), "bias": ember.zeros(2)}
    b.load_state_dict(new, assign=True)
    assert isinstance(b.weight, nn.Parameter) and b.weight.dtype == ember.float64
    assert b.weight.requires_grad
    assert repr(b.load_state_dict(a.state_dict())) == "<All keys matched successfully>"


def test_state_dict_is_detached_and_shares_memory():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad and not isinstance(sd["weight"], nn.Parameter)
    with ember.no_grad():
        m.weight[0, 0] = 7.0
    assert sd["weight"][0, 0].item() == 7.0
    assert isinstance(m.state_dict(keep_vars=True)["weight"], nn.Parameter)


def test_replacing_a_member_keeps_its_place_as_in_torch():
    for lib in (nn, torch.nn):
        seq = lib.Sequential(lib.Linear(2, 2), lib.ReLU())
        seq[0] = lib.Linear(2, 3)
        linear = lib.Linear(2, 2)
        linear.weight = lib.Parameter(linear.weight.detach() * 2)
        assert [type(m).__name__ for m in seq] == ["Linear", "ReLU"]
        assert [name for name, _ in linear.named_parameters()] == ["weight", "bias"]


def test_setattr_rules():
    m = nn.Module()
    m.w = nn.Parameter(ember.zeros(2))
    with pytest.raises(TypeError, match="nn.Parameter or None"):
        m.w = ember.zeros(2)
    m.w = None
    assert "w" in m._parameters and m.w is None
    m.register_buffer("b", ember.zeros(1))
    m.b = ember.ones(1)
    assert m.b.tolist() == [1.0] and "b" in m._buffers
    m.sub = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="nn.Module or None"):
        m.sub = 3
    with pytest.raises(KeyError, match="be empty or contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope  # noqa: B018
    m.nb = nn.Buffer(ember.zeros(3), persistent=False)
    assert "nb" in dict(m.named_buffers()) and "nb" not in m.state_dict()
    assert type(m.nb) is ember.Tensor
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(TypeError, match="nn.Parameter or None required"):
        m.register_parameter("x", nn.Parameter(ember.zeros(1)) * 2)
    p = nn.Parameter(ember.zeros(1, requires_grad=True) * 2)
    assert p.is_leaf and p.grad_fn is None


def test_modes_conversions_zero_grad_apply():
    m = Net()
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    w = m.fc1.weight
    m(ember.randn(4, 3)).sum().backward()
    m.double()
    assert m.fc1.weight is w and w.dtype == ember.float64 and w.grad.dtype == ember.float64
    assert m.block[2].num_batches_tracked.dtype == ember.int64  # integers stay integers
    assert m.block[2].running_mean.dtype == ember.float64
    m.to(ember.float32).to("cpu")
    assert w.dtype == ember.float32
    m.zero_grad(set_to_none=False)
    assert float(w.grad.abs().sum()) == 0
    m.zero_grad()
    assert w.grad is None
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Net" and seen[0] == "Linear"
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_shared_parameters_appear_once():
    a = nn.Linear(2, 2)
    s = nn.Sequential(a, a)
    assert len(list(s.parameters())) == 2
    assert list(s.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out) or out + 1)
    out = m(ember.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None] + 1)
    assert len(calls) == 1
    h1.remove()
    h2.remove()
    m(ember.ones(1, 2))
    assert len(calls) == 1
    h3 = m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 2,), kwargs),
                                     with_kwargs=True)
    h4 = m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(args[0]),
                                 with_kwargs=True, prepend=True)
    m(ember.ones(1, 2))
    assert calls[-1].tolist() == [[2.0, 2.0]]
    with h3, h4:
        pass
    assert not m._forward_pre_hooks and not m._forward_hooks


def test_full_backward_hook_matches_torch():
    got = {}
    for lib, mod in (("e", nn.Linear(3, 2)), ("t", torch.nn.Linear(3, 2))):
        def hook(module, grad_input, grad_output, lib=lib):
            got[lib] = ([g if g is None else np.array(g.detach()) for g in grad_input],
                        [np.array(g.detach()) for g in grad_output])
        mod.register_full_backward_hook(hook)
        x = (ember if lib == "e" else torch).ones(4, 3, requires_grad=True)
        (mod(x) * 3).sum().backward()
    assert len(got["e"][0]) == len(got["t"][0]) == 1
    np.testing.assert_allclose(got["e"][1][0], got["t"][1][0])
    assert got["e"][0][0].shape == got["t"][0][0].shape


def test_backward_hook_can_replace_grad_input():
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x = ember.ones(1, 2, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0]]
    assert m.weight.grad is not None


def test_containers():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[-1], nn.Linear)
    assert isinstance(s[:2], nn.Sequential) and len(s[:2]) == 2
    s.append(nn.Sigmoid())
    del s[1]
    assert [type(x).__name__ for x in s] == ["Linear", "Linear", "Sigmoid"]
    assert list(s.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    named = nn.Sequential(OrderedDict([("enc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert list(named.state_dict()) == ["enc.weight", "enc.bias"] and named.act is named[1]
    with pytest.raises(IndexError):
        s[5]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml += [nn.Linear(1, 1)]
    ml.insert(0, nn.Identity())
    assert len(ml) == 3 and isinstance(ml[0], nn.Identity)
    assert len(list(ml.parameters())) == 4
    md = nn.ModuleDict({"x": nn.Linear(1, 1)})
    md["y"] = nn.ReLU()
    assert list(md) == ["x", "y"] and "x" in md and len(md) == 2
    pl = nn.ParameterList([ember.zeros(2), nn.Parameter(ember.ones(1))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pd = nn.ParameterDict({"a": ember.zeros(1)})
    assert isinstance(pd["a"], nn.Parameter) and list(pd.state_dict()) == ["a"]
    tl = torch.nn.ModuleList([torch.nn.Linear(1, 1)])
    assert repr(nn.ModuleList([nn.Linear(1, 1)])) == repr(tl)


def test_deepcopy_makes_independent_parameters_and_buffers():
    m = Net()
    c = copy.deepcopy(m)
    assert c.fc1.weight is not m.fc1.weight and isinstance(c.fc1.weight, nn.Parameter)
    np.testing.assert_array_equal(c.fc1.weight.detach().numpy(), m.fc1.weight.detach().numpy())
    with ember.no_grad():
        c.fc1.weight[...] = 0
        c.steps[...] = 5
    assert float(m.fc1.weight.abs().sum()) > 0 and m.steps.item() == 0


def test_deepcopy_of_a_trained_model_has_no_grads_like_torch():
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 1)
        m(lib.ones(1, 2)).sum().backward()
        kept = copy.deepcopy(m)
        assert m.weight.grad is not None and kept.weight.grad is None
        assert type(kept.weight) is lib.nn.Parameter and kept.weight.requires_grad
        w = lib.ones(2, requires_grad=True)  # a plain tensor keeps its grad, as torch's
        w.grad = lib.ones(2)
        assert copy.deepcopy(w).grad.tolist() == [1.0, 1.0]


def test_param_tree():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 1)))
    tree = s.param_tree()
    assert set(tree) == {"0", "2"} and set(tree["2"]["0"]) == {"weight", "bias"}
    assert tree["0"]["weight"] is s[0].weight
    flat = {}

    def walk(t, prefix=""):
        for k, v in t.items():
            walk(v, prefix + k + ".") if isinstance(v, dict) else flat.__setitem__(prefix + k, v)
    walk(tree)
    assert flat == dict(s.named_parameters())


def test_missing_forward_and_get_submodule():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)
    m = Net()
    assert m.get_submodule("block.0") is m.block[0]
    assert m.get_parameter("block.0.weight") is m.block[0].weight
    assert m.get_buffer("steps") is m.steps


@pytest.mark.parametrize("extra", [{"bias": [0.0, 0.0]}, {"weight.foo": [1.0]},
                                   {"act": [1.0]}])
def test_load_state_dict_reports_keys_torch_calls_unexpected(extra):
    # a key for a None parameter, a dotted key under a parameter, a plain key naming a child
    def build(lib):
        m = lib.Sequential(lib.Linear(3, 2, bias=False))
        m[0].act = lib.ReLU()
        return m[0]
    e, t = build(nn), build(torch.nn)
    sd = {"weight": np.zeros((2, 3), np.float32), **{k: np.array(v, np.float32)
                                                     for k, v in extra.items()}}
    expected = t.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}, strict=False)
    assert e.load_state_dict(sd, strict=False) == expected
    with pytest.raises(RuntimeError, match="Unexpected key"):
        e.load_state_dict(sd)


def test_load_state_dict_rejects_non_tensor_values_clearly():
    with pytest.raises(RuntimeError, match='parameter named "weight".*str'):
        nn.Linear(2, 1).load_state_dict({"weight": "oops", "bias": np.zeros(1)})


def test_to_takes_a_memory_format_and_complex_dtypes_as_torch():
    conv = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3))
    conv.to(memory_format=ember.channels_last)
    assert conv[0].weight.stride() == (18, 1, 6, 2)            # torch's strides
    assert conv[0].bias.stride() == (1,) and conv[1].running_mean.stride() == (1,)
    assert conv[0].weight.is_leaf and isinstance(conv[0].weight, nn.Parameter)
    lin = nn.Linear(2, 2).to(ember.complex64)
    assert lin.weight.dtype == ember.complex64


def test_to_refuses_integer_dtypes_and_takes_a_tensor():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="floating point or complex"):
        m.to(ember.int32)
    assert m.weight.dtype == ember.float32
    m.register_buffer("count", ember.tensor(3))
    m.to(ember.zeros(1, dtype=ember.float64), non_blocking=True)
    assert m.weight.dtype == ember.float64 and m.count.dtype == ember.int64
    assert m.to(device="cpu", dtype=ember.float16).weight.dtype == ember.float16
    assert m.float().weight.dtype == ember.float32


def test_zero_grad_without_set_to_none_zeroes_in_place():
    for lib, tlib in ((nn, ember), (torch.nn, torch)):
        m = lib.Linear(2, 2)
        m(tlib.ones(1, 2)).sum().backward()
        grad = m.weight.grad
        m.zero_grad(set_to_none=False)
        assert m.weight.grad is grad and float(grad.abs().sum()) == 0


def _kinds(container):
    return [type(m).__name__ for m in container]


def test_insert_with_negative_index_matches_torch():
    for lib in (nn, torch.nn):
        s = lib.Sequential(lib.ReLU(), lib.Tanh())
        s.insert(-1, lib.GELU())
        s.insert(-3, lib.SiLU())
        assert _kinds(s) == ["SiLU", "ReLU", "GELU", "Tanh"]
        assert list(s._modules) == ["0", "1", "2", "3"]
    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.insert(-1, nn.GELU())  # as list.insert (torch's raises KeyError here)
    assert _kinds(ml) == ["ReLU", "GELU", "Tanh"]


def test_containers_reject_what_they_cannot_hold():
    ml = nn.ModuleList([nn.ReLU()])
    for bad in (lambda: ml.append(3), lambda: ml.extend([nn.Tanh(), 3]),
                lambda: ml.insert(0, "x")):
        with pytest.raises(TypeError, match="not a Module subclass"):
            bad()
    assert _kinds(ml) == ["ReLU", "Tanh"]
    with pytest.raises(TypeError, match="not a Module subclass"):
        nn.ModuleList([3])
    pl = nn.ParameterList([ember.zeros(1), 3])  # other objects are kept, as in PyTorch
    with pytest.raises(TypeError, match="parameter '0'"):
        pl[0] = 3  # but a parameter's slot takes only a parameter (or None)
    assert len(pl) == 2 and pl[1] == 3


def test_dict_containers_update_from_each_other():
    md = nn.ModuleDict({"x": nn.ReLU()})
    md.update(nn.ModuleDict({"y": nn.Tanh()}))
    assert list(md) == ["x", "y"] and list(nn.ModuleDict(md)) == ["x", "y"]
    pd = nn.ParameterDict(nn.ParameterDict({"a": ember.zeros(1)}))
    pd.update(nn.ParameterDict({"b": ember.ones(1)}))
    assert list(pd) == ["a", "b"]
    assert pd.get("b") is pd["b"] and pd.get("c", 5) == 5


def test_multiline_extra_repr_matches_torch_layout():
    class Two(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"
    assert repr(Two()) == "Two(\n  a=1\n  b=2\n)"


def test_state_dict_post_hook_edits_in_place_as_in_torch():
    def rename(mod, sd, prefix, meta):
        sd[prefix + "w"] = sd.pop(prefix + "weight")

    for lib in (nn, torch.nn):
        m = lib.Sequential(lib.Linear(2, 1))
        handle = m[0].register_state_dict_post_hook(rename)
        assert list(m.state_dict()) == ["0.bias", "0.w"]
        handle.remove()
        assert list(m.state_dict()) == ["0.weight", "0.bias"]
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd)
        with pytest.raises(RuntimeError, match="must return None"):
            m.state_dict()


def test_load_state_dict_pre_hook_edits_a_copy_as_torch():
    def renamed(mod, sd, prefix, meta, strict, missing, unexpected, errors):
        if prefix + "w" in sd:
            sd[prefix + "weight"] = sd.pop(prefix + "w")

    for lib, tlib in ((nn, ember), (torch.nn, torch)):
        m = lib.Sequential(lib.Linear(2, 1))
        handle = m[0].register_load_state_dict_pre_hook(renamed)
        given = {"0.w": tlib.ones(1, 2), "0.bias": tlib.zeros(1)}
        m.load_state_dict(given)
        assert list(given) == ["0.w", "0.bias"]  # the caller's dict is left alone
        assert np.array(m[0].weight.detach()).tolist() == [[1.0, 1.0]]
        handle.remove()
        with pytest.raises(RuntimeError, match="0.w"):
            m.load_state_dict(given)
    m = nn.Linear(2, 1)
    m.register_load_state_dict_pre_hook(lambda *args: {})
    with pytest.raises(RuntimeError, match="must return None"):
        m.load_state_dict(m.state_dict())


def test_state_dict_metadata_carries_versions_to_load_as_torch():
    seen = []

    def versioned(lib):
        class Renamed(lib.Module):
            """Version 2 renamed ``w`` to ``weight``; older checkpoints are converted."""

            _version = 2

            def __init__(self):
                super().__init__()
                self.weight = lib.Parameter(lib.init.zeros_(lib.Linear(2, 1).weight))

            def _load_from_state_dict(self, sd, prefix, meta, *args):
                seen.append(meta.get("version"))
                if (meta.get("version") or 1) < 2 and prefix + "w" in sd:
                    sd[prefix + "weight"] = sd.pop(prefix + "w")
                super()._load_from_state_dict(sd, prefix, meta, *args)
        return Renamed

    for lib in (nn, torch.nn):
        m = lib.Sequential(lib.Linear(2, 2), lib.BatchNorm1d(2), versioned(lib)())
        sd = m.state_dict()
        assert sd._metadata == OrderedDict([("", {"version": 1}), ("0", {"version": 1}),
                                            ("1", {"version": 2}), ("2", {"version": 2})])
        m.load_state_dict(sd)
        m.load_state_dict(OrderedDict(("2.w" if k == "2.weight" else k, v)
                                      for k, v in sd.items()))  # no _metadata: an old one
        assert not hasattr(m.state_dict(destination={}), "_metadata")
    assert seen == [2, None] * 2


def test_set_submodule_matches_torch():
    for lib in (nn, torch.nn):
        m = lib.Sequential(lib.Sequential(lib.Linear(2, 2), lib.ReLU()))
        m.set_submodule("0.1", lib.Tanh())
        m.set_submodule("0.extra", lib.Identity())
        assert _kinds(m[0]) == ["Linear", "Tanh", "Identity"]
        with pytest.raises(AttributeError, match="has no attribute `new`"):
            m.set_submodule("0.new", lib.Identity(), strict=True)
        with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
            m.set_submodule("0.0.weight", lib.Identity())


def test_data_parallel_runs_the_module_as_torch_does_without_accelerators():
    import torch

    inner = nn.Linear(3, 2)
    dp = nn.DataParallel(inner, device_ids=[0, 1])
    t_dp = torch.nn.DataParallel(torch.nn.Linear(3, 2), device_ids=[0, 1])
    assert dp.device_ids == t_dp.device_ids == []
    assert list(dp.state_dict()) == list(t_dp.state_dict())
    x = ember.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    plain = nn.Linear(3, 2)
    plain.load_state_dict({k.removeprefix("module."): v for k, v in dp.state_dict().items()})
    assert nn.parallel.data_parallel(inner, (x,)).shape == (4, 2)


@pytest.mark.parametrize("remove_duplicate", [True, False])
def test_modules_remove_duplicate_counts_shared_submodules_as_torch(remove_duplicate):
    def count(lib):
        relu = lib.nn.ReLU()
        model = lib.nn.Sequential(relu, lib.nn.Sequential(relu, lib.nn.Linear(2, 2)), relu)
        return [type(m).__name__ for m in model.modules(remove_duplicate=remove_duplicate)]

    assert count(ember) == count(torch)
