"""Small numpy / pandas helpers shared by the synthetic H&M tables."""
from __future__ import annotations

import numpy as np
import pandas as pd


def _norm(w) -> np.ndarray:
    w = np.asarray(w, dtype=float)
    return w / w.sum()


def _some(rng, n: int, p: float) -> np.ndarray:
    """A mask with each entry True with probability ``p``, and at least one True (so that
    even a tiny database has the missing values the real one has)."""
    mask = rng.random(n) < p
    mask[rng.integers(0, n)] = True
    return mask


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _cat(*parts) -> np.ndarray:
    """Element-wise string concatenation of arrays / scalars (vectorised)."""
    out = np.asarray(parts[0]).astype(object)
    for p in parts[1:]:
        out = out + (np.asarray(p).astype(object) if not isinstance(p, str) else p)
    return out


def _str(a: np.ndarray) -> pd.arrays.ArrowStringArray:
    # one copy as numpy text at most: 256 bytes a 64-character id (a GiB per 4M customers)
    if a.dtype.kind == "S":
        a = a.astype("U")
    elif a.dtype.kind != "U":
        a = a.astype(str)
    return pd.array(a, dtype="str")
