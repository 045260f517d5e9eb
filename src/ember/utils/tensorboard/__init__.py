"""TensorBoard logging under PyTorch's path: ``from ember.utils.tensorboard import
SummaryWriter`` (needs the ``tensorboard`` package: ``pip install 'ember[tensorboard]'``;
images also need Pillow, figures matplotlib).

Example:
    >>> from ember.utils.tensorboard import SummaryWriter
    >>> writer = SummaryWriter("runs/cnn")
    >>> writer.add_scalar("train/loss", 0.42, global_step=100)
    >>> writer.close()  # then: tensorboard --logdir runs
"""

try:
    import tensorboard  # noqa: F401
except ImportError as missing:
    raise ImportError("ember.utils.tensorboard needs the tensorboard package. Hint: pip "
                      "install 'ember[tensorboard]' (or pip install tensorboard)") from missing

from ember.utils.tensorboard.writer import SummaryWriter

__all__ = ["SummaryWriter"]
