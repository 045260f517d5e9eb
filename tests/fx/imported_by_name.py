"""A user module that imports ops by name and wraps a helper with Python control flow (for
test_trace): ``from ember import relu`` must trace as ``ember.relu`` does, as in torch.fx."""

from ember import fx, nn, relu, sigmoid


def positive_sum(x):
    return x.sum() if x.shape[0] > 0 else x  # (a branch on a shape: a Proxy could not)


fx.wrap("positive_sum")


class ByName(nn.Module):
    def forward(self, x):
        return positive_sum(relu(x)) + sigmoid(x).sum()
