"""ConvTranspose's ``_output_padding`` with PyTorch's signature, which subclasses that
rewrite ``forward`` call (sweep layers63)."""

import numpy as np
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F


def test_output_padding_takes_torchs_arguments():
    for lib in (ember, torch):
        m = lib.nn.ConvTranspose2d(2, 2, 3, stride=(2, 3), padding=1)
        x = lib.ones(1, 2, 4, 4)
        got = m._output_padding(x, (8, 11), m.stride, m.padding, m.kernel_size, 2, m.dilation)
        assert list(got) == [1, 1]
        assert tuple(m._output_padding(x, None, m.stride, m.padding, m.kernel_size, 2)) == (0, 0)
        # without dilation the geometry is that of dilation 1
        assert list(m._output_padding(x, [1, 2, 7, 10], (2, 3), (1, 1), (3, 3), 2)) == [0, 0]


class _Doubled(nn.ConvTranspose2d):
    """A subclass with a forward written as PyTorch's (the weight scaled first)."""

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, 2, self.dilation)
        return F.conv_transpose2d(input, 2 * self.weight, self.bias, self.stride, self.padding,
                                  output_padding, self.groups, self.dilation)


def test_subclass_forward_written_as_torchs():
    t = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    e = _Doubled(2, 3, 3, stride=2, padding=1).to(ember.float64)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4))
    got = e(ember.tensor(x), output_size=(8, 8))
    want = torch.nn.functional.conv_transpose2d(torch.tensor(x), 2 * t.weight, t.bias, 2, 1, 1)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


def test_numpy_integer_groups_as_torch():
    # the module took np.int64 groups, and its first call refused them (conv2d: groups must
    # be a positive int); torch takes any integer
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 5))
    t = torch.nn.Conv2d(4, 6, 3, groups=np.int64(2)).double()
    e = nn.Conv2d(4, 6, 3, groups=np.int64(2)).to(ember.float64)
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert repr(e) == repr(t)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-12)
