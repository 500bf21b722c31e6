"""``python -m rdl.bench.sampler``: what ``python -m rdl.bench sampler`` runs (and its workers)."""
import sys

from rdl.bench.sampler import main

if __name__ == "__main__":
    main(sys.argv[1:])
