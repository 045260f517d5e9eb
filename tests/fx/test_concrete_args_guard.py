"""A graph traced with ``concrete_args`` checks each call passes the specialized value, as
torch.fx's graph asserts (the graph ran the traced branch silently for another value:
``gm(x, True)`` gave ``x * 3`` where the module gives ``x * 2``)."""

import numpy as np
import pytest
import torch
import torch.fx

import ember
from ember.fx.tracer import SpecializedArgumentError


def _module(lib):
    class Branchy(lib.nn.Module):
        def forward(self, x, flag=True, y=None, n=2):
            r = x * 2 if flag else x * 3
            return (r if y is None else r + y) * n
    return Branchy()


CONCRETE = {"flag": False, "y": None, "n": 2}


@pytest.mark.parametrize("args", [(False,), (0,), (False, None, 2.0), (False, None, 2)])
def test_the_specialized_values_run_as_torch_fx(args):
    gm = ember.fx.symbolic_trace(_module(ember), concrete_args=CONCRETE)
    tgm = torch.fx.symbolic_trace(_module(torch), concrete_args=CONCRETE)
    x = [1.5, -2.0]
    out = gm(ember.tensor(x), *args)
    assert out.tolist() == tgm(torch.tensor(x), *args).tolist() == [9.0, -12.0]
    assert gm(ember.tensor(x)).tolist() == [9.0, -12.0]  # (the defaults are the values)
    assert gm(ember.tensor(x), n=2).tolist() == [9.0, -12.0]  # (by name: torch renames n)


@pytest.mark.parametrize("args, name", [((True,), "flag"), ((False, [1.0, 1.0]), "y"),
                                         ((False, None, 3), "n")])
def test_another_value_is_refused_as_torch_fx(args, name):
    gm = ember.fx.symbolic_trace(_module(ember), concrete_args=CONCRETE)
    tgm = torch.fx.symbolic_trace(_module(torch), concrete_args=CONCRETE)
    targs = tuple(torch.tensor(a) if isinstance(a, list) else a for a in args)
    eargs = tuple(ember.tensor(a) if isinstance(a, list) else a for a in args)
    with pytest.raises(AssertionError, match=name):
        tgm(torch.ones(2), *targs)
    with pytest.raises(SpecializedArgumentError, match=f"{name} was specialized .*Hint"):
        gm(ember.ones(2), *eargs)
    with pytest.raises(AssertionError):  # (also through the Interpreter)
        ember.fx.Interpreter(gm).run(ember.ones(2), *eargs)


def test_the_check_survives_dead_code_elimination():
    gm = ember.fx.symbolic_trace(_module(ember), concrete_args=CONCRETE)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    with pytest.raises(SpecializedArgumentError):
        gm(ember.ones(2), True)


def _to_module(lib, method):
    class To(lib.nn.Module):
        def forward(self, x, a=None):
            return getattr(x, method)(a) if method == "to" else x.contiguous(memory_format=a)
    return To()


@pytest.mark.parametrize("method, value, other", [
    ("to", "float64", "float16"), ("to", "cpu", "meta"),
    ("contiguous", "channels_last", "contiguous_format")])
def test_a_dtype_device_or_memory_format_is_checked_as_torch_fx(method, value, other):
    # (a dtype specialized to float64 ran a float16 call as float64, silently)
    def get(lib, name):
        return lib.device(name) if name in ("cpu", "meta") else getattr(lib, name)
    gm = ember.fx.symbolic_trace(_to_module(ember, method),
                                 concrete_args={"a": get(ember, value)})
    tgm = torch.fx.symbolic_trace(_to_module(torch, method),
                                  concrete_args={"a": get(torch, value)})
    x, tx = ember.ones(1, 2, 2, 2), torch.ones(1, 2, 2, 2)
    out, tout = gm(x, get(ember, value)), tgm(tx, get(torch, value))
    assert (out.stride(), str(out.dtype)[6:]) == (tout.stride(), str(tout.dtype)[6:])
    with pytest.raises(AssertionError, match="a has been specialized"):
        tgm(tx, get(torch, other))
    with pytest.raises(SpecializedArgumentError, match=f"a was specialized to .*{value}"):
        gm(x, get(ember, other))


@pytest.mark.parametrize("flag, n", [(np.False_, 2), (False, np.int64(2)), (False, "tensor"),
                                     (np.False_, np.float32(2.0)), (np.array(False), np.array(2)),
                                     (False, np.array([2]))])
def test_an_equal_value_of_another_type_runs_as_torch_fx(flag, n):
    # (np.int64(2), a 0-d tensor 2 or np.False_ were refused; torch.fx checks value == expected;
    # a 0-d or one-element ndarray was refused too, review56m4 item 2)
    gm = ember.fx.symbolic_trace(_module(ember), concrete_args=CONCRETE)
    tgm = torch.fx.symbolic_trace(_module(torch), concrete_args=CONCRETE)
    x = [1.5, -2.0]
    en, tn = (ember.tensor(2), torch.tensor(2)) if isinstance(n, str) else (n, n)
    out = gm(ember.tensor(x), flag, None, en)
    assert out.tolist() == tgm(torch.tensor(x), flag, None, tn).tolist() == [9.0, -12.0]


@pytest.mark.parametrize("n", [np.int64(3), "tensor", "2", np.array([2, 2]), np.array([3])])
def test_an_unequal_value_of_another_type_is_refused(n):
    gm = ember.fx.symbolic_trace(_module(ember), concrete_args=CONCRETE)
    with pytest.raises(SpecializedArgumentError, match="n was specialized to 2"):
        gm(ember.ones(2), False, None, ember.tensor([2, 2]) if str(n) == "tensor" else n)
