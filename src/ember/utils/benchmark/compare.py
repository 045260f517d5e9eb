"""``Compare``: measurements side by side, one table per label, as
``torch.utils.benchmark.Compare``."""

from __future__ import annotations

import math
from collections import defaultdict

from ember.errors import ArgumentError
from ember.utils.benchmark.measurement import Measurement, select_unit, trim_sigfig

__all__ = ["Compare"]

_UNIT_NAMES = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}
_BEST, _GOOD, _BAD, _VERY_BAD = "\033[92m\033[1m", "\033[34m\033[1m", "\033[2m\033[91m", \
    "\033[31m\033[1m"
_END = "\033[0m\033[0m"


def _color(text: str, value: float, best: float) -> str:
    """``text`` in PyTorch's colours: green within 1% (or 100 ns) of the best, blue within
    10%, dim red from twice the best, red from five times."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + text + _END
    if value <= best * 1.1:
        return _GOOD + text + _END
    if value >= best * 5:
        return _VERY_BAD + text + _END
    if value >= best * 2:
        return _BAD + text + _END
    return text


class Compare:
    """Prints measurements as tables: one per ``label``; a column per ``description``; a row
    per ``sub_label`` (or statement) and ``env`` (shown as ``(env)`` when there are several),
    grouped by ``num_threads``; each cell the median in the table's unit. Replicates of one
    task are pooled. :meth:`trim_significant_figures` shows only the figures a cell's spread
    supports; :meth:`highlight_warnings` marks high-variance cells with ``(! XX%)``;
    :meth:`colorize` colours each cell by how far it is from the best of its column.

    Example:
        >>> from ember.utils.benchmark import Compare, Measurement, TaskSpec
        >>> def m(desc, threads, t):
        ...     return Measurement(1, [t] * 4, TaskSpec("f(x)", "pass", "f", "x", desc,
        ...                                            num_threads=threads))
        >>> print(Compare([m("a", 1, 2e-6), m("b", 1, 3e-6), m("a", 2, 1.5e-6)]))
        [--------- f ---------]
                 |   a   |   b
        1 threads: ------------
              x  |  2.0  |  3.0
        2 threads: ------------
              x  |  1.5  |
        <BLANKLINE>
        Times are in microseconds (us).
        <BLANKLINE>
    """

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim = False
        self._highlight = False
        self._colorize: str | None = None

    def extend_results(self, results: list[Measurement]) -> None:
        """Adds measurements to the table."""
        for r in results:
            if not isinstance(r, Measurement):
                raise ArgumentError(f"Compare: expected an instance of `Measurement`, got "
                                    f"{type(r)} instead")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Shows each column to the figures its measurements support."""
        self._trim = True

    def highlight_warnings(self) -> None:
        """Marks cells whose measurement has high variance with ``(! IQR/median %)``."""
        self._highlight = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colours each cell (ANSI) by its ratio to the fastest of its column and thread
        count, or of its row when ``rowwise``."""
        self._colorize = "row" if rowwise else "column"

    def print(self) -> None:
        """Prints the tables."""
        print(str(self))

    def __str__(self) -> str:
        groups: dict[str | None, list[Measurement]] = defaultdict(list)
        for m in Measurement.merge(self._results):
            groups[m.label].append(m)
        return "\n".join(self._table(group) for group in groups.values())

    def _cell(self, m: Measurement | None, scale: float, decimals: int, width: int,
              marked: bool) -> str:
        if m is None:
            return ""
        value = m.median / scale
        if self._trim:
            value = trim_sigfig(value, m.significant_figures)
        text = f"{value:>{width}.{decimals}f}"
        if marked:
            text += f" (! {m.iqr / m.median * 100:.0f}%)" if m.has_warnings else " " * 7
        return text

    def _table(self, results: list[Measurement]) -> str:
        unit, scale = select_unit(min(m.median for m in results))
        rows = list(dict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in results))
        rows.sort(key=lambda key: (key[0], key[1] or ""))  # (stable: statements keep order)
        columns = list(dict.fromkeys(m.description for m in results))
        cells = {((m.num_threads, m.env, m.as_row_name), m.description): m for m in results}
        envs = {m.env for m in results}
        env_width = max(len(e or "") for e in envs) if len(envs) > 1 else 0

        # per column: digits before the point (of its largest cell) and after it
        formats = []
        for col in columns:
            ms = [cells[r, col] for r in rows if (r, col) in cells]
            lead = [max(math.ceil(math.log10(m.median / scale)), 1) for m in ms]
            decimals = min(max(m.significant_figures - d, 0) for m, d in
                           zip(ms, lead, strict=True)) if self._trim else 1
            # (a column makes room for "(! XX%)" only if one of its cells has it, as PyTorch)
            marked = self._highlight and any(m.has_warnings for m in ms)
            formats.append((decimals, max(lead) + decimals + (1 if decimals else 0), marked))

        grid = [["", *(c or "" for c in columns)]]
        previous: tuple = (None, None)
        for threads, env, name in rows:
            shown_env = f"({env})" if env_width and (threads, env) != previous else ""
            previous = (threads, env)
            grid.append(["  " + shown_env.ljust(env_width + 4) + name] + [
                self._cell(cells.get(((threads, env, name), col)), scale, dec, width, marked)
                for col, (dec, width, marked) in zip(columns, formats, strict=True)])
        widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
        header = "  |  ".join(c.center(w) for c, w in zip(grid[0], widths, strict=True))
        lines = [header]
        previous_threads = None
        for row, cells_text in zip(rows, grid[1:], strict=True):
            if row[0] != previous_threads:
                previous_threads = row[0]
                lines.append(f"{row[0]} threads: ".ljust(len(header), "-"))
            found = [cells.get((row, col)) for col in columns]
            texts = [c.center(w) for c, w in zip(cells_text[1:], widths[1:], strict=True)]
            if self._colorize:
                texts = [t if m is None else _color(t, m.median, self._best(m, found, results))
                         for t, m in zip(texts, found, strict=True)]
            lines.append("  |  ".join([cells_text[0].ljust(widths[0])] + texts))
        label = f" {results[0].label or ''} ".center(len(header) - 2, "-")
        note = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" \
            if self._highlight and any(m.has_warnings for m in results) else ""
        return f"[{label}]\n" + "\n".join(lines) + \
            f"\n\nTimes are in {_UNIT_NAMES[unit]}s ({unit}).\n{note}"

    def _best(self, m: Measurement, row: list[Measurement | None],
              results: list[Measurement]) -> float:
        """The median a cell is coloured against: the fastest of its row, or of its column
        among the measurements with its thread count."""
        if self._colorize == "row":
            return min(r.median for r in row if r is not None)
        return min(r.median for r in results
                   if r.description == m.description and r.num_threads == m.num_threads)
