"""The ``ember`` command: ``ember info`` prints the version and each device's capabilities."""

from __future__ import annotations

import argparse
import platform
import sys


def _info(args: argparse.Namespace) -> int:
    import numpy

    import ember
    from ember.backend import capabilities

    print(f"ember {ember.__version__} (Python {platform.python_version()}, "
          f"NumPy {numpy.__version__}, {platform.machine()})")
    print(f"primitives: {len(ember.ops.PRIMITIVES)} registered")
    print(capabilities("cpu").report())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ember`` console script."""
    parser = argparse.ArgumentParser(prog="ember", description="Ember deep-learning framework")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="version and the capabilities of each device")
    info.set_defaults(run=_info)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
