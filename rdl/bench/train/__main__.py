"""``python -m rdl.bench.train``: what ``python -m rdl.bench train`` runs (and its children)."""
import sys

from rdl.bench.train import main

if __name__ == "__main__":
    main(sys.argv[1:])
