"""Loss and accuracy curves of a run as a PNG (matplotlib, no display needed)."""

from __future__ import annotations

from typing import Any

from ember.io.atomic import atomic_write


def plot_history(history: dict[str, list[Any]], path: str, title: str = "") -> str:
    """Draws training loss per step and per epoch with test loss per epoch, and test
    accuracy per epoch, side by side.

    ``history`` holds ``step_loss`` (one value per step), ``train_loss``, ``test_loss``
    (optional) and ``test_accuracy`` (one per epoch). Returns ``path``.

    Example:
        >>> plot_history({"step_loss": [1.0, 0.5], "train_loss": [0.75],
        ...               "test_accuracy": [0.5]}, "curves.png")
        'curves.png'
    """
    fig = _figure(history, title)
    with atomic_write(path) as f:  # an interrupted or failed write keeps the earlier file
        fig.savefig(f, dpi=100, format="png")
    return path


def _figure(history: dict[str, list[Any]], title: str = "") -> Any:
    # a Figure of its own, not pyplot's: the caller's backend and open figures stay as they are
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(10, 4))
    ax_loss, ax_acc = fig.subplots(1, 2)
    step_loss = history.get("step_loss", [])
    epochs = list(range(1, len(history.get("train_loss", [])) + 1))
    if step_loss and epochs:
        per_epoch = len(step_loss) / len(epochs)
        ax_loss.plot([(i + 1) / per_epoch for i in range(len(step_loss))], step_loss,
                     lw=0.6, alpha=0.5, label="train (step)")
    ax_loss.plot(epochs, history.get("train_loss", []), "o-", label="train (epoch mean)")
    if history.get("test_loss"):  # (over epochs, to see the model overfit)
        ax_loss.plot(epochs, history["test_loss"], "s-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="loss", yscale="log")
    ax_loss.legend()
    ax_acc.plot(epochs, [100 * a for a in history.get("test_accuracy", [])], "o-")
    ax_acc.set(xlabel="epoch", ylabel="test accuracy (%)")
    ax_acc.grid(alpha=0.3)
    for ax in (ax_loss, ax_acc):  # whole epochs: no "epoch 1.25" tick between two points
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
