"""Every optimizer against PyTorch: 20 steps of the same problem, float64 trajectories equal to
1e-6 relative, for each important option combination; state dicts continue a run exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.optim.helpers import grads, loss, pair, step_both, through_checkpoint

NAN, INF = float("nan"), float("inf")

CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.05)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, amsgrad=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True, foreach=False)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.8, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, centered=True, maximize=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, eps=1e-3)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.3, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, eps=1e-4, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1)),
    ("Adamax", dict(lr=0.05, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.5, 0.7), weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.01, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.6, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
]


def make(lib, name, params, kwargs):
    return getattr(lib.optim, name)(params, **kwargs)


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_trajectory_matches_torch(name, kwargs):
    ep, tp = pair()
    eo, to = make(ember, name, ep, kwargs), make(torch, name, tp, kwargs)
    step_both(eo, to, ep, tp, 20)


@pytest.mark.parametrize(("name", "kwargs"), CASES[::3], ids=[f"{n}-{k}" for n, k in CASES[::3]])
def test_float32_trajectory(name, kwargs):
    ep, tp = pair(dtype=np.float32)
    eo, to = make(ember, name, ep, kwargs), make(torch, name, tp, kwargs)
    step_both(eo, to, ep, tp, 10, rtol=1e-4)
    for s in eo.state.values():
        for k, v in s.items():
            assert v.dtype is ember.float32, k


@pytest.mark.parametrize(("name", "kwargs"), CASES[1::2], ids=[f"{n}-{k}" for n, k in CASES[1::2]])
def test_state_dict_round_trip_mid_run(name, kwargs):
    ep, tp = pair()
    eo, to = make(ember, name, ep, kwargs), make(torch, name, tp, kwargs)
    step_both(eo, to, ep, tp, 8)
    loaded = through_checkpoint(eo.state_dict())
    ep2 = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ep]
    eo2 = make(ember, name, ep2, dict(kwargs, lr=123.0))  # the loaded groups replace this lr
    eo2.load_state_dict(loaded)
    assert eo2.param_groups[0]["lr"] == eo.param_groups[0]["lr"]
    step_both(eo2, to, ep2, tp, 12)


def test_state_dict_layout_matches_torch():
    ep, tp = pair()
    eo = ember.optim.Adam([{"params": ep[:2]}, {"params": ep[2:], "lr": 0.1}], amsgrad=True)
    to = torch.optim.Adam([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.1}], amsgrad=True)
    grads(ember, eo, ep)
    eo.step()
    grads(torch, to, tp)
    to.step()
    es, ts = eo.state_dict(), to.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert es["state"].keys() == ts["state"].keys()
    for i in ts["state"]:
        assert es["state"][i].keys() == ts["state"][i].keys()
        for k, v in ts["state"][i].items():
            assert es["state"][i][k].dtype.name == str(v.dtype).removeprefix("torch.")
            np.testing.assert_allclose(es["state"][i][k].numpy(), v.numpy(), rtol=1e-6)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_keeps_state_only_with_momentum_as_torch(momentum):
    ep, tp = pair()
    eo, to = (ember.optim.SGD(ep, lr=0.1, momentum=momentum),
              torch.optim.SGD(tp, lr=0.1, momentum=momentum))
    grads(ember, eo, ep)
    eo.step()
    grads(torch, to, tp)
    to.step()
    es, ts = eo.state_dict()["state"], to.state_dict()["state"]
    assert len(eo.state) == len(to.state) and {i: list(s) for i, s in es.items()} == {
        i: list(s) for i, s in ts.items()}


def test_sgd_keeps_an_entry_the_user_made_and_momentum_switched_on_later_as_torch():
    for lib, params in zip((ember, torch), pair()):
        opt = lib.optim.SGD(params, lr=0.1)
        opt.state[params[0]]["note"] = "mine"
        opt.state[params[1]]  # (a lookup makes an empty entry, as in a defaultdict)
        grads(lib, opt, params)
        opt.step()
        assert len(opt.state) == 2 and opt.state[params[0]] == {"note": "mine"}
        opt.param_groups[0]["momentum"] = 0.9
        opt.step()
        assert [sorted(opt.state[p]) for p in params] == [["momentum_buffer", "note"]] + [
            ["momentum_buffer"]] * (len(params) - 1)


def test_loads_a_torch_state_dict():
    ep, tp = pair()
    to = torch.optim.AdamW(tp, lr=0.05, amsgrad=True)
    for _ in range(5):
        grads(torch, to, tp)
        to.step()
    ep = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
    eo = ember.optim.AdamW(ep, lr=0.05, amsgrad=True)
    eo.load_state_dict(to.state_dict())
    step_both(eo, to, ep, tp, 10)


def test_param_groups_have_their_own_options():
    ep, tp = pair()
    groups = [dict(lr=0.1, momentum=0.9), dict(lr=0.01, nesterov=True, momentum=0.5)]
    eo = ember.optim.SGD([dict(params=ep[:2], **groups[0]), dict(params=ep[2:], **groups[1])],
                         lr=0.5)
    to = torch.optim.SGD([dict(params=tp[:2], **groups[0]), dict(params=tp[2:], **groups[1])],
                         lr=0.5)
    step_both(eo, to, ep, tp, 20)


def test_add_param_group_mid_run():
    ep, tp = pair()
    eo, to = ember.optim.Adam(ep[:1], lr=0.05), torch.optim.Adam(tp[:1], lr=0.05)
    step_both(eo, to, ep, tp, 5)
    eo.add_param_group({"params": ep[1:], "lr": 0.2})
    to.add_param_group({"params": tp[1:], "lr": 0.2})
    step_both(eo, to, ep, tp, 10)


def test_step_writes_in_place_and_bumps_version():
    (w, *_), _ = pair()
    data, version = w._data, w._version
    opt = ember.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w._data is data and w._version == version + 1
    assert w.grad_fn is None and w.requires_grad


def test_parameters_without_grad_are_skipped():
    ep, _ = pair()
    opt = ember.optim.Adam(ep, lr=0.1)
    (ep[0] * ep[0]).sum().backward()
    before = [p.detach().numpy().copy() for p in ep]
    opt.step()
    assert not np.allclose(ep[0].detach().numpy(), before[0])
    for p, b in zip(ep[1:], before[1:], strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), b)
    assert len(opt.state) == 1


def test_zero_grad():
    ep, _ = pair()
    opt = ember.optim.SGD(ep, lr=0.1)
    (ep[0] * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert (ep[0].grad.numpy() == 0).all() and ep[1].grad is None
    opt.zero_grad()
    assert ep[0].grad is None


def test_closure_is_evaluated_with_grad():
    ep, _ = pair()
    opt = ember.optim.SGD(ep, lr=0.1)

    def closure():
        opt.zero_grad()
        value = (ep[0] ** 2).sum()
        value.backward()
        return value

    with ember.no_grad():
        value = opt.step(closure)
    assert isinstance(value, ember.Tensor) and ep[0].grad is not None


def test_step_hooks():
    ep, _ = pair()
    opt = ember.optim.SGD(ep, lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    opt.step()
    h1.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]


def test_named_parameters():
    ep, _ = pair()
    opt = ember.optim.SGD([(f"p{i}", p) for i, p in enumerate(ep)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["p0", "p1", "p2", "p3"]
    assert opt.state_dict()["param_groups"][0]["params"] == [0, 1, 2, 3]


def test_repr():
    ep, _ = pair()
    text = repr(ember.optim.SGD(ep, lr=0.1))
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text


def test_repr_of_groups_is_torchs():
    """torch ends each group with its own newline: a blank line between groups."""
    texts = [repr(lib.optim.Adam([{"params": [lib.zeros(1, requires_grad=True)]},
                                  {"params": [lib.zeros(1, requires_grad=True)], "lr": 0.5}],
                                 lr=0.1)) for lib in (ember, torch)]
    assert texts[0] == texts[1]


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_a_tensor_lr_with_foreach_is_refused_as_torch(name):
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="lr as a Tensor is not supported for capturable"):
            getattr(lib.optim, name)([lib.zeros(1, requires_grad=True)], lr=lib.tensor(0.1),
                                     foreach=True)
        getattr(lib.optim, name)([lib.zeros(1, requires_grad=True)], lr=lib.tensor(0.1),
                                 foreach=True, capturable=True)

@pytest.mark.parametrize(("groups", "match"), [
    (lambda lib, p, q: [{"params": [("a", p)]}, {"params": [q]}], "cannot add param group without"),
    (lambda lib, p, q: [{"params": [p]}, {"params": [("b", q)]}], "cannot add param group with "),
    (lambda lib, p, q: [("a", p), q], "Some param names are missing"),
    (lambda lib, p, q: [p, ("b", q)], "Some param names are missing"),
])
def test_named_and_unnamed_parameters_do_not_mix_as_torch(groups, match):
    for lib in (torch, ember):
        p, q = lib.zeros(1, requires_grad=True), lib.zeros(1, requires_grad=True)
        with pytest.raises(ValueError, match=match):
            lib.optim.SGD(groups(lib, p, q), lr=0.1)
    opt = ember.optim.SGD([("a", p)], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group without names"):
        opt.add_param_group({"params": [q]})


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda p: ember.optim.SGD(p[0], lr=0.1), TypeError, "iterable of Tensors or dicts"),
    (lambda p: ember.optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
    (lambda p: ember.optim.SGD([{"params": set(p)}]), TypeError, "ordered collections"),
    (lambda p: ember.optim.SGD([p[0], 1.0], lr=0.1), TypeError, "can only optimize Tensors"),
    (lambda p: ember.optim.SGD([p[0] * 2], lr=0.1), ValueError, "non-leaf"),
    (lambda p: ember.optim.SGD([{"params": p[:1]}, {"params": p[:1]}]), ValueError,
     "more than one parameter group"),
    (lambda p: ember.optim.SGD(p, lr=-1.0), ValueError, "Invalid learning rate"),
    (lambda p: ember.optim.SGD(p, momentum=-1.0), ValueError, "Invalid momentum value"),
    (lambda p: ember.optim.SGD(p, nesterov=True), ValueError, "Nesterov momentum requires"),
    (lambda p: ember.optim.Adam(p, betas=(1.0, 0.9)), ValueError, "beta parameter at index 0"),
    (lambda p: ember.optim.Adam(p, eps=-1.0), ValueError, "Invalid epsilon"),
    (lambda p: ember.optim.Adam(p, differentiable=True), NotImplementedError, "differentiable"),
    (lambda p: ember.optim.Optimizer([{"params": p}], {"lr": ember.optim.optimizer.required}),
     ValueError, "required optimization parameter lr"),
])
def test_errors(call, error, match):
    ep, _ = pair()
    with pytest.raises(error, match=match):
        call(ep)


def test_load_state_dict_checks_groups():
    ep, _ = pair()
    opt = ember.optim.Adam(ep)
    other = ember.optim.Adam(ep[:2]).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict(other)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})


def lion_reference(arrays, grad_fn, steps, lr, betas, weight_decay, maximize):
    """Algorithm 2 of the Lion paper, in NumPy."""
    params = [a.copy() for a in arrays]
    moments = [np.zeros_like(a) for a in arrays]
    trajectory = []
    for _ in range(steps):
        for p, m, g in zip(params, moments, grad_fn(params), strict=True):
            g = -g if maximize else g
            c = betas[0] * m + (1 - betas[0]) * g
            p -= lr * (np.sign(c) + weight_decay * p)
            m[...] = betas[1] * m + (1 - betas[1]) * g
        trajectory.append([p.copy() for p in params])
    return trajectory


@pytest.mark.parametrize("kwargs", [dict(lr=0.01), dict(lr=0.02, betas=(0.8, 0.9),
                                                        weight_decay=0.5, maximize=True)])
def test_lion_matches_the_paper(kwargs):
    ep, tp = pair()
    arrays = [p.detach().numpy().copy() for p in ep]

    def torch_grads(params):
        ts = [torch.tensor(a, requires_grad=True) for a in params]
        loss(torch, ts).backward()
        return [t.grad.numpy() for t in ts]

    full = dict(dict(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False), **kwargs)
    expected = lion_reference(arrays, torch_grads, 20, **full)
    opt = ember.optim.Lion(ep, **kwargs)
    for want in expected:
        grads(ember, opt, ep)
        opt.step()
        for p, w in zip(ep, want, strict=True):
            np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-6, atol=1e-12)
    assert set(opt.state[ep[0]]) == {"exp_avg"}


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "LBFGS"])
def test_a_read_only_parameter_is_a_clear_error_before_any_parameter_moves(name):
    frozen = np.ones((3, 3), np.float32)
    frozen.flags.writeable = False
    w = ember.nn.Parameter(ember.from_numpy(frozen))
    v = ember.nn.Parameter(ember.ones(2))
    opt = getattr(ember.optim, name)([v, w], lr=0.1)

    def closure():  # (LBFGS evaluates it; the others step on the gradients it leaves)
        opt.zero_grad()
        loss = (w * 2).sum() + v.sum()
        loss.backward()
        return loss

    def step():
        return opt.step(closure) if name == "LBFGS" else opt.step()

    closure()
    with pytest.raises(ember.errors.OpError, match=rf"{name}.step: parameter 1 of group 0 "
                       r"\(shape \(3, 3\), float32\) is read-only.*p.data = p.data.clone"):
        step()
    np.testing.assert_array_equal(v.detach().numpy(), 1.0)  # nothing moved
    w.data = w.data.clone()  # the hint's fix
    step()
    assert (w.detach().numpy() < 1.0).all() and (v.detach().numpy() < 1.0).all()


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adagrad"])
def test_stepping_some_parameters_alone_is_what_step_does_to_them(name):
    kwargs = {"SGD": {"momentum": 0.9}, "Adam": {}, "Adagrad": {}}[name]
    whole = [ember.nn.Parameter(ember.arange(4.0) + i) for i in range(3)]
    parts = [ember.nn.Parameter(ember.arange(4.0) + i) for i in range(3)]
    full = getattr(ember.optim, name)(whole, lr=0.1, **kwargs)
    split = getattr(ember.optim, name)(parts, lr=0.1, **kwargs)
    for _ in range(3):
        for params in (whole, parts):
            sum((p * p * (i + 1)).sum() for i, p in enumerate(params)).backward()
        full.step()
        split.step_part([parts[2]])()
        before = parts[0].detach().numpy().copy()
        split.step_part(parts[:2])()
        assert not np.array_equal(before, parts[0].detach().numpy())
        full.zero_grad(), split.zero_grad()
    for a, b in zip(whole, parts):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    frozen = np.ones(2, np.float32)
    frozen.flags.writeable = False
    w = ember.nn.Parameter(ember.from_numpy(frozen))
    opt = getattr(ember.optim, name)([parts[0], w], lr=0.1)
    (parts[0].sum() + w.sum()).backward()
    opt.step_part([parts[0]])()  # (the read-only one is not stepped, so not refused)
    for first_part in (opt.step_part([w]), opt.step_part([parts[0]], check=[parts[0], w])):
        before = parts[0].detach().numpy().copy()
        with pytest.raises(ember.errors.OpError, match="parameter 1 of group 0"):
            first_part()  # (a split step's first part checks them all)
        np.testing.assert_array_equal(parts[0].detach().numpy(), before)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_decoupled_decay_of_half_precision_weights_as_torch(dtype):
    # p *= 1 - lr·wd through float32 with one rounding, as torch's mul_ (its scalar in
    # float32): NumPy's in-place *= rounds the factor to float16 for float16 weights
    results = []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.tensor([1.0, 0.9, -0.7, 3.0]).to(getattr(lib, dtype)))
        opt = lib.optim.AdamW([p], lr=0.1, weight_decay=0.1)
        for _ in range(9):
            p.grad = lib.zeros(4, dtype=getattr(lib, dtype))
            opt.step()
        results.append(p.detach().float().numpy())
    np.testing.assert_array_equal(*results)


HALF_CASES = [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
              ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
              ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True, weight_decay=0.1)),
              ("RMSprop", dict()), ("RMSprop", dict(alpha=0.3, centered=True)),
              ("RMSprop", dict(centered=True, momentum=0.9, weight_decay=0.1)),
              ("Adam", dict()), ("Adam", dict(amsgrad=True, weight_decay=0.1)),
              ("Adam", dict(decoupled_weight_decay=True, weight_decay=0.1, maximize=True)),
              ("AdamW", dict(amsgrad=True, lr=0.01, betas=(0.6, 0.9))),
              ("ASGD", dict(lr=0.1)), ("ASGD", dict(lr=0.1, t0=2, lambd=0.01, weight_decay=0.1)),
              ("Adagrad", dict(lr=0.1)), ("Adagrad", dict(lr_decay=0.1, eps=1e-3, maximize=True)),
              ("Adadelta", dict()), ("Adadelta", dict(rho=0.5, weight_decay=0.1, eps=3e-7)),
              ("Adamax", dict()), ("Adamax", dict(weight_decay=0.1, eps=0.01)),
              ("Adam", dict(eps=1e-3)), ("RMSprop", dict(eps=1e-3)),
              ("NAdam", dict()), ("NAdam", dict(decoupled_weight_decay=True, weight_decay=0.1)),
              ("RAdam", dict()), ("RAdam", dict(weight_decay=0.1, betas=(0.9, 0.6))),
              ("RAdam", dict(lr=0.1, betas=(0.9, 0.9))),
              ("Adafactor", dict()), ("Adafactor", dict(maximize=True, weight_decay=0.1, lr=0.05)),
              ("Adafactor", dict(eps=(1e-3, 1e-2), d=1.5, beta2_decay=-0.5))]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(("name", "kwargs"), HALF_CASES, ids=[f"{n}-{k}" for n, k in HALF_CASES])
def test_half_precision_weights_step_with_torchs_roundings(dtype, name, kwargs):
    # each torch op computes in float32 and rounds once; mul_'s scalar stays float32 and
    # add_'s alpha and add(eps) are rounded to the dtype: NumPy kept lr and eps in float32,
    # rounded SGD's momentum / RMSprop's alpha to float16 for float16 weights, and rounded
    # m / denom (Adam), g / avg (RMSprop) before the step size multiplied it
    # (128 elements, a multiple of torch's vector width: its scalar tail rounds otherwise)
    rng = np.random.default_rng(1)
    start = rng.standard_normal((8, 16)).astype(np.float32)
    steps = [rng.standard_normal((8, 16)).astype(np.float32) for _ in range(12)]
    results = []
    for lib in (ember, torch):
        dt = getattr(lib, dtype)
        p = lib.nn.Parameter(lib.tensor(start).to(dt))
        opt = getattr(lib.optim, name)([p], **kwargs)
        for g in steps:
            p.grad = lib.tensor(g).to(dt)
            opt.step()
        state = opt.state[p] if p in opt.state else {}
        results.append([p.detach().float().numpy()] + [
            (key, str(value.dtype)[-8:], value.float().numpy())
            for key, value in sorted(state.items()) if key != "step"])
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert [r[:2] for r in results[0][1:]] == [r[:2] for r in results[1][1:]]
    for mine, theirs in zip(results[0][1:], results[1][1:], strict=True):
        np.testing.assert_array_equal(mine[2], theirs[2])


TENSOR_LR_CASES = [("Adam", {}), ("AdamW", {}), ("Adam", dict(amsgrad=True, maximize=True)),
                   ("Adagrad", dict(lr_decay=0.01)), ("Adamax", {}), ("NAdam", {}),
                   ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
                   ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
                   ("ASGD", dict(lambd=0.01, t0=5)), ("Adafactor", dict(weight_decay=0.1))]


@pytest.mark.parametrize(("name", "kwargs"), TENSOR_LR_CASES,
                         ids=[f"{n}-{k}" for n, k in TENSOR_LR_CASES])
def test_a_float32_tensor_lr_rounds_its_step_sizes_to_float32_as_torch(name, kwargs):
    # PyTorch computes lr / bias_correction (and 1 - lr * weight_decay, ASGD's eta) as float32
    # tensor arithmetic (Adafactor: min(lr, 1/sqrt(t)) * rms): float64 parameters then move by
    # that rounded size (1e-9 apart before)
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(s) for s in [(3, 4), (5,), ()]]
    grads = [[rng.standard_normal(a.shape) for a in start] for _ in range(20)]
    ep = [ember.tensor(a.copy(), requires_grad=True) for a in start]
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in start]
    eo = getattr(ember.optim, name)(ep, lr=ember.tensor(0.01), **kwargs)
    to = getattr(torch.optim, name)(tp, lr=torch.tensor(0.01), **kwargs)
    for step in grads:
        for e, t, g in zip(ep, tp, step, strict=True):
            e.grad, t.grad = ember.tensor(g.copy()), torch.tensor(g.copy())
        eo.step()
        to.step()
    for e, t in zip(ep, tp, strict=True):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize(("name", "kwargs"), TENSOR_LR_CASES + [("Muon", {})],
                         ids=[f"{n}-{k}" for n, k in TENSOR_LR_CASES + [("Muon", {})]])
def test_a_float64_tensor_lr_leaves_float32_parameters_in_float32(name, kwargs):
    # a 0-d float64 tensor does not promote float32 tensors in PyTorch: the step is that of the
    # same lr as a Python float (a float64 NumPy scalar made it float64 arithmetic, rounded once)
    rng = np.random.default_rng(1)
    start = rng.standard_normal((6, 5)).astype(np.float32)
    grads = rng.standard_normal((5, 6, 5)).astype(np.float32)
    results = []
    for lr in (0.0123, ember.tensor(0.0123, dtype=ember.float64)):
        p = ember.tensor(start.copy(), requires_grad=True)
        opt = getattr(ember.optim, name)([p], lr=lr, **kwargs)
        for g in grads:
            p.grad = ember.tensor(g.copy())
            opt.step()
        results.append(p.detach().numpy())
    assert results[1].dtype == np.float32
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_decay_squares_is_torchs_fused_addcmul(dtype):
    # torch's half v.mul_(d).addcmul_(g, g, value=w) is fma(w * g, g, v) in float32: the
    # product (w * g) * g rounded to float32 first left 11 of 65536 bfloat16 (1 float16) off
    from ember.optim.elementwise import half_decay_squares_
    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    v, g = (torch.rand(1 << 16) * 0.01).to(dt), torch.randn(1 << 16).to(dt)
    expected = v.clone().mul_(0.999).addcmul_(g, g, value=1 - 0.999)
    mine = ember.tensor(v.float().numpy()).to(getattr(ember, dtype)).numpy().copy()
    half_decay_squares_(np, mine, 0.999, g.float().numpy(), 1 - 0.999)
    np.testing.assert_array_equal(mine.astype(np.float32), expected.float().numpy())


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16", "complex128"])
def test_rprop_nan_and_inf_gradients_step_as_torch(dtype):
    """PyTorch's sign(NaN) is 0: a NaN gradient (or inf times a zero prev) leaves the weight
    and its step size alone and the NaN is kept in prev (NumPy's sign(NaN) = NaN poisoned
    both for good)."""
    results = []
    for lib in (torch, ember):
        w = lib.tensor([1.0, 2.0, -3.0, 0.5]).to(getattr(lib, dtype)).requires_grad_()
        opt = lib.optim.Rprop([w], lr=0.1)
        for g in ([NAN, -1.0, 0.0, INF], [1.0, 1.0, NAN, -INF], [INF, 1.0, 2.0, 0.0],
                  [2.0, -1.0, 1.0, 1.0]):
            w.grad = lib.tensor(g).to(getattr(lib, dtype))
            opt.step()
        state = opt.state[w]
        wide = lib.float32 if dtype == "bfloat16" else getattr(lib, dtype)  # (torch's numpy())
        results.append([x.detach().to(wide).numpy()
                        for x in (w, state["step_size"], state["prev"])])
    for e, t in zip(results[1], results[0]):
        np.testing.assert_array_equal(e, t)
