"""CDNOW: every purchase of the 23,570 customers who first bought at the online music shop
CDNOW in the first quarter of 1997, through June 1998 (69,659 purchases), a real retail
log that ships in a PyPI package.

``pip install lifetimes`` (or ``pip install "rdl[examples]"``) installs it as
``lifetimes/datasets/CDNOW_master.txt`` (Fader and Hardie's data, the classic of
repeat-purchase models). :func:`export` copies that file as it is, with a
``schema.yaml``, and :func:`~rdl.data.folder.load_folder` reads it as ``data=folder``
reads your own files: the file is an export of the kind rdl meets in the wild, fields
separated by runs of blanks (:mod:`rdl.data.aligned`), zero-padded ids, dates as
``yyyymmdd`` numbers, Windows line ends. The package is not imported (it needs autograd).

The database is one table of facts and the customers its ids imply (``implied: true``:
a customer exists from their first purchase on)::

    purchases: customer_id, date (the day), number_of_cds, dollar_value
    customers: customer_id (first_seen: their first purchase's day)
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from rdl.data.database import DataError
from rdl.data.exported import exported_folder

#: bump when the exported files change (it is part of the cache folder's name)
EXPORT_VERSION = 1
PACKAGE, FILE = "lifetimes", "CDNOW_master.txt"

SCHEMA = """\
# CDNOW (PyPI package lifetimes: datasets/CDNOW_master.txt, copied as it ships), exported by
# rdl.data.cdnow: the purchases of the customers CDNOW first sold to in 1997's first quarter,
# through June 1998. A customer exists from their first purchase on.
tables:
  customers:
    pkey: customer_id
    implied: true               # the ids the purchases hold
  purchases:
    file: purchases.txt         # fields separated by runs of blanks; dates as yyyymmdd
    time: date                  # the day of the purchase
    fkeys: {customer_id: customers}
    stypes: {number_of_cds: numerical, dollar_value: numerical}
"""


def source_file() -> Path:
    """``CDNOW_master.txt`` inside the installed ``lifetimes`` package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DataError("the CDNOW example needs the lifetimes package, which ships its data: "
                        'pip install lifetimes (or pip install "rdl[examples]")')
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / FILE
    if not path.is_file():
        raise DataError(f"{path}: missing; the lifetimes package ships CDNOW's purchases there "
                        "(reinstall it: pip install --force-reinstall lifetimes)")
    return path


def export(folder, source: Path | None = None) -> Path:
    """Copy the purchase log and write ``schema.yaml`` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source_file() if source is None else source, folder / "purchases.txt")
    (folder / "schema.yaml").write_text(SCHEMA)
    return folder


def cdnow_db(cache_dir=None):
    """CDNOW as a :class:`~rdl.data.Database`: exported once under ``cache_dir`` (default
    :func:`rdl.cache_dir`), read by :func:`~rdl.data.folder.load_folder`."""
    return exported_folder(f"cdnow-v{EXPORT_VERSION}", export, cache_dir)


def main(argv=None) -> None:
    """``python -m rdl.data.cdnow FOLDER``: export the CDNOW purchases there."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m rdl.data.cdnow", description=main.__doc__)
    p.add_argument("folder")
    args = p.parse_args(argv)
    print(f"CDNOW written to {export(args.folder)} (schema.yaml, purchases.txt)")


if __name__ == "__main__":
    main()
