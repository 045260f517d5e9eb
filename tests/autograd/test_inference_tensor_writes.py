"""Inference tensors outside ``inference_mode``: in-place writes (every path: methods,
operators, indexing, fills, ``out=``, shape and storage changes, views) and
``requires_grad_`` are refused as PyTorch refuses them, before anything is written; reads,
clones and writes inside the mode are allowed. Each case is checked against torch."""

import operator

import pytest
import torch

import ember

_WRITES = {
    "add_": lambda lib, x: x.add_(1),
    "iadd": lambda lib, x: operator.iadd(x, 1),
    "setitem": lambda lib, x: x.__setitem__(0, 5.0),
    "index_put_": lambda lib, x: x.index_put_((lib.tensor([0]),), lib.tensor([1.0])),
    "copy_": lambda lib, x: x.copy_(lib.zeros(3)),
    "zero_": lambda lib, x: x.zero_(),
    "fill_": lambda lib, x: x.fill_(3),
    "normal_": lambda lib, x: x.normal_(),
    "clamp_": lambda lib, x: x.clamp_(0, 0.5),
    "relu inplace": lambda lib, x: lib.nn.functional.relu(x, inplace=True),
    "init.zeros_": lambda lib, x: lib.nn.init.zeros_(x),
    "view add_": lambda lib, x: x.view(3).add_(1),
    "slice add_": lambda lib, x: x[1:].mul_(2),
    "out=": lambda lib, x: lib.add(lib.zeros(3), 1, out=x),
    "out= factory": lambda lib, x: lib.zeros(3, out=x),
    "out= tuple": lambda lib, x: lib.sort(lib.zeros(3), out=(x, lib.empty(3, dtype=lib.long))),
    "unsqueeze_": lambda lib, x: x.unsqueeze_(0),
    "resize_": lambda lib, x: x.resize_(2),
    "set_": lambda lib, x: x.set_(lib.zeros(3)),
}


def _inference_ones(lib):
    with lib.inference_mode():
        return lib.ones(3)


@pytest.mark.parametrize("case", sorted(_WRITES))
def test_inplace_write_outside_inference_mode_is_refused_as_in_torch(case):
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        _WRITES[case](torch, _inference_ones(torch))
    x = _inference_ones(ember)
    with pytest.raises(ember.errors.GradError,
                       match="Inplace update to inference tensor outside InferenceMode"):
        _WRITES[case](ember, x)
    assert x.tolist() == [1.0, 1.0, 1.0] and x.shape == (3,)  # nothing written
    with ember.no_grad(), pytest.raises(ember.errors.GradError, match="inference tensor"):
        _WRITES[case](ember, x)  # no_grad is not inference mode


@pytest.mark.parametrize("case", sorted(_WRITES))
def test_writes_inside_inference_mode_and_into_clones_are_allowed(case):
    for lib in (torch, ember):
        x = _inference_ones(lib)
        with lib.inference_mode():
            _WRITES[case](lib, x)
        _WRITES[case](lib, _inference_ones(lib).clone())


def test_requires_grad_and_parameter_are_refused_as_in_torch():
    for lib in (torch, ember):
        x = _inference_ones(lib)
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference"):
            x.requires_grad_()
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference"):
            lib.nn.Parameter(x)
        assert not x.requires_grad
        x.requires_grad_(False)  # allowed, as is a parameter that needs no grad
        assert not lib.nn.Parameter(x, requires_grad=False).requires_grad
        assert x.clone().requires_grad_().requires_grad
        with lib.inference_mode():
            assert x.requires_grad_().requires_grad


def test_normal_tensors_and_their_views_made_in_inference_mode_stay_writable():
    for lib in (torch, ember):
        z = lib.ones(3)
        with lib.inference_mode():
            v = z[:2]
            v.add_(1)  # a normal tensor's memory, written inside the mode
        v.add_(1)
        assert not v.is_inference() and z.tolist() == [3.0, 3.0, 1.0]
        x = _inference_ones(lib)
        assert (x + 1).tolist() == [2.0, 2.0, 2.0]
        lib.empty(3).copy_(x)  # an inference tensor as the source of a write


_NAMED_WRITES = {  # (each write goes through another op; the error names the one called)
    "random_": lambda lib, x: x.random_(0, 3),
    "exponential_": lambda lib, x: x.exponential_(),
    "geometric_": lambda lib, x: x.geometric_(0.5),
    "log_normal_": lambda lib, x: x.log_normal_(),
    "cauchy_": lambda lib, x: x.cauchy_(),
    "nn.init.normal_": lambda lib, x: lib.nn.init.normal_(x),
    "nn.init.kaiming_uniform_": lambda lib, x: lib.nn.init.kaiming_uniform_(x.view(3, 1)),
    "nn.init.orthogonal_": lambda lib, x: lib.nn.init.orthogonal_(x.view(3, 1)),
    "nn.init.constant_": lambda lib, x: lib.nn.init.constant_(x, 2.0),
}


@pytest.mark.parametrize("name", sorted(_NAMED_WRITES))
def test_a_write_through_another_op_names_the_op_called(name):
    # (they said "__setitem__: Inplace update…" and "random_: copy_: Inplace update…")
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        _NAMED_WRITES[name](torch, _inference_ones(torch))
    x = _inference_ones(ember)
    state = ember.get_rng_state()
    with pytest.raises(ember.errors.GradError, match=rf"^{name}: Inplace update to inference"):
        _NAMED_WRITES[name](ember, x)
    assert x.tolist() == [1.0, 1.0, 1.0]
    assert ember.equal(ember.get_rng_state(), state)  # refused before drawing
    with ember.inference_mode():
        _NAMED_WRITES[name](ember, x)


def test_load_state_dict_into_an_inference_model_lists_the_refusal_as_torch():
    for lib in (torch, ember):
        with lib.inference_mode():
            m = lib.nn.Linear(2, 1)
        with pytest.raises(RuntimeError, match=r'(?s)While copying the parameter named "weight"'
                           r".*Inplace update to inference tensor"):
            m.load_state_dict({"weight": lib.zeros(1, 2), "bias": lib.zeros(1)})
    with pytest.raises(RuntimeError) as info:  # (it said "__setitem__: Inplace update…")
        m.load_state_dict({"weight": ember.zeros(1, 2), "bias": ember.zeros(1)})
    assert "__setitem__" not in str(info.value)


def _adam_state_made_in_inference_mode(lib):
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.Adam([p], lr=0.1)
    p.grad = lib.ones(2)
    with lib.inference_mode():
        opt.step()
    return p, opt


def _inference_parameter(lib):
    with lib.inference_mode():
        m = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    m.weight.grad = lib.ones(1, 2)
    return m.weight, opt


def _inference_grad(lib):
    p = lib.nn.Parameter(lib.ones(2))
    with lib.inference_mode():
        p.grad = lib.ones(2)
    return p, lib.optim.SGD([p], lr=0.1)


_RAW_WRITES = {  # (paths that write backend arrays directly, past the in-place ops' check)
    "step into inference state": (_adam_state_made_in_inference_mode, lambda p, opt: opt.step(),
                                  r"Adam.step \(its state 'step'\)"),
    "step of an inference parameter": (_inference_parameter, lambda p, opt: opt.step(),
                                       "SGD.step"),
    "zero_grad of an inference grad": (_inference_grad, lambda p, opt: opt.zero_grad(False),
                                       "zero_grad"),
    "backward into an inference grad": (_inference_grad,
                                        lambda p, opt: (p * 2).sum().backward(), "backward"),
}


@pytest.mark.parametrize("case", sorted(_RAW_WRITES))
def test_optimizer_and_grad_accumulation_writes_are_refused_as_in_torch(case):
    make, write, name = _RAW_WRITES[case]
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        write(*make(torch))
    p, opt = make(ember)
    before = p.detach().clone(), p.grad.clone()
    with pytest.raises(ember.errors.GradError, match=rf"^{name}.*: Inplace update to inference"):
        write(p, opt)
    assert ember.equal(p.detach(), before[0]) and ember.equal(p.grad, before[1])
    with ember.inference_mode():  # (inside the mode, as in torch, the write is allowed)
        write(p, opt) if "backward" not in case else opt.zero_grad(False)


def test_state_loaded_inside_inference_mode_is_refused_by_a_step_outside():
    # (load_state_dict copies the state: inside the mode into inference tensors, which torch
    # would refuse to write; outside into normal ones, which a step may write)
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2)
    opt.step()
    saved = opt.state_dict()
    with ember.inference_mode():
        opt.load_state_dict(saved)
    assert opt.state[p]["exp_avg"].is_inference()
    with pytest.raises(ember.errors.GradError, match=r"^Adam.step \(its state 'step'\)"):
        opt.step()
    opt.load_state_dict(saved)
    opt.step()
    assert int(opt.state[p]["step"]) == 2


def _state_set_by_hand(lib, name, key):
    """An optimizer after one step whose state ``key`` a hand replaced with an inference
    tensor made earlier (no step nor load_state_dict inside the mode)."""
    p = lib.nn.Parameter(lib.ones(3))
    p.grad = lib.ones(3)
    opt = {"Adam": lambda: lib.optim.Adam([p]), "AdamW": lambda: lib.optim.AdamW([p]),
           "SGD": lambda: lib.optim.SGD([p], lr=0.1, momentum=0.9),
           "RMSprop": lambda: lib.optim.RMSprop([p])}[name]()
    opt.step()
    with lib.inference_mode():
        value = opt.state[p][key].clone()
    opt.state[p][key] = value
    return p, opt


@pytest.mark.parametrize("name, key", [("Adam", "exp_avg"), ("Adam", "step"),
                                       ("AdamW", "exp_avg_sq"), ("SGD", "momentum_buffer"),
                                       ("RMSprop", "square_avg")])
def test_inference_state_set_by_hand_is_refused_by_a_step_as_torch(name, key):
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        _state_set_by_hand(torch, name, key)[1].step()
    p, opt = _state_set_by_hand(ember, name, key)
    before = p.detach().clone()
    with pytest.raises(ember.errors.GradError, match=rf"^{name}.step \(its state '{key}'\)"):
        opt.step()
    assert ember.equal(p.detach(), before)


def _lbfgs_with_inference_state(lib, key):
    x = lib.nn.Parameter(lib.tensor([1.5, -0.5]))
    opt = lib.optim.LBFGS([x], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((x - 1) ** 2).sum() + (x ** 4).sum()
        loss.backward()
        return loss

    opt.step(closure)
    opt.step(closure)
    state = opt.state[x]
    with lib.inference_mode():
        value = state[key]
        state[key] = [v.clone() for v in value] if isinstance(value, list) else value.clone()
    return lambda: opt.step(closure)


@pytest.mark.parametrize("key", ["prev_flat_grad", "d", "old_dirs", "old_stps"])
def test_lbfgs_refuses_inference_state_where_torch_writes_it_in_place(key):
    # (torch copies into prev_flat_grad; the direction and the history lists it replaces)
    results = []
    for lib in (torch, ember):
        try:
            _lbfgs_with_inference_state(lib, key)()
            results.append(None)
        except RuntimeError as error:
            assert "Inplace update to inference tensor" in str(error)
            results.append("refused")
    assert results[0] == results[1] == ("refused" if key == "prev_flat_grad" else None)
