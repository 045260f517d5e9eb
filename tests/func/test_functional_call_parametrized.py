"""``functional_call(m, {"weight": w})`` on a module whose weight is parametrized
(``nn.utils.parametrize``) runs the parametrization on ``right_inverse(w)``, as torch.func's
(which assigns ``m.weight = w``); Ember used ``w`` itself as the weight. Without
``right_inverse`` it is refused, as torch's; the ``parametrizations.weight.original`` key gives
the original directly."""

import importlib

import pytest
import torch
import torch.func

import ember
import ember.func


def _run(lib, with_inverse, key):
    P = importlib.import_module(lib.__name__ + ".nn.utils.parametrize")

    class Sym(lib.nn.Module):
        def forward(self, w):
            return w + w.T

    class SymInverse(Sym):
        def right_inverse(self, w):
            return w / 2
    m = lib.nn.Linear(2, 2, bias=False).double()
    P.register_parametrization(m, "weight", SymInverse() if with_inverse else Sym())
    before = m.parametrizations.weight.original.tolist()
    w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64)
    out = lib.func.functional_call(m, {key: w}, (lib.tensor([[1.0, 0.5]], dtype=lib.float64),))
    # (torch's restores the original through right_inverse(weight): not the same tensor
    # unless the parametrization is a bijection; Ember's puts the original back)
    if lib is ember:
        assert m.parametrizations.weight.original.tolist() == before
    return out.tolist()


@pytest.mark.parametrize("with_inverse", [True, False])
@pytest.mark.parametrize("key", ["weight", "parametrizations.weight.original"])
def test_functional_call_runs_the_parametrization_as_torch_func(key, with_inverse):
    if key == "weight" and not with_inverse:
        with pytest.raises(RuntimeError, match="Sym does not implement right_inverse"):
            _run(torch, with_inverse, key)
        with pytest.raises(RuntimeError, match="Sym does not implement right_inverse"):
            _run(ember, with_inverse, key)
        return
    assert _run(ember, with_inverse, key) == _run(torch, with_inverse, key)


def test_the_gradient_reaches_the_given_weight():
    m = ember.nn.Linear(2, 2, bias=False).double()

    class Scale(ember.nn.Module):
        def forward(self, w):
            return w * 3

        def right_inverse(self, w):
            return w.exp()
    ember.nn.utils.parametrize.register_parametrization(m, "weight", Scale())
    x = ember.tensor([[1.0, -0.5]], dtype=ember.float64)
    w = ember.tensor([[0.1, 0.2], [0.3, -0.4]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda w: ember.func.functional_call(m, {"weight": w}, (x,)), (w,))


def test_a_parametrized_name_and_its_original_together_are_refused():
    m = ember.nn.Linear(2, 2, bias=False)

    class Same(ember.nn.Module):
        def forward(self, w):
            return w

        def right_inverse(self, w):
            return w
    ember.nn.utils.parametrize.register_parametrization(m, "weight", Same())
    with pytest.raises(ember.errors.ArgumentError, match="give one"):
        ember.func.functional_call(m, {"weight": ember.ones(2, 2),
                                       "parametrizations.weight.original": ember.ones(2, 2)},
                                   (ember.ones(1, 2),))


@pytest.mark.parametrize("key, ok", [("weight", False),
                                     ("parametrizations.weight.original", True)])
def test_strict_mode_takes_the_originals_name_as_torch_func(key, ok):
    # (Ember's strict check ran after the parametrized name became its original: accepted)
    messages = []
    for lib in (ember, torch):
        P = importlib.import_module(lib.__name__ + ".nn.utils.parametrize")

        class Twice(lib.nn.Module):
            def forward(self, w):
                return w * 2

            def right_inverse(self, w):
                return w / 2
        m = lib.nn.Linear(2, 2, bias=False)
        P.register_parametrization(m, "weight", Twice())
        call = lambda m=m, lib=lib: lib.func.functional_call(  # noqa: E731
            m, {key: lib.ones(2, 2)}, (lib.ones(1, 2),), strict=True)
        if ok:
            messages.append(call().tolist())
            continue
        with pytest.raises(RuntimeError) as info:
            call()
        messages.append(str(info.value))
    assert messages[0] == messages[1]
