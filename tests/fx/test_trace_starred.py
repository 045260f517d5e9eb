"""``symbolic_trace`` of a ``forward(self, x, *xs)`` or ``forward(self, x, **kw)``: the tuple
(or dict) is one placeholder named ``*xs`` whose items are ``getitem`` nodes, as torch.fx
traces it (Ember refused: "Ember's tracer needs named parameters")."""

import functools

import pytest
import torch
import torch.fx

import ember


def _starred(lib):
    class Starred(lib.nn.Module):
        def forward(self, x, *xs):
            return x * xs[0] + xs[1].sum()
    return Starred()


def _keywords(lib):
    class Keywords(lib.nn.Module):
        def forward(self, x, y=2.0, **kw):
            return x * y + kw["a"]
    return Keywords()


VALUES = ([1.0, 2.0], [3.0, -1.0], [0.5, 0.25])


def test_star_args_as_torch_fx():
    gm = ember.fx.symbolic_trace(_starred(ember))
    tgm = torch.fx.symbolic_trace(_starred(torch))
    assert [(n.op, n.name, str(n.target)) for n in gm.graph.nodes if n.op == "placeholder"] == \
        [(n.op, n.name, str(n.target)) for n in tgm.graph.nodes if n.op == "placeholder"] == \
        [("placeholder", "x", "x"), ("placeholder", "_xs", "*xs")]
    expected = tgm(*map(torch.tensor, VALUES)).tolist()
    assert gm(*map(ember.tensor, VALUES)).tolist() == expected
    assert ember.fx.Interpreter(gm).run(*map(ember.tensor, VALUES)).tolist() == expected
    new = ember.fx.Transformer(gm).transform()
    assert new(*map(ember.tensor, VALUES)).tolist() == expected


def test_star_star_kwargs_as_torch_fx():
    gm = ember.fx.symbolic_trace(_keywords(ember))
    tgm = torch.fx.symbolic_trace(_keywords(torch))
    x, a = VALUES[:2]
    expected = tgm(torch.tensor(x), 3.0, a=torch.tensor(a)).tolist()
    assert gm(ember.tensor(x), 3.0, a=ember.tensor(a)).tolist() == expected
    assert "def forward(self, x, y = 2.0, **kw)" in gm.code
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == \
        [n.name for n in tgm.graph.nodes if n.op == "placeholder"] == ["x", "y", "_kw"]


def test_star_args_with_keyword_only_parameters_are_refused_clearly():
    class Mixed(ember.nn.Module):
        def forward(self, *xs, k=1):
            return xs[0] * k
    with pytest.raises(NotImplementedError, match="keyword-only.*Hint"):
        ember.fx.symbolic_trace(Mixed())


def test_a_function_with_star_args():
    def f(*a):
        return a[0] + a[1]
    gm = ember.fx.symbolic_trace(f)
    assert gm(ember.tensor(1.0), ember.tensor(2.0)).item() == 3.0


def _decorated(lib, starred):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kw):
            return fn(*args, **kw)
        return wrapper

    class Decorated(lib.nn.Module):
        if starred:
            @deco
            def forward(self, x, *xs):
                return x + xs[0]
        else:
            @deco
            def forward(self, x, y):
                return x + y
    return Decorated()


def test_a_decorated_forward_taking_star_args_is_refused_clearly():
    # (a raw TypeError "wrapper() takes 2 positional arguments but 3 were given": the
    # signature read was the wrapped function's, the code rewritten the wrapper's;
    # torch.fx fails too, with "co_varnames is too small")
    with pytest.raises(ValueError):
        torch.fx.symbolic_trace(_decorated(torch, True))
    with pytest.raises(NotImplementedError, match="decorator.*Hint: trace a wrapper"):
        ember.fx.symbolic_trace(_decorated(ember, True))
    gm = ember.fx.symbolic_trace(_decorated(ember, False))  # (named parameters: traced)
    assert gm(ember.tensor(1.0), ember.tensor(2.0)).item() == 3.0
