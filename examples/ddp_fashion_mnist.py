"""Data-parallel training of the small CNN on Fashion-MNIST over MPI.

Every rank trains on its shard of each epoch (``DistributedSampler``),
``DistributedDataParallel`` averages the gradients, and rank 0 reports. Run from the
repository root:

    pip install -e '.[distributed]'                 # mpi4py + Open MPI
    apt-get install -y dataset-fashion-mnist        # the data, under /usr/share/datasets
    ember launch -n 2 examples/ddp_fashion_mnist.py --epochs 1

The global batch is ``--batch-size`` (split over the ranks), so the run follows the same
trajectory on any number of ranks.
"""

from __future__ import annotations

import argparse
import time

import ember
import ember.distributed as dist
import ember.nn.functional as F
from ember.models import cnn
from ember.utils.data import DataLoader, TensorDataset
from ember.vision.datasets import FashionMNIST


def tensors(train: bool, limit: int | None) -> TensorDataset:
    """Normalised images with a channel dimension, and labels (the first ``limit``)."""
    ds = FashionMNIST("data", train=train)
    x = (ds.data[:limit].float() / 255 - 0.2860) / 0.3530
    return TensorDataset(x.unsqueeze(1), ds.targets[:limit])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--train-size", type=int, default=None, help="first N images only")
    args = parser.parse_args()
    for name in ("batch_size", "train_size"):  # (0 crashed in MPI or trained on nothing)
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {value}")

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:  # each rank's share is batch_size // world
        parser.error(f"--batch-size {args.batch_size} does not split evenly over {world} "
                     f"ranks; give a multiple of {world}")
    ember.manual_seed(0)  # the same weights everywhere (DDP also broadcasts rank 0's)
    train = tensors(True, args.train_size)
    sampler = dist.DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler)
    model = dist.DistributedDataParallel(cnn())
    optimizer = ember.optim.AdamW(model.parameters(), lr=args.lr)

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        model.train()
        start = time.perf_counter()
        for step, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()  # gradients averaged over the ranks, bucket by bucket
            optimizer.step()
            if rank == 0 and step % 50 == 0:
                rate = (step + 1) * args.batch_size / (time.perf_counter() - start)
                print(f"epoch {epoch} step {step:4d}/{len(loader)}  loss {loss.item():.4f}  "
                      f"{rate:,.0f} images/s on {world} ranks", flush=True)
        if rank == 0:  # every replica holds the same weights: one rank evaluates
            test = tensors(False, 2000)
            model.eval()
            with ember.no_grad():
                correct = sum((model.module(x).argmax(dim=1) == y).sum().item()
                              for x, y in DataLoader(test, batch_size=500))
            print(f"epoch {epoch}: test accuracy {correct / len(test):.2%} "
                  f"(first {len(test)} test images)", flush=True)
    dist.barrier()


if __name__ == "__main__":
    main()
