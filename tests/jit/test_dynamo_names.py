"""ember._dynamo: the torch._dynamo names scripts call (reset, is_compiling, disable, set_stance,
mark_dynamic, maybe_mark_dynamic, mark_static)."""
import pytest
import torch

import ember


def test_reset_makes_compiled_functions_trace_again_as_torch():
    traced = []

    @ember.compile
    def double(x):
        traced.append(1)
        return x * 2

    double(ember.ones(2))
    double(ember.ones(2))
    ember._dynamo.reset()
    double(ember.ones(2))
    assert len(traced) == 2
    torch._dynamo.reset()  # the same call is valid there


def test_is_compiling_and_disable_are_the_compiler_ones():
    assert ember._dynamo.is_compiling() is torch._dynamo.is_compiling() is False
    assert ember._dynamo.disable is ember.compiler.disable
    assert ember._dynamo.reset is ember.compiler.reset


def test_shape_marks_are_accepted_and_every_size_matches_eager():
    x = ember.arange(24.0).reshape(8, 3)
    ember._dynamo.mark_dynamic(x, 0, min=2, max=8)
    ember._dynamo.maybe_mark_dynamic(x, [0, 1])
    ember._dynamo.mark_static(x)
    assert ember._dynamo.mark_static(ember.nn.Linear) is ember.nn.Linear  # (torch's: a class)
    assert torch._dynamo.mark_static(torch.nn.Linear) is torch.nn.Linear
    with pytest.raises(TypeError, match="mark_static: expected a tensor or an nn.Module class, "
                       "got Linear; hint: pass its class"):
        ember._dynamo.mark_static(ember.nn.Linear(2, 2))  # (torch raises a TypeError too)
    torch._dynamo.mark_dynamic(torch.ones(4, 3), 0, min=2, max=8)  # (the same calls)
    total = ember.compile(lambda t: t.sum(0) * t.shape[0])
    for n in (4, 2, 7):
        assert total(x[:n]).tolist() == (x[:n].sum(0) * len(x[:n])).tolist()
    with pytest.raises(TypeError, match="mark_dynamic: expected a tensor, got list"):
        ember._dynamo.mark_dynamic([1.0], 0)


def test_compiler_graph_markers_give_the_function_back():
    def scaled(x):
        return x * 2

    assert ember.compiler.allow_in_graph(scaled) is scaled
    assert ember.compiler.allow_in_graph([scaled, ember.sin]) == [scaled, ember.sin]
    assert ember.compiler.assume_constant_result(scaled) is scaled
    g = ember.compile(lambda x: ember.compiler.allow_in_graph(scaled)(x) + 1)
    assert g(ember.ones(2)).tolist() == [3.0, 3.0]
    assert torch.compiler.allow_in_graph(scaled) is scaled  # (torch's gives it back too)
    with pytest.raises(ValueError, match="allow_in_graph: expected a function, got int"):
        ember.compiler.allow_in_graph(3)
