"""ember.export sizes that multiply three or more dynamic dims (a training BatchNorm2d's count
B * H * W, a flattened 4-d tensor), checked against torch.export at many sizes."""

import numpy as np
import torch
import torch.export

import ember


def _pair(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(2, 3, 3, padding=1)
            self.bn = lib.nn.BatchNorm2d(3)

        def forward(self, x):
            h = self.bn(self.conv(x)).relu()
            return h.reshape(-1) * 2, h.mean((0, 2, 3))

    return Net().train()


def _shapes(lib):
    return {"x": {0: lib.export.Dim("B", min=2, max=16), 2: lib.export.Dim("H", min=3, max=12),
                  3: lib.export.Dim("W", min=3, max=12)}}


def test_training_batch_norm_with_batch_height_width_dynamic_matches_torch():
    rs = np.random.RandomState(0)
    theirs, ours = _pair(torch), _pair(ember)
    ours.load_state_dict({k: ember.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    x = rs.randn(4, 2, 5, 6).astype(np.float32)
    tep = torch.export.export(theirs, (torch.tensor(x),), dynamic_shapes=_shapes(torch))
    ep = ember.export.export(ours, (ember.tensor(x),), dynamic_shapes=_shapes(ember))
    assert set(ep.range_constraints) == {"B", "H", "W"}
    tmod, mod = tep.module(), ep.module()
    for b, h, w in [(2, 3, 3), (3, 7, 4), (16, 12, 12), (5, 3, 11)]:
        xb = rs.randn(b, 2, h, w).astype(np.float32)
        tx, ex = torch.tensor(xb, requires_grad=True), ember.tensor(xb, requires_grad=True)
        want, got = tmod(tx), mod(ex)
        for g, t in zip(got, want):
            np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
        (want[0].sum() + want[1].sum()).backward()
        (got[0].sum() + got[1].sum()).backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(mod.bn, name).numpy(),
                                       getattr(tmod.bn, name).numpy(), rtol=1e-5, atol=1e-6)
