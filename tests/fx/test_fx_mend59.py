"""mend59d: fixes from review59d of ember.fx, checked against torch 2.13's torch.fx."""
import operator
import warnings

import torch
import torch.fx

import ember


def _trace_adding_a_buffer_late(lib):
    class T(lib.fx.Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            if kind == "output" and not hasattr(self.root, "extra"):
                c = self.graph.get_attr("extra")                  # the node first ...
                self.root.register_buffer("extra", lib.ones(1))   # ... then the tensor
                args = (self.graph.call_function(operator.add, (args[0], c)),)
            return super().create_node(kind, target, args, kwargs, name, type_expr)

    class M(lib.nn.Module):
        def forward(self, x):
            return x * 2

    m = M()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm = lib.fx.GraphModule(m, T().trace(m))
    warned = [str(w.message) for w in caught if "get_attr" in str(w.message)]
    return gm(lib.ones(1)).tolist(), warned


def test_a_tracer_adding_get_attr_before_its_buffer_does_not_warn_as_torch():
    assert _trace_adding_a_buffer_late(ember) == _trace_adding_a_buffer_late(torch) == ([3.0], [])
