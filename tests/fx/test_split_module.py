"""ember.fx.passes.split_module against torch.fx.passes.split_module (torch 2.13): the
generated code of the outer module and of each partition, qualname_map, outputs and
gradients."""

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.split_module import split_module as torch_split

import ember
import ember.fx
from ember.fx.passes.split_module import split_module


def _model(lib, rs):
    """The same network in torch and in Ember (Ember's takes torch's weights)."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.param = nn.Parameter(lib.tensor(rs.rand(3, 4).astype(np.float32)))
            self.linear = nn.Linear(4, 5)
            self.seq = nn.Sequential(nn.Linear(5, 5), nn.ReLU())

        def forward(self, x, y, scale=2.0):
            z = self.linear(x + self.param).clamp(min=0.0, max=1.0)
            w = self.linear(y).clamp(min=0.0, max=1.0)
            return self.seq(z + w).sum(dim=1, keepdim=True) * scale, x

    if lib is torch:
        return Net()
    net, twin = Net(), _model(torch, np.random.RandomState(0))
    net.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in twin.state_dict().items()})
    return net


def _callbacks():
    def by_position(step):
        def callback(node):
            callback.seen += 1
            return step(callback.seen)
        callback.seen = -1
        return callback

    first = ("add", "linear", "clamp")
    return {"pairs": by_position(lambda i: i // 2), "down": by_position(lambda i: 9 - i // 3),
            "halves": lambda n: 0 if n.name in first else 1,
            "reversed": lambda n: 1 if n.name in first else 0, "one": lambda n: 7}


def _split(lib, fx, split, kind, options):
    torch.manual_seed(0)
    model = _model(lib, np.random.RandomState(0))
    qualnames = {}
    parts = split(fx.symbolic_trace(model), model, _callbacks()[kind], qualname_map=qualnames,
                  **options)

    def text(gm):
        return gm.code.strip().replace("torch.", "").replace("ember.", "")

    x, y = (lib.tensor(np.random.RandomState(s).randn(3, 4).astype(np.float32),
                       requires_grad=True) for s in (1, 2))
    out, same_x = parts(x, y)
    out.sum().backward()
    return (text(parts), {name: text(child) for name, child in parts.named_children()},
            sorted(qualnames.items()), sorted(parts.meta["partition_names"]),
            sorted(name for name, _ in parts.named_parameters()), same_x is x), \
        [t.detach().numpy() for t in (out, x.grad, y.grad)]


@pytest.mark.parametrize("kind", ["pairs", "down", "halves", "reversed", "one"])
@pytest.mark.parametrize("options", [{}, {"keep_original_order": True},
                                     {"keep_original_node_name": True},
                                     {"keep_original_input_name": False},
                                     {"partition_affix": "pp"}, {"tuple_return": True}])
def test_split_module_matches_torch(kind, options):
    want, want_values = _split(torch, torch.fx, torch_split, kind, options)
    got, got_values = _split(ember, ember.fx, split_module, kind, options)
    assert got == want
    for g, w in zip(got_values, want_values):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_partitions_that_read_each_other_are_refused_as_torch():
    def alternate(node):
        alternate.seen += 1
        return alternate.seen % 2
    for lib, fx, split in ((torch, torch.fx, torch_split), (ember, ember.fx, split_module)):
        alternate.seen = -1
        model = _model(lib, np.random.RandomState(0))
        with pytest.raises(RuntimeError, match="cycle exists between partitions"):
            split(fx.symbolic_trace(model), model, alternate)
