"""Module behaviour a differential sweep against torch.nn found different, each checked
against torch: extra state in state dicts, norms with mixed dtypes, RNNBase modes and
argument checks, container operations and reprs, padding ranks, and a few reprs and
attributes."""

import builtins
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn

LIBS = {"torch": (torch, torch.nn), "ember": (ember, nn)}


def outcome(fn, *args, expected=None):
    """``("ok", result)`` or ``(exception type name, message)``, with the library's name
    taken out of the text so that both libraries' outcomes compare equal. An exception that is
    an instance of the built-in class named ``expected`` (torch's: Ember's ArgumentError is
    both its ValueError and its RuntimeError) takes that name."""
    try:
        result = ("ok", fn(*args))
    except Exception as exc:  # noqa: BLE001 (what each library raises is the point)
        name = type(exc).__name__
        builtin = getattr(builtins, str(expected), None)
        if isinstance(builtin, type) and isinstance(exc, builtin):
            name = expected
        result = (name, str(exc))
    return tuple(str(r).replace("torch.nn.modules.container", "ember.nn.containers")
                 .replace("torch", "ember") for r in result)


def both(fn):
    """The outcomes of ``fn(lib, nn)`` with torch and with Ember."""
    t = outcome(fn, *LIBS["torch"])
    return [t, outcome(fn, *LIBS["ember"], expected=t[0])]


def assert_same(fn):
    t, e = both(fn)
    assert e == t


# -- 1. extra state ------------------------------------------------------------------------
def _stateful(lnn):
    class Counter(lnn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lnn.Linear(2, 2)
            self.steps = 0

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]
    return Counter


def test_extra_state_is_saved_and_loaded_as_torch():
    def run(lib, lnn):
        net = lnn.Sequential(_stateful(lnn)(), lnn.ReLU())
        net[0].steps = 7
        sd = net.state_dict()
        fresh = lnn.Sequential(_stateful(lnn)(), lnn.ReLU())
        keys = fresh.load_state_dict(sd)
        return list(sd), sd["0._extra_state"], fresh[0].steps, repr(keys)
    assert_same(run)


@pytest.mark.parametrize("strict", [True, False])
def test_extra_state_missing_and_unexpected_as_torch(strict):
    def missing(lib, lnn):
        net = lnn.Sequential(_stateful(lnn)())
        sd = {k: v for k, v in net.state_dict().items() if "extra" not in k}
        return tuple(net.load_state_dict(sd, strict=strict))

    def unexpected(lib, lnn):
        net = lnn.Sequential(lnn.Linear(2, 2))
        sd = dict(net.state_dict(), **{"0._extra_state": 3})
        return tuple(net.load_state_dict(sd, strict=strict))
    assert_same(missing)
    assert_same(unexpected)


def test_extra_state_needs_an_override():
    class OnlyGet(nn.Linear):  # no set_extra_state: its key is unexpected when loading
        def get_extra_state(self):
            return 1
    m = OnlyGet(2, 2)
    assert list(m.state_dict()) == ["weight", "bias", "_extra_state"]
    with pytest.raises(RuntimeError, match='Unexpected key.*"_extra_state"'):
        m.load_state_dict(m.state_dict())
    assert list(nn.Linear(2, 2).state_dict()) == ["weight", "bias"]


# -- 2. norms with mixed dtypes --------------------------------------------------------------
_NORMS = {
    "LayerNorm": (lambda lnn, dt: lnn.LayerNorm(4, dtype=dt), (2, 3, 4)),
    "LayerNorm_plain": (lambda lnn, dt: lnn.LayerNorm(4, elementwise_affine=False, dtype=dt),
                        (2, 3, 4)),
    "BatchNorm1d": (lambda lnn, dt: lnn.BatchNorm1d(4, dtype=dt), (3, 4)),
    "BatchNorm1d_eval": (lambda lnn, dt: lnn.BatchNorm1d(4, dtype=dt).eval(), (3, 4, 2)),
    "BatchNorm2d_plain": (lambda lnn, dt: lnn.BatchNorm2d(4, affine=False, dtype=dt),
                          (2, 4, 2, 2)),
    "GroupNorm": (lambda lnn, dt: lnn.GroupNorm(2, 4, dtype=dt), (2, 4, 3)),
    "InstanceNorm1d": (lambda lnn, dt: lnn.InstanceNorm1d(4, dtype=dt), (2, 4, 3)),
    "InstanceNorm1d_affine": (lambda lnn, dt: lnn.InstanceNorm1d(4, affine=True, dtype=dt),
                              (2, 4, 3)),
    "InstanceNorm2d_stats": (lambda lnn, dt: lnn.InstanceNorm2d(
        4, affine=True, track_running_stats=True, dtype=dt).eval(), (2, 4, 2, 3)),
    "RMSNorm": (lambda lnn, dt: lnn.RMSNorm(4, dtype=dt), (2, 3, 4)),
}
_DTYPES = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.parametrize("name", list(_NORMS))
@pytest.mark.parametrize("param_dtype", _DTYPES)
@pytest.mark.parametrize("input_dtype", _DTYPES)
def test_norm_with_parameters_of_another_dtype_as_torch(name, param_dtype, input_dtype):
    make, shape = _NORMS[name]
    x = np.random.default_rng(0).standard_normal(shape)
    outs = {}

    def run(lib, lnn):
        out = make(lnn, getattr(lib, param_dtype))(lib.tensor(x).to(getattr(lib, input_dtype)))
        outs[lib.__name__] = out.detach().float().numpy()
        return str(out.dtype)
    t, e = both(run)
    assert e == t
    if t[0] == "ok":
        tol = 1e-6 if {param_dtype, input_dtype} <= {"float32", "float64"} else 2e-2
        np.testing.assert_allclose(outs["ember"], outs["torch"], rtol=tol, atol=tol)


def test_half_input_trains_float32_batch_norm_as_torch():
    x = np.random.default_rng(1).standard_normal((6, 3))
    mods = [lnn.BatchNorm1d(3) for _, lnn in LIBS.values()]
    for (lib, _), m in zip(LIBS.values(), mods):
        m(lib.tensor(x).to(lib.float16))
    np.testing.assert_allclose(mods[1].running_var.numpy(), mods[0].running_var.numpy(),
                               rtol=1e-3)
    assert mods[1].running_mean.dtype == ember.float32


def test_norm_parameters_of_two_dtypes_as_torch():
    def run(lib, lnn):
        m = lnn.LayerNorm(4).to(lib.float16)
        m.bias.data = m.bias.data.float()
        return m(lib.ones(2, 4, dtype=lib.float16))
    assert_same(run)


def test_norms_under_autocast_follow_its_policy():
    # (bfloat16 as torch's CPU autocast, which leaves norms alone; float32 was CUDA's list)
    x = ember.randn(2, 4)
    for m in (nn.LayerNorm(4), nn.BatchNorm1d(4), nn.GroupNorm(2, 4), nn.RMSNorm(4)):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            h = nn.Linear(4, 4)(x)
            assert h.dtype == ember.bfloat16 and m(h).dtype == ember.bfloat16


# -- 3., 4. RNNBase --------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU", "LSTMX"])
def test_rnn_base_honours_mode(mode):
    assert_same(lambda lib, lnn: [(n, tuple(p.shape)) for n, p in
                                  lnn.RNNBase(mode, 3, 5, 2, bidirectional=True)
                                  .named_parameters()])


def test_rnn_base_mode_picks_the_step():
    class Gru(nn.RNNBase):
        def forward(self, x):
            return self._run(x, None, None)[:2]
    torch.manual_seed(0)
    t = torch.nn.GRU(3, 4)
    e = Gru("GRU", 3, 4)
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x))[0].detach().numpy(),
                               t(torch.tensor(x))[0].detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,args,kwargs", [
    ("LSTM", (3, 5, 0), {}), ("GRU", (3, 5, -1), {}), ("RNN", (3, 5.0), {}),
    ("RNN", (3.0, 5), {}), ("RNN", (0, 5), {}), ("GRU", (3, 0), {}),
    ("LSTM", (3, 5), {"dropout": 1.5}), ("LSTM", (3, 5), {"dropout": True}),
    ("LSTM", (3, 5), {"dropout": "0.1"}), ("LSTM", (3, 5), {"bias": 1}),
    ("GRU", (3, 5), {"batch_first": None}), ("LSTM", (3, 5), {"proj_size": 5}),
    ("LSTM", (3, 5), {"proj_size": -1}), ("LSTM", (3, 5, 2), {"dropout": 0.5}),
])
def test_rnn_argument_checks_as_torch(cls, args, kwargs):
    assert_same(lambda lib, lnn: type(getattr(lnn, cls)(*args, **kwargs)).__name__)


def test_rnn_dropout_on_one_layer_warns_as_torch():
    for _, lnn in LIBS.values():
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater"):
            lnn.GRU(3, 5, dropout=0.5)


# -- 5. Sequential ---------------------------------------------------------------------------
def test_sequential_multiplication_and_in_place_add_as_torch():
    def run(lib, lnn):
        s = lnn.Sequential(lnn.Linear(1, 1), lnn.ReLU())
        twice, twice_r = s * 2, 2 * s
        same = s
        s *= 3
        s += lnn.Sequential(lnn.Tanh())
        return (len(twice), twice[2] is twice[0], len(twice_r), s is same, list(s._modules),
                s[2] is s[0])
    assert_same(run)


@pytest.mark.parametrize("op", ["mul0", "mulfloat", "imul-1", "iadd_list"])
def test_sequential_operator_errors_as_torch(op):
    def run(lib, lnn):
        s = lnn.Sequential(lnn.ReLU())
        if op == "mul0":
            return s * 0
        if op == "mulfloat":
            return s * 1.5
        if op == "imul-1":
            s *= -1
        else:
            s += [lnn.ReLU()]
    assert_same(run)


# -- 6., 7., 14. ParameterDict and ParameterList ---------------------------------------------
def test_parameter_dict_methods_as_torch():
    def run(lib, lnn):
        def p(n):
            return lnn.Parameter(lib.zeros(n))
        d = lnn.ParameterDict({"b": p(2), "a": p(3), "c": 5, "d": lib.ones(2)})
        log = [list(d), list(d.state_dict()), list(reversed(d)), d.setdefault("q", 7),
               tuple(d.setdefault("a").shape)]
        key, value = d.popitem()
        log += [key, value, list(d), list(d.fromkeys(["x", "y"], 1.5).items())]
        c = d.copy()
        log += [type(c).__name__, list(c), c["a"] is d["a"]]
        u = d | lnn.ParameterDict({"n": p(1)})
        log += [list(u), list(d)]
        d |= lnn.ParameterDict(OrderedDict([("z", p(1)), ("m", p(1))]))
        log += [list(d), list(d.state_dict()), d.get("c"), d.get("nope", 0), "d" in d, len(d)]
        del d["b"]
        d.clear()
        return log + [list(d), repr(d)]
    assert_same(run)


@pytest.mark.parametrize("bad", [3, [(1, 2, 3)], [3]])
def test_parameter_dict_update_errors_as_torch(bad):
    t, e = both(lambda lib, lnn: lnn.ParameterDict().update(bad))
    assert e[0] == t[0] and e[1].replace(" ", "") == t[1].replace(" ", "")  # (torch: "isint")


def test_parameter_list_holds_what_torch_holds():
    def run(lib, lnn):
        pl = lnn.ParameterList([lnn.Parameter(lib.zeros(2, 3)), 5, lib.ones(1),
                                lnn.Linear(1, 1), None, "x"])
        pl += [lnn.Parameter(lib.zeros(4))]
        pl.append(2.5)
        return (len(pl), [type(v).__name__ for v in pl], list(pl.state_dict()), pl[-1], pl[1],
                [type(v).__name__ for v in pl[1:4]], repr(pl))
    assert_same(run)


def test_parameter_list_extend_refuses_a_tensor_as_torch():
    assert_same(lambda lib, lnn: lnn.ParameterList(lib.ones(3)))


def test_parameter_list_and_dict_reprs_as_torch():
    def run(lib, lnn):
        def p(*shape, dtype=lib.float32):
            return lnn.Parameter(lib.ones(*shape, dtype=dtype))
        return [repr(lnn.ParameterList([p(2)])),
                repr(lnn.ParameterList([p(2), p(2, 3, dtype=lib.float64), lib.zeros(())])),
                repr(lnn.ParameterDict({"a": p(2), "b": p(1, dtype=lib.float16)})),
                repr(lnn.ParameterDict({"w": p(2, 2, dtype=lib.float64), "n": None})),
                repr(lnn.ParameterList()), repr(lnn.ParameterDict())]
    t, e = both(run)
    assert e == t
    assert "[ember.float64 of size 2x3]" in e[1] and "[ember.HalfTensor of size 1]" in e[1]


def test_parameter_list_deletion_and_insertion_renumber():  # (Ember's, beyond torch's)
    pl = nn.ParameterList([ember.zeros(1), "a", ember.ones(2)])
    del pl[0]
    assert [n for n, _ in pl.named_parameters()] == ["1"] and pl[0] == "a" and len(pl) == 2
    pl._insert(0, 3)
    assert [pl[0], pl[1]] == [3, "a"] and tuple(pl[2].shape) == (2,)


# -- 8. padding ranks ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["Zero", "Constant", "Reflection", "Replication", "Circular"])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5, 6])
def test_padding_input_ranks_as_torch(kind, n, ndim):
    def run(lib, lnn):
        cls = getattr(lnn, f"{kind}Pad{n}d")
        m = cls(1, 0.5) if kind == "Constant" else cls(1)
        return tuple(m(lib.ones(*[3] * ndim)).shape)
    t, e = both(run)
    if t[0] == "ok" or ndim >= n:  # (a rank below n: F.pad's own error)
        assert e[0] == t[0] and e[1].startswith(t[1])
    else:
        assert e[0] != "ok"


# -- 9. InstanceNorm on one spatial element --------------------------------------------------
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 4, 1)),
                                       ("InstanceNorm1d", (4, 1)),
                                       ("InstanceNorm2d", (2, 4, 1, 1)),
                                       ("InstanceNorm3d", (4, 1, 1, 1))])
@pytest.mark.parametrize("training", [True, False])
def test_instance_norm_needs_two_spatial_elements_in_training(cls, shape, training):
    assert_same(lambda lib, lnn: tuple(getattr(lnn, cls)(4, track_running_stats=True)
                                       .train(training)(lib.ones(*shape)).shape))


# -- 10. ModuleList repr ---------------------------------------------------------------------
def test_module_list_repr_groups_repeats_as_torch():
    def run(lib, lnn):
        lin = lnn.Linear(2, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tf = lnn.TransformerEncoder(lnn.TransformerEncoderLayer(8, 2, 16), 3)
        return [repr(lnn.ModuleList([lin, lin, lnn.ReLU(), lnn.Linear(2, 2), lnn.Linear(2, 2),
                                     lnn.Linear(2, 3)])),
                repr(lnn.ModuleList([lnn.Sequential(lnn.ReLU()), lnn.Sequential(lnn.ReLU())])),
                repr(lnn.ModuleList()), repr(tf)]
    assert_same(run)


# -- 11.–13., 15. attributes and reprs -------------------------------------------------------
@pytest.mark.parametrize("build", [
    lambda lnn: lnn.AvgPool1d(3), lambda lnn: lnn.AvgPool1d(3, 2, 1, True, False),
    lambda lnn: lnn.AvgPool1d([4], padding=(2,)), lambda lnn: lnn.Hardsigmoid(True),
    lambda lnn: lnn.Hardswish(inplace=True), lambda lnn: lnn.Hardswish(),
    lambda lnn: lnn.Unflatten(1, [2, 3]), lambda lnn: lnn.Unflatten(-1, (2, 3)),
    lambda lnn: lnn.Unflatten(1, (2, 3.0)), lambda lnn: lnn.Unflatten(1, 6),
])
def test_module_attributes_and_repr_as_torch(build):
    assert_same(lambda lib, lnn: (repr(build(lnn)), {
        k: getattr(build(lnn), k) for k in ("kernel_size", "stride", "padding",
                                            "unflattened_size", "inplace")
        if hasattr(build(lnn), k)}))


def test_avg_pool1d_values_as_torch():
    x = np.random.default_rng(2).standard_normal((2, 3, 10)).astype(np.float32)
    for args in [(3,), (3, 2, 1, True, False), (4, None, 2)]:
        np.testing.assert_allclose(nn.AvgPool1d(*args)(ember.tensor(x)).numpy(),
                                   torch.nn.AvgPool1d(*args)(torch.tensor(x)).numpy(),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("build", [
    lambda lnn: lnn.Conv1d(2, 3, 3, padding=1), lambda lnn: lnn.Conv2d(2, 3, 3, padding=(1, 2)),
    lambda lnn: lnn.Conv3d(2, 3, 3, padding=(1, 2, 3)),
    lambda lnn: lnn.Conv2d(2, 3, 3, padding="same"),
    lambda lnn: lnn.Conv2d(2, 3, (3, 4), padding="same", dilation=(1, 2)),
    lambda lnn: lnn.Conv2d(2, 3, 3, padding="valid"),
    lambda lnn: lnn.Conv1d(2, 3, 4, padding="same"),
    lambda lnn: lnn.ConvTranspose2d(2, 3, 3, padding=(1, 0)),
])
def test_conv_reversed_padding_as_torch(build):
    assert_same(lambda lib, lnn: build(lnn)._reversed_padding_repeated_twice)


def test_conv_padding_mode_reads_reversed_padding():
    torch.manual_seed(0)
    t = torch.nn.Conv2d(2, 3, (3, 4), padding="same", padding_mode="reflect")
    e = nn.Conv2d(2, 3, (3, 4), padding="same", padding_mode="reflect")
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(3).standard_normal((1, 2, 6, 7)).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
