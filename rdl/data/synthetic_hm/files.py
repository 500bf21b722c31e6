"""The synthetic H&M database written straight to the Kaggle CSV files, in bounded memory.

:func:`write_kaggle_files` writes the three files ``data=hm-kaggle`` reads
(``customers.csv``, ``articles.csv``, ``transactions_train.csv``), byte for byte the files
:func:`rdl.data.kaggle.write_kaggle` writes of :func:`~rdl.data.synthetic_hm.generate`'s
frames of the same seed and scale, at any scale, without ever holding the transactions
(about 15M rows a unit of scale):

- The simulation runs a week at a time (:func:`~rdl.data.synthetic_hm.transactions._weeks`);
  each week's rows are put into a file of compact arrays (day, customer and article
  positions, price, channel: 19 bytes a row) as soon as they are drawn.
- Then the customers' visible columns are drawn (their ids among them), and the articles
  and customers are written, ``chunk_rows`` rows at a time.
- Then each week's arrays are read back and written as CSV lines, ``chunk_rows`` rows at
  a time, the ids looked up by position; each week's file is deleted once written.

Why weeks and not ranges of customers: the simulation draws every customer's visits of a
week in one call to the generator, then the baskets, articles and prices of all the week's
rows in a few more. A range of customers simulated alone would draw other numbers: another
database than :func:`generate`'s, which every recorded result was measured on. A week is
the smallest part of the draws that keeps their order. And :func:`generate` draws the
customers' ids after all the transactions, so the rows wait in the week files until the
ids exist.

What is held at once: the hidden state of every article and customer (a few dozen
numbers a customer: persona, life cycle, favourite sections, the last 8 purchases; and the
customer frame while the transactions are written), one week's rows while it is simulated
(about 1/55 of the transactions) and ``chunk_rows`` rows while they are formatted; never
the whole transactions table. So memory grows with the customers (a tenth of the rows),
not with the transactions. Everything is written into a temporary
folder beside ``folder`` and renamed into place when complete
(:func:`rdl.caching.atomic_dir`).

``python -m rdl.data.synthetic_hm.files DIR --scale 4`` writes them from the command line.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

import numpy as np

from rdl import caching
from rdl.data.hm_schema import KAGGLE
from rdl.data.kaggle import write_rows
from rdl.data.synthetic_hm import _world
from rdl.data.synthetic_hm.customers import _customer_frame
from rdl.data.synthetic_hm.transactions import TX_ARRAYS, _transaction_frame, _weeks
from rdl.progress import bar

#: rows formatted at once (a row of transactions is about 120 bytes of CSV)
CHUNK_ROWS = 500_000
#: the folder of the week files inside the temporary folder (gone before the rename)
WEEKS = ".weeks"


def write_kaggle_files(folder, seed: int = 0, scale: float = 0.02, start="2019-09-07",
                       end="2020-09-22", chunk_rows: int = CHUNK_ROWS,
                       on_chunk: Callable[[str, int], None] | None = None) -> Path:
    """Write the Kaggle CSV files of ``generate(seed, scale, start, end)`` into ``folder``
    (a new folder) in bounded memory, as the module says; returns ``folder``.

    Args:
        chunk_rows: the most rows formatted at once; the files' bytes do not depend on it.
        on_chunk: called with ``(what, rows)`` for each part of the data held at once:
            ``"week"`` for a simulated week, a file's key (``"customers"``,
            ``"articles"``, ``"transactions"``) for rows formatted for it.

    Raises:
        FileExistsError: ``folder`` exists and is not empty (nothing is overwritten).
        ValueError: ``scale`` or the dates are invalid, ``chunk_rows`` < 1.
    """
    folder = Path(folder)
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder}: exists and is not empty; the synthetic H&M files "
                              "are written into a new folder (remove it or choose another)")
    seen = on_chunk or (lambda what, rows: None)
    world = _world(seed, scale, start, end)   # the checks of scale and dates first
    folder.parent.mkdir(parents=True, exist_ok=True)
    with caching.atomic_dir(folder) as tmp:
        weeks = tmp / WEEKS
        weeks.mkdir()
        parts = []
        simulation = _weeks(world.rng, world.cust, world.art, world.day_w, world.n_tx)
        for week in bar(simulation, "simulating weeks", -(-world.n_days // 7), "week"):
            seen("week", len(week["day"]))
            parts.append(weeks / f"{len(parts):04d}.npz")
            np.savez(parts[-1], **week)
        del simulation
        customers = _customer_frame(world.rng, world.cust, world.n_days)
        world.cust = None   # the simulation's state: not needed any more
        articles = world.art["frame"]
        for key, df in (("articles", articles), ("customers", customers)):
            with open(tmp / KAGGLE[key][0], "wb") as f:
                for lo in range(0, len(df), chunk_rows):
                    part = df.iloc[lo:lo + chunk_rows]
                    seen(key, len(part))
                    write_rows(key, part, f, header=lo == 0)
        with open(tmp / KAGGLE["transactions"][0], "wb") as f:
            f.write((",".join(KAGGLE["transactions"][2]) + "\n").encode("utf-8"))
            for path in bar(parts, "writing weeks", unit="week"):
                with np.load(path) as z:
                    week = {k: z[k] for k in TX_ARRAYS}
                for lo in range(0, len(week["day"]), chunk_rows):
                    part = {k: v[lo:lo + chunk_rows] for k, v in week.items()}
                    seen("transactions", len(part["day"]))
                    write_rows("transactions", _transaction_frame(
                        part, customers["customer_id"], articles, world.start), f, header=False)
                path.unlink()
        weeks.rmdir()
    return folder


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m rdl.data.synthetic_hm.files",
                                description=__doc__.split("\n")[0])
    p.add_argument("folder", help="a new folder for the three files")
    p.add_argument("--scale", type=float, default=0.02, help="1.0: RelBench's rel-hm size")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk-rows", type=int, default=CHUNK_ROWS)
    args = p.parse_args(argv)
    out = write_kaggle_files(args.folder, args.seed, args.scale, chunk_rows=args.chunk_rows)
    print(f"synthetic H&M (seed {args.seed}, scale {args.scale:g}) written to {out} "
          f"({', '.join(f for f, _, _ in KAGGLE.values())}): data=hm-kaggle data.db.path={out}")


if __name__ == "__main__":
    main()
