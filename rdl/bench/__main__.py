"""Dispatch ``python -m rdl.bench <name> ...`` to ``rdl.bench.<name>.main(argv)``, the
OpenMP wait policy set first, as a run's (:func:`rdl.threads.at_start`: ``--set
threads=off`` leaves it out); a benchmark's rows inherit it."""
import importlib
import pkgutil
import sys

from rdl.threads import at_start

at_start()   # before any benchmark imports torch

import rdl.bench


def main() -> None:
    names = sorted(m.name for m in pkgutil.iter_modules(rdl.bench.__path__)
                   if m.name not in {"__main__", "report"})
    if len(sys.argv) < 2 or sys.argv[1] not in names:
        sys.exit(f"usage: python -m rdl.bench {{{','.join(names)}}} [options]")
    importlib.import_module(f"rdl.bench.{sys.argv[1]}").main(sys.argv[2:])


if __name__ == "__main__":
    main()
