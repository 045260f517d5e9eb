"""Runs code on N MPI ranks for the tests, under a timeout, with each rank's output.

``run_ranks(code, n)`` writes ``code`` to a file (or takes a script path), starts it with
``mpiexec -n n`` in the shared-memory-only environment ``ember launch`` uses, and returns the
finished :class:`subprocess.CompletedProcess`; a nonzero exit or a timeout raises with all
output. Rank code reports values with :func:`report`, read back by :func:`reports`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ember.distributed.mpi_env import mpi_env, mpiexec_command

ROOT = Path(__file__).resolve().parents[2]
_TAG = "@@report"

needs_mpi = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True).returncode != 0,
    reason="mpi4py is not installed (pip install 'ember[distributed]')",
)


def rank_env(n: int, extra: dict | None = None) -> dict[str, str]:
    """The environment of the test ranks: ``ember launch``'s, with the repository importable."""
    env = mpi_env(n)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra or {})
    return env


def run_process(
    cmd: list[str], env: dict, timeout: float, check: bool = True, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """Runs ``cmd`` in its own session; on timeout kills that whole session (mpiexec and its
    ranks), so a hung collective cannot outlive the test."""
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd or str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(
            f"{' '.join(cmd)} timed out after {timeout} s\n--- stdout\n{out}\n--- stderr\n{err}"
        ) from None
    done = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited with {proc.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"
        )
    return done


def run_ranks(
    script_or_code: str | Path,
    n: int,
    timeout: float = 60,
    args: tuple = (),
    check: bool = True,
    env: dict | None = None,
) -> subprocess.CompletedProcess:
    """Runs a script file or a code string on ``n`` ranks and returns the finished process.

    Example:
        >>> out = run_ranks("import ember.distributed as d; d.init_process_group()", 2)
    """
    path = Path(script_or_code) if isinstance(script_or_code, Path) else None
    with tempfile.TemporaryDirectory() as tmp:
        if path is None:
            path = Path(tmp) / "rank_code.py"
            path.write_text(textwrap.dedent(str(script_or_code)))
        cmd = mpiexec_command(n, [str(path), *map(str, args)])
        return run_process(cmd, rank_env(n, env), timeout, check)


def report(value: object) -> None:
    """From rank code: prints ``value`` (JSON) tagged with the rank, for :func:`reports`."""
    from ember import distributed as dist

    print(_TAG, dist.get_rank(), json.dumps(value), flush=True)


def reports(done: subprocess.CompletedProcess) -> dict[int, list]:
    """What each rank :func:`report`-ed, in order: ``{rank: [value, …]}``."""
    found: dict[int, list] = {}
    for line in done.stdout.splitlines():
        if line.startswith(_TAG):
            _, rank, value = line.split(" ", 2)
            found.setdefault(int(rank), []).append(json.loads(value))
    return found


def train_step(model: Any, opt: Any, rows: int) -> float:
    """One optimizer step of ``model`` on ``rows`` rows of ones (a squared-output loss); the
    loss, to compare two runs step by step."""
    import ember

    opt.zero_grad()
    loss = model(ember.ones(rows, 3)).square().sum()
    loss.backward()
    opt.step()
    return loss.item()
