"""GraphModule.to_folder writes a package that imports and rebuilds the module, as torch.fx's:
same outputs, tensors, modes; constructor calls for the layers torch writes so, pickled
children otherwise (with torch's warning), and the generated code's globals imported."""

import importlib
import re
import sys
import uuid
import warnings

import pytest
import torch

import ember
from ember import fx


def scaled(x):
    return x * 2 + 1


fx.wrap("scaled")


def _load(tmp_path, gm, name="Net"):
    """A new instance of the class ``gm.to_folder`` wrote (under a package name of its own:
    imported packages stay in sys.modules)."""
    package = f"pkg_{uuid.uuid4().hex}"
    gm.to_folder(tmp_path / package, name)
    sys.path.insert(0, str(tmp_path))
    try:
        return getattr(importlib.import_module(package), name)()
    finally:
        sys.path.remove(str(tmp_path))


def _same_tensors(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert sa[k].dtype is sb[k].dtype and ember.equal(sa[k], sb[k]), k


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 5))


def test_cnn_reloads_with_same_outputs_and_pickles_what_torch_pickles(tmp_path):
    model = _cnn(ember.nn)
    model(ember.randn(4, 3, 8, 8))  # (running statistics that are not the defaults)
    gm = fx.symbolic_trace(model.eval())
    with pytest.warns(UserWarning, match=r"children \['2', '3'\] cannot be rebuilt"):
        net = _load(tmp_path, gm)
    x = ember.randn(2, 3, 8, 8)
    assert ember.equal(net(x), gm(x))
    _same_tensors(net, gm)
    assert not net.training and not getattr(net, "1").training
    # torch writes the same files for the same model
    t_gm = torch.fx.symbolic_trace(_cnn(torch.nn).eval())
    with pytest.warns(UserWarning, match=r"pickled files instead: \['2', '3'\]"):
        t_gm.to_folder(tmp_path / "torch_pkg", "Net")
    ours, = ({p.name for p in d.iterdir()} - {"__pycache__"} for d in tmp_path.iterdir()
             if d.name.startswith("pkg_"))
    assert ours == {p.name for p in (tmp_path / "torch_pkg").iterdir()}


def test_constants_parameters_and_wrapped_functions(tmp_path):
    class Model(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.nn.Parameter(ember.randn(3))
            self.register_buffer("table", ember.arange(3.0), persistent=False)
            self.block = ember.nn.Sequential(ember.nn.Linear(3, 3, dtype=ember.float64))

        def forward(self, x):
            y = scaled(x * self.scale + self.table + ember.tensor([1.0, 2.0, 3.0]))
            return self.block(y.double()).sum(-1)

    gm = fx.symbolic_trace(Model())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (block is a Sequential: pickled)
        net = _load(tmp_path, gm)
    x = ember.randn(2, 3)
    assert ember.equal(net(x), gm(x))
    assert getattr(net.block, "0").weight.dtype is ember.float64
    assert list(net.state_dict()) == list(gm.state_dict())  # (non-persistent stay so)
    assert ember.equal(net.table, gm.table)
    code, = ((d / "module.py").read_text() for d in tmp_path.iterdir())
    assert re.search(r"^from [\w.]*test_to_folder import scaled as scaled_1$", code, re.M)
    assert net.scale.requires_grad
    ember.autograd.grad(net(x).sum(), net.scale)


def test_a_layer_whose_repr_does_not_rebuild_it_is_pickled(tmp_path):
    # (torch writes `padding_mode=reflect`, a NameError on import, and a float64 Linear as a
    # float32 one whose weights load_state_dict then rounds)
    model = ember.nn.Sequential(ember.nn.Conv1d(2, 2, 3, padding=1, padding_mode="reflect",
                                                dtype=ember.float64),
                                ember.nn.Linear(5, 2, dtype=ember.float64))
    gm = fx.symbolic_trace(model)
    with pytest.warns(UserWarning, match=r"\['0', '1'\]"):
        net = _load(tmp_path, gm)
    x = ember.randn(1, 2, 5, dtype=ember.float64)
    assert ember.equal(net(x), gm(x))
    _same_tensors(net, gm)


def test_local_function_in_the_graph_is_refused(tmp_path):
    def local(x):
        return x + 1

    g = fx.Graph()
    g.output(g.call_function(local, (g.placeholder("x"),)))
    gm = fx.GraphModule(ember.nn.Module(), g)
    with pytest.raises(ValueError, match="cannot be imported by name"):
        gm.to_folder(tmp_path / "pkg", "Net")
    with pytest.raises(ValueError, match="identifier"):
        gm.to_folder(tmp_path / "pkg", "my-net")
