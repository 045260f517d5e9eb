"""What the ``fully_shard`` rank scripts share: a model of two blocks between a root Linear in
and out (odd sizes: uneven pieces, on 4 ranks empty ones), the data, training on this rank's
part of the batch or on all of it, and gathering a sharded model's state dict."""

import numpy as np

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.distributed.fsdp import fully_shard
from ember.distributed.tensor import DTensor


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(7)
        self.fc1 = nn.Linear(7, 9)
        self.fc2 = nn.Linear(9, 7)

    def forward(self, x):
        return x + self.fc2(ember.tanh(self.fc1(self.ln(x))))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(5, 7)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(7, 3)  # (3 rows: on 4 ranks the last piece is empty)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def net(seed: int = 0, dtype=ember.float64) -> nn.Module:
    ember.manual_seed(seed)
    return Net().to(dtype)


def shard(model: nn.Module, **options) -> nn.Module:
    for b in model.blocks:
        fully_shard(b, **options)
    return fully_shard(model, **options)


def batches(steps: int, micro: int = 1, dtype=ember.float64) -> list:
    g = np.random.default_rng(1)
    return [[(ember.tensor(g.standard_normal((8, 5))).to(dtype),
              ember.tensor(g.integers(0, 3, 8))) for _ in range(micro)] for _ in range(steps)]


def mine(x):
    """This rank's part of a global batch."""
    rank, n = dist.get_rank(), dist.get_world_size()
    size = x.shape[0] // n
    return x[rank * size:(rank + 1) * size]


def train(model: nn.Module, data: list, local: bool, accumulate: bool = False,
          sgd: bool = False) -> list:
    """Losses of AdamW (or SGD) steps, each the mean over the global batch."""
    opt = (ember.optim.SGD(model.parameters(), lr=0.1) if sgd else
           ember.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1))
    losses = []
    for step in data:
        opt.zero_grad()
        total = 0.0
        for j, (x, y) in enumerate(step):
            if local and accumulate:
                model.set_requires_gradient_sync(j == len(step) - 1)
            xb, yb = (mine(x), mine(y)) if local else (x, y)
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            value = ember.tensor(float(loss.detach().to(ember.float64)), dtype=ember.float64)
            total += (dist.functional.all_reduce(value, "mean") if local else value).item()
        opt.step()
        losses.append(total)
    return losses


def gathered(model: nn.Module) -> dict:
    return {k: (v.full_tensor() if isinstance(v, DTensor) else v).numpy()
            for k, v in model.state_dict().items()}


def gap(a: dict, b: dict) -> float:
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    return max(float(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)).max(initial=0))
               for k in a)
