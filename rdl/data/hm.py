"""The H&M database (RelBench's rel-hm): its schema, the database of the three Kaggle frames,
and the loader the Hydra configs name.

* :func:`hm_database` turns the three Kaggle frames into a :class:`~rdl.data.Database` with
  tables ``customer`` (pkey ``customer_id``), ``article`` (pkey ``article_id``) and
  ``transactions`` (fkeys to both, time ``t_dat``), keeps transactions from ``start`` on
  (RelBench trims at 2019-09-07) and re-indexes the keys to ``0..N-1``.
* :func:`synthetic_hm_db` generates (:mod:`rdl.data.synthetic_hm`) and caches a database.
* :func:`load_hm` dispatches on a source name (used by the Hydra configs): synthetic, the
  Kaggle CSV files (:mod:`rdl.data.kaggle`) or RelBench's files (:mod:`rdl.data.relbench`,
  which reads any RelBench database).

``t_dat`` is ``datetime64[ns]`` in every frame and database made here.
"""
from __future__ import annotations

from pathlib import Path

from rdl import paths
from rdl.data import synthetic_hm
from rdl.data.database import Database, DataError
from rdl.data.stored import cached_database
# the schema, re-exported: rdl.data.hm is where readers of the H&M database look for it
from rdl.data.hm_schema import KAGGLE, START, hm_database  # noqa: F401

# -- synthetic, cached, and the loader ----------------------------------------------------------------------
def synthetic_cache_path(seed: int = 0, scale: float = 0.02, cache_dir=None) -> Path:
    """Cache folder of a synthetic database: encodes generator version, seed and scale."""
    root = Path(cache_dir) if cache_dir is not None else paths.cache_dir()
    return root / f"synthetic-hm-v{synthetic_hm.GENERATOR_VERSION}-seed{int(seed)}-scale{float(scale):g}"


def synthetic_hm_db(seed: int = 0, scale: float = 0.02, cache_dir=None) -> Database:
    """A synthetic rel-hm database (:func:`rdl.data.synthetic_hm.generate` + :func:`hm_database`),
    saved under ``cache_dir`` on first use and loaded from there afterwards (``False``:
    generated in memory, nothing saved: ``data.cache_dir=false``)."""
    make = lambda: hm_database(**synthetic_hm.generate(seed=seed, scale=scale),  # noqa: E731
                               start=START)
    if cache_dir is False:
        return make()
    return cached_database(synthetic_cache_path(seed, scale, cache_dir), make)


def load_hm(source: str = "synthetic", path=None, seed: int = 0, scale: float = 0.02,
            cache_dir=None) -> Database:
    """The rel-hm database from ``source``:

    * ``"synthetic"``: :func:`synthetic_hm_db` (``seed``, ``scale``, ``cache_dir``);
    * ``"kaggle"``: the Kaggle CSV files in ``path`` (:func:`~rdl.data.kaggle.kaggle_hm_db`);
    * ``"relbench"``: RelBench's rel-hm folder ``path``, either layout, read as any RelBench
      database is (:func:`~rdl.data.relbench.load_relbench`), with the H&M stypes.
    """
    if source == "synthetic":
        return synthetic_hm_db(seed=seed, scale=scale, cache_dir=cache_dir)
    if source not in ("kaggle", "relbench"):
        raise DataError(f"unknown H&M source {source!r}; expected 'synthetic', 'kaggle' or 'relbench'")
    if path is None or str(path) in ("", "???"):
        raise DataError(f"H&M source {source!r} needs a path (data.db.path=/folder/with/the/files)")
    path = Path(path).expanduser()
    if not path.exists():
        raise DataError(f"{path}: no such folder (H&M source {source!r})")
    if source == "kaggle":
        from rdl.data.kaggle import kaggle_hm_db
        return kaggle_hm_db(path, cache_dir)
    from rdl.data.relbench import load_relbench
    return load_relbench(path)
