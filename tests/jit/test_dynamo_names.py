"""ember._dynamo: the torch._dynamo names scripts call (reset, is_compiling, disable)."""
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
