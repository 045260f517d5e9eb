"""FlopCounterMode counts what torch's counts on the same models (forward and backward, per
module), ModuleTracker tracks the hierarchy, and counting costs nothing when off."""

import doctest
import importlib

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode as TorchCounter

import ember
import ember.nn.attention
from ember.ops.primitive import PRIMITIVES
from ember.utils.flop_counter import FlopCounterMode, register_flop_formula
from ember.utils.flop_formulas import FORWARD_FORMULAS
from ember.utils.module_tracker import ModuleTracker


def _count(counter_cls, model, x, backward=True):
    # torch counts attention only on its math path (its CPU flash kernel has no formula)
    with counter_cls(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
        out = model(x)
        if backward:
            out.sum().backward()
    return counter


def _module_totals(counter):
    return {mod: sum(ops.values()) for mod, ops in counter.get_flop_counts().items()}


def _same_weights(e_model, t_model):
    for (_, pe), (_, pt) in zip(e_model.named_parameters(), t_model.named_parameters(),
                                strict=True):
        pt.data = torch.from_numpy(pe.detach().numpy().copy())


def _mlp(nn):
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 6, 3, stride=2, padding=1),
                         nn.Conv2d(6, 6, 1), nn.Conv2d(6, 4, 3), nn.Flatten(),
                         nn.Linear(4 * 2 * 2, 5))


def _deconv(nn):
    return nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2), nn.Conv2d(4, 2, 3))


def _block(nn):
    return nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                      batch_first=True)


CASES = [("mlp", _mlp, (5, 8)), ("cnn", _cnn, (2, 3, 9, 9)), ("deconv", _deconv, (2, 3, 4, 4)),
         ("transformer block", _block, (2, 5, 8))]


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("name,make,shape", CASES, ids=[c[0] for c in CASES])
def test_counts_match_torch(name, make, shape, backward):
    e_model, t_model = make(ember.nn), make(torch.nn)
    _same_weights(e_model, t_model)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = _count(FlopCounterMode, e_model, ember.tensor(x), backward)
    theirs = _count(TorchCounter, t_model, torch.from_numpy(x), backward)
    assert ours.get_total_flops() == theirs.get_total_flops() > 0
    assert _module_totals(ours) == _module_totals(theirs)


def test_attention_both_paths_match_torch():
    F, TF = ember.nn.functional, torch.nn.functional
    shapes = [(2, 2, 5, 4), (2, 2, 7, 4), (2, 2, 7, 6)]
    arrays = [np.random.default_rng(i).standard_normal(s).astype(np.float32)
              for i, s in enumerate(shapes)]
    with TorchCounter(display=False) as theirs, sdpa_kernel(SDPBackend.MATH):
        q, k, v = (torch.tensor(a, requires_grad=True) for a in arrays)
        TF.scaled_dot_product_attention(q, k, v).sum().backward()
    for backend in (ember.nn.attention.SDPBackend.MATH,
                    ember.nn.attention.SDPBackend.FLASH_ATTENTION):
        with FlopCounterMode(display=False) as ours, ember.nn.attention.sdpa_kernel(backend):
            q, k, v = (ember.tensor(a, requires_grad=True) for a in arrays)
            F.scaled_dot_product_attention(q, k, v).sum().backward()
        assert ours.get_total_flops() == theirs.get_total_flops(), backend


def test_einsum_and_bmm_match_torch():
    a = np.ones((2, 3, 4), np.float32)
    b = np.ones((2, 4, 5), np.float32)
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        with counter_cls(display=False) as counter:
            x = lib.tensor(a, requires_grad=True)
            y = lib.tensor(b, requires_grad=True)
            (lib.einsum("bij,bjk->bik", x, y).sum() + lib.bmm(x, y).sum()
             + lib.baddbmm(lib.zeros(2, 3, 5), x, y).sum()).backward()
            lib.mv(lib.ones(3, 4), lib.ones(4))  # torch counts no matrix–vector product
        totals.append(counter.get_total_flops())
    assert totals[0] == totals[1]


@pytest.mark.parametrize("input_grad", [True, False])
def test_linear_cross_entropy_matches_torch(input_grad):
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    target = np.array([0, 1, 2, 3, 4, 0])
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        with counter_cls(display=False) as counter:
            loss = lib.nn.functional.linear_cross_entropy(
                lib.tensor(x, requires_grad=input_grad), lib.tensor(w, requires_grad=True),
                lib.tensor(target))
            loss.backward()
        totals.append(counter.get_total_flops())
    assert totals[0] == totals[1] == (3 if input_grad else 2) * 2 * 6 * 4 * 5


def test_grouped_conv_counts_its_weight_gradient_once():
    # torch's formula takes the weight gradient of a grouped convolution to cost `groups`
    # times its forward (it uses the input's channels, not a group's); Ember counts the
    # products it runs: the forward's FLOPs once
    groups, forward = 2, 2 * 2 * 4 * (4 * 3 * 3 * 3)  # N·positions·Cout·(Cin/g)·k·k
    e_conv, t_conv = ember.nn.Conv2d(6, 4, 3, groups=groups), torch.nn.Conv2d(6, 4, 3,
                                                                              groups=groups)
    x = np.ones((2, 6, 4, 4), np.float32)
    ours = _count(FlopCounterMode, e_conv, ember.tensor(x))
    theirs = _count(TorchCounter, t_conv, torch.from_numpy(x))
    assert ours.get_total_flops() == 2 * forward
    assert theirs.get_total_flops() == (2 + groups - 1) * forward


def test_conv_backward_counts_only_the_gradients_needed():
    conv = ember.nn.Conv2d(2, 3, 3)
    conv.weight.requires_grad_(False)
    x = ember.randn(1, 2, 5, 5, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        conv(x).sum().backward()
    forward = 2 * 1 * 3 * 3 * (3 * 2 * 3 * 3)
    assert counter.get_flop_counts()["Global"] == {"conv": forward, "conv_backward": forward}


def test_table_and_custom_mapping(capsys):
    model = _mlp(ember.nn)
    with FlopCounterMode(depth=1, custom_mapping={"relu": lambda x, **_: 1000}) as counter:
        model(ember.ones(5, 8))
    printed = capsys.readouterr().out
    assert printed.strip() == counter.get_table(1)
    lines = printed.splitlines()
    assert lines[0].split() == ["Module", "FLOP", "%", "Total"]
    assert [len(dashes) for dashes in lines[1].split()] == [len("Sequential"), 6, 9]
    assert lines[2].split() == ["Sequential", "2920", "100.00%"]
    assert " - relu" in counter.get_table() and "Sequential.0" in counter.get_table(2)
    assert "Sequential.0" not in counter.get_table(1)


def test_table_shows_global_for_flops_outside_modules():
    with FlopCounterMode(display=False) as counter:
        ember.ones(2, 3) @ ember.ones(3, 4)
    assert counter.get_table().splitlines()[2].split() == ["Global", "48", "100.00%"]
    with FlopCounterMode(display=False) as empty:
        pass
    assert empty.get_table().splitlines()[-1].split() == ["Global", "0", "0%"]


def test_mods_argument_warns_as_torch():
    with pytest.warns(UserWarning, match="mods argument is not needed"):
        FlopCounterMode(ember.nn.Linear(1, 1))


def test_register_flop_formula():
    @register_flop_formula(["exp", PRIMITIVES["log"]])
    def one_per_element(shape, *, out_shape, **_):
        return int(np.prod(shape))
    try:
        with FlopCounterMode(display=False) as counter:
            ember.ones(2, 3).exp().log()
        assert counter.get_flop_counts()["Global"] == {"exp": 6, "log": 6}
    finally:
        del FORWARD_FORMULAS["exp"], FORWARD_FORMULAS["log"]
    with pytest.raises(TypeError, match="primitive or a primitive's name"):
        register_flop_formula(3)


@pytest.mark.parametrize("profile_inside", [False, True])
def test_counter_and_profile_nest_either_way(profile_inside):
    model = ember.nn.Sequential(ember.nn.Conv1d(2, 3, 3), ember.nn.Flatten(),
                                ember.nn.Linear(6, 2))
    x = ember.ones(4, 2, 4, requires_grad=True)
    outer, inner = (FlopCounterMode(display=False), ember.profiler.profile()) if \
        profile_inside else (ember.profiler.profile(), FlopCounterMode(display=False))
    with outer, inner:
        model(x).sum().backward()
    counter, prof = (outer, inner) if profile_inside else (inner, outer)
    conv = 2 * 4 * 2 * (3 * 2 * 3)  # 2·batch·output positions·weight elements
    assert counter.get_flop_counts()["Sequential.0"] == {"conv": conv, "conv_backward": 2 * conv}
    assert any(e.kind == "backward" for e in prof.events())  # (the profile saw them too)


def test_counter_nested_in_itself_counts_in_both():
    model = ember.nn.Sequential(_mlp(ember.nn), ember.nn.Unflatten(1, (1, 4)),
                                ember.nn.Conv1d(1, 2, 3))
    with FlopCounterMode(display=False) as outer:
        model(ember.ones(5, 8)).sum().backward()
        with FlopCounterMode(display=False) as inner:
            model(ember.ones(5, 8)).sum().backward()
    mlp, conv = 4480, 2 * 5 * 2 * (2 * 3)
    assert inner.get_flop_counts()["Sequential.2"] == {"conv": conv, "conv_backward": 2 * conv}
    assert inner.get_total_flops() == mlp + 3 * conv
    assert outer.get_total_flops() == 2 * (mlp + 3 * conv)


def _tracked(nn, lib, tracker_cls):
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Tanh()), nn.Linear(3, 1))
    seen = []

    def spy(name):
        return lambda *_: seen.append((name, sorted(tracker.parents), tracker.is_bw))

    net[1][0].register_forward_pre_hook(spy("forward"))
    with tracker_cls() as tracker:
        x = lib.ones(1, 2, requires_grad=True)
        h = net[0](x)
        h.register_hook(spy("backward, first layer's output"))
        y = net[2](net[1](h))
        y.register_hook(spy("backward, output"))
        y.sum().backward()
        seen.append(("after", sorted(tracker.parents), tracker.is_bw))
    return seen


def test_module_tracker_matches_torch():
    from torch.utils.module_tracker import ModuleTracker as TorchTracker

    seen = _tracked(ember.nn, ember, ModuleTracker)
    assert seen == _tracked(torch.nn, torch, TorchTracker)
    assert seen[0] == ("forward", ["Global", "Sequential", "Sequential.0"], False)  # net[1]
    assert not ember.nn.module_hooks._global_forward_pre_hooks


def test_a_module_with_an_output_left_unused_gets_its_backward_flops():
    # LSTMCell's h and c come from one node; with only h used its backward was counted under
    # "Global" alone (960 of 1920 FLOPs under "LSTMCell")
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        lib.manual_seed(0)
        cell = lib.nn.LSTMCell(4, 6)
        with counter_cls(display=False) as counter:
            cell(lib.ones(2, 4))[0].sum().backward()
        totals.append(_module_totals(counter))
    assert totals[0] == totals[1] == {"Global": 1920, "LSTMCell": 1920}


@pytest.mark.parametrize("module", ["utils.flop_counter", "utils.flop_formulas",
                                    "utils.module_tracker"])
def test_docstring_examples(module):
    mod = importlib.import_module(f"ember.{module}")
    result = doctest.testmod(mod, extraglobs={"ember": ember, "prod": np.prod},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_nothing_is_left_on_the_eager_path_after_exit():
    from ember.autograd.engine import VJP_HOOK
    from ember.ops.primitive import DISPATCH

    with pytest.raises(ValueError, match="inside"), FlopCounterMode(display=False):
        ember.ones(2, 2) @ ember.ones(2, 2)
        raise ValueError("inside")
    assert DISPATCH.handler is None and not DISPATCH.stack and VJP_HOOK.around is None
    assert not ember.nn.module_hooks._global_forward_hooks


@pytest.mark.parametrize("shapes", [((4,), (4, 3)), ((4,), (2, 4, 3)), ((3, 4), (4,)),
                                    ((2, 3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 6))])
def test_matmul_forward_with_vectors_and_broadcasting_matches_torch(shapes):
    """torch runs a vector times a matrix as ``mm`` (counted), a matrix times a vector as
    ``mv`` (not counted); ``F.linear`` of an unbatched input is the first kind."""
    totals = []
    for lib, counter_cls in ((ember, FlopCounterMode), (torch, TorchCounter)):
        with counter_cls(display=False) as counter:
            lib.matmul(*(lib.ones(s) for s in shapes))
            if len(shapes[0]) == 1 and len(shapes[1]) == 2:
                lib.nn.functional.linear(lib.ones(shapes[0]), lib.ones(shapes[1]).T)
        totals.append(counter.get_total_flops())
    assert totals[0] == totals[1]
