"""``ember launch`` / ``python -m ember.distributed.run``: the command line of the launcher.

Example:
    $ ember launch -n 4 train.py --epochs 3
    $ ember launch -n 8 --hostfile hosts --max-restarts 2 train.py
"""

from __future__ import annotations

import argparse
import os
import sys

from ember.distributed.launch import launch


def main(argv: list[str] | None = None) -> int:
    """Parses ``[-n N] [--max-restarts K] [--hostfile F] script.py args…`` and runs the job."""
    parser = argparse.ArgumentParser(
        prog="ember launch",
        description="Run a script on N MPI ranks (mpiexec underneath); "
        "a rank that raises aborts the whole job",
    )
    parser.add_argument("-n", "--nproc", type=int, default=1, help="number of ranks")
    parser.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        help="start the job again this many times after a failure",
    )
    parser.add_argument(
        "--hostfile",
        default=None,
        help="an MPI hostfile for several machines (default: this one only, over shared memory)",
    )
    parser.add_argument(
        "--mpiexec-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for mpiexec (repeatable)",
    )
    parser.add_argument("script", help="the Python script each rank runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    # refused here, with the usage, rather than as a traceback (from each rank, for the script)
    if args.nproc < 1:
        parser.error(f"-n must be at least 1, got {args.nproc}")
    if args.max_restarts < 0:
        parser.error(f"--max-restarts must be 0 or more, got {args.max_restarts}")
    # (with a hostfile the script may live on the other hosts only: theirs to check)
    for flag, path in (("--hostfile", args.hostfile),
                       ("script", None if args.hostfile else args.script)):
        if path is not None and not os.path.isfile(path):
            parser.error(f"{flag} {path!r} is not a file")
    return launch(
        args.nproc, [args.script, *args.args], args.max_restarts, args.hostfile, args.mpiexec_arg
    )


if __name__ == "__main__":
    sys.exit(main())
