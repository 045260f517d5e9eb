"""A progress bar for training steps: tqdm showing the running loss and images per second.
When tqdm is missing or stderr is not a terminal (a CI log), it writes a plain line (no
carriage returns) at most once a minute instead, so a long epoch still shows it is alive; when
the bar is not wanted it shows nothing. Either way it keeps the running loss and throughput:
the caller prints one line per epoch."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Wraps one epoch's steps. ``update(batch_size, loss)`` after each step. Without a bar,
    a plain line every ``line_every`` seconds (unless ``enabled`` is False).

    Example:
        >>> with Progress(total=100, desc="epoch 1") as bar:
        ...     bar.update(64, 0.5)
    """

    def __init__(self, total: int, desc: str = "", enabled: bool = True,
                 line_every: float = 60.0) -> None:
        self.total, self.desc = total, desc
        self.samples, self.steps, self.loss = 0, 0, float("nan")
        self.start = time.perf_counter()
        self._bar: Any = None
        self._line_every = line_every if enabled else None
        self._next_line = self.start + line_every
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:      # the train extra is not installed: plain lines
                tqdm = None
            if tqdm is not None:
                # disable=None: no bar unless stderr is a terminal, so a log file gets the
                # epoch lines rather than thousands of carriage-return redraws
                bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr,
                           dynamic_ncols=True, leave=True, disable=None)
                self._bar = None if bar.disable else bar
            if self._bar is not None:  # the bar instead of the plain lines
                self._line_every = None

    @property
    def throughput(self) -> float:
        """Samples per second so far."""
        return self.samples / max(time.perf_counter() - self.start, 1e-9)

    def update(self, batch_size: int, loss: float) -> None:
        """Records a finished step; the shown loss is a running average (exponential, weights
        0.05·0.95^age normalised to sum to 1, so early steps weigh no more than later ones)."""
        self.steps += 1
        self.samples += batch_size
        share = 0.05 / (1.0 - 0.95 ** self.steps)  # (1 at the first step)
        self.loss = loss if self.steps == 1 else self.loss + share * (loss - self.loss)
        if self._bar is not None:
            self._bar.update(1)
            if self.steps % 10 == 0 or self.steps == self.total:
                self._bar.set_postfix(loss=f"{self.loss:.4f}",
                                      img_s=f"{self.throughput:,.0f}", refresh=False)
        elif self._line_every is not None and time.perf_counter() >= self._next_line:
            print(f"{self.desc}: step {self.steps}/{self.total}, loss {self.loss:.4f}, "
                  f"{self.throughput:,.0f} images/s", file=sys.stderr, flush=True)
            self._next_line = time.perf_counter() + self._line_every

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
