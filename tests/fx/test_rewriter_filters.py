"""``replace_pattern`` of a pattern returning several values, and
``replace_pattern_with_filters`` (match filters, ignore_literals, a replacement callback),
against torch.fx's subgraph rewriter (Ember refused a tuple pattern: "the pattern must return
a single value", and had no replace_pattern_with_filters)."""

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx import subgraph_rewriter as trw

import ember


def _both(make):
    return make(ember, ember.fx), make(torch, torch.fx)


def _check(gm, tgm, *shapes):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) for s in shapes]
    out = gm(*[ember.tensor(x, dtype=ember.float64) for x in xs])
    expected = tgm(*[torch.tensor(x, dtype=torch.float64) for x in xs])
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)


def _multi(M, X):
    class Net(M.nn.Module):
        def forward(self, x, y):
            a = x.sin()
            z = y * 3  # (an input of the second output, made after the first)
            b = (x + z).cos()
            return a * b + a
    return X.symbolic_trace(Net())


def test_a_pattern_returning_two_values_as_torch_fx():
    gm, tgm = _both(_multi)
    for g, rewrite in ((gm, ember.fx.replace_pattern), (tgm, trw.replace_pattern)):
        found = rewrite(g, lambda x, z: (x.sin(), (x + z).cos()),
                        lambda x, z: (x.sin() * 2, (x - z).cos()))
        assert len(found) == 1
    _check(gm, tgm, (3,), (3,))
    assert "sub" in gm.code and "add = " not in gm.code.split("cos")[0]
    gm.graph.lint()


def test_the_replacement_must_return_as_many_values():
    gm, _ = _both(_multi)
    with pytest.raises(ember.errors.ArgumentError, match="returns 2 values but the replacement 1"):
        ember.fx.replace_pattern(gm, lambda x, z: (x.sin(), (x + z).cos()), lambda x, z: x)


def _literals(M, X):
    return X.symbolic_trace(lambda x: (x + 1) * (x + 2) + (x * 3))


@pytest.mark.parametrize("ignore_literals", [False, True])
def test_ignore_literals_as_torch_fx(ignore_literals):
    # (a literal of the pattern matches any argument, also mul + mul_1, as torch's does)
    gm, tgm = _both(_literals)
    found = ember.fx.replace_pattern_with_filters(gm, lambda x: x + 1, lambda x: x - 1,
                                                  ignore_literals=ignore_literals)
    expected = trw.replace_pattern_with_filters(tgm, lambda x: x + 1, lambda x: x - 1,
                                                ignore_literals=ignore_literals)
    assert len(found) == len(expected) == (3 if ignore_literals else 1)
    assert [len(r.replacements) for r in found] == [len(r.replacements) for r in expected]
    _check(gm, tgm, (4,))


def test_match_filters_and_a_replacement_callback_as_torch_fx():
    def keep_used_by_mul(match, graph, pattern_graph):
        return all(u.target in ("mul", __import__("operator").mul)
                   for n in match.returning_nodes for u in n.users)

    gm, tgm = _both(_literals)
    for lib, fx, g, rewrite in ((ember, ember.fx, gm, ember.fx.replace_pattern_with_filters),
                                (torch, torch.fx, tgm, trw.replace_pattern_with_filters)):
        calls = []

        def callback(match, graph, pattern_graph, lib=lib, fx=fx, calls=calls):
            calls.append(len(match.placeholder_nodes))
            return fx.symbolic_trace(lambda x: lib.tanh(x)).graph

        done = rewrite(g, lambda x: x + 1, match_filters=[keep_used_by_mul],
                       ignore_literals=True, replacement_callback=callback)
        assert len(done) == 2 and calls == [1, 1]
    _check(gm, tgm, (4,))


def test_one_of_replacement_and_callback():
    gm, _ = _both(_literals)
    with pytest.raises(ember.errors.ArgumentError, match="one of replacement"):
        ember.fx.replace_pattern_with_filters(gm, lambda x: x + 1)


def _dead(M, X):
    def f(x):
        a = M.relu(x)  # noqa: F841 (the outputs are used nowhere)
        y = x * 2  # (an input of the second output, made after the first)
        b = M.sigmoid(y)  # noqa: F841
        return x + 1
    return X.symbolic_trace(f)


def test_a_tuple_pattern_with_dead_outputs_and_a_late_input_as_torch_fx():
    # (a bare StopIteration: no node outside the match uses an output)
    gm, tgm = _both(_dead)
    assert len(ember.fx.replace_pattern(gm, lambda x, y: (ember.relu(x), ember.sigmoid(y)),
                                        lambda x, y: (ember.tanh(x), ember.exp(y)))) == 1
    assert len(trw.replace_pattern(tgm, lambda x, y: (torch.relu(x), torch.sigmoid(y)),
                                   lambda x, y: (torch.tanh(x), torch.exp(y)))) == 1
    assert "tanh" in gm.code and "exp" in gm.code and "relu" not in gm.code
    gm.graph.lint()
    _check(gm, tgm, (3,))
