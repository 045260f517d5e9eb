"""ember.export of models returning tensors no operation computed (constants, possibly sized
by a dynamic dim): the program returns them, as torch.export's does."""

import io

import numpy as np
import torch
import torch.export

import ember
from ember.export import Dim


class ConstantOutputs(ember.nn.Module):
    def forward(self, x):
        return x * 2, x.new_zeros(2), ember.ones(x.shape[0]), ember.arange(x.shape[0])


class TorchConstantOutputs(torch.nn.Module):
    def forward(self, x):
        return x * 2, x.new_zeros(2), torch.ones(x.shape[0]), torch.arange(x.shape[0])


def assert_same_outputs(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_constant_outputs_run_and_save():
    x = np.ones((3, 4), np.float32)
    ep = ember.export.export(ConstantOutputs(), (ember.tensor(x),))
    want = torch.export.export(TorchConstantOutputs(), (torch.tensor(x),)).module()(
        torch.tensor(x))
    assert_same_outputs(ep.module()(ember.tensor(x)), want)
    f = io.BytesIO()
    ember.export.save(ep, f)
    f.seek(0)
    assert_same_outputs(ember.export.load(f).module()(ember.tensor(x)), want)


def test_constant_outputs_follow_a_dynamic_dim():
    ep = ember.export.export(ConstantOutputs(), (ember.ones(3, 4),),
                             dynamic_shapes={"x": {0: Dim("b")}})
    tep = torch.export.export(TorchConstantOutputs(), (torch.ones(3, 4),),
                              dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    for size in (2, 5):
        x = np.arange(size * 4, dtype=np.float32).reshape(size, 4)
        assert_same_outputs(ep.module()(ember.tensor(x)), tep.module()(torch.tensor(x)))
