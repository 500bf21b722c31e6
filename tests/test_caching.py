"""Caches that never lie: a build killed mid-write leaves nothing that is trusted or kept,
a damaged entry is rebuilt, a live process's temporary is left alone, and a cache folder
that cannot be written means a run without caching and one warning."""
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import torch

import rdl
from rdl import caching
from rdl.data.hm import synthetic_cache_path, synthetic_hm_db
from rdl.graph.build import make_graph
from rdl.graph.text import HashingEmbedder
from tests.graph.test_build import db

ROOT = Path(__file__).resolve().parents[1]
SCALE = 0.001


def killed_while(script: str, *args) -> None:
    """Runs ``script`` in a new Python process that SIGKILLs itself where the script says."""
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def same_graph(a, b) -> None:
    assert a.node_types == b.node_types
    for nt in a.node_types:
        for st, x in a[nt].tf.feat_dict.items():
            y = b[nt].tf.feat_dict[st]
            x, y = (v if isinstance(v, torch.Tensor) else v.values for v in (x, y))
            assert torch.allclose(x.double(), y.double(), equal_nan=True)


# Dies right after the second table's file is written: the entry is half built.
KILL_GRAPH = """
import os, signal, sys
import torch_frame
from rdl.graph.build import make_graph
from rdl.graph.text import HashingEmbedder
from tests.graph.test_build import db
save, written = torch_frame.save, []
def save_then_die(*args, **kwargs):
    save(*args, **kwargs)
    written.append(args)
    if len(written) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
torch_frame.save = save_then_die
make_graph(db(), cache_dir=sys.argv[1], text_embedder=HashingEmbedder(8))
"""


def test_killed_graph_build_is_never_trusted_and_cleaned_up(tmp_path):
    killed_while(KILL_GRAPH, tmp_path)
    (left,) = temporaries(tmp_path)             # the dead build's half-written folder
    assert len(list((tmp_path / left).glob("*.pt"))) == 2
    assert not list(tmp_path.glob("graph-*"))   # nothing published
    data, _ = make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    assert temporaries(tmp_path) == []          # the dead process's temporary is gone
    (entry,) = tmp_path.glob("graph-*")
    assert caching.complete(entry)
    assert sorted(p.name for p in entry.iterdir()) == [
        "article.pt", caching.MARKER, "customer.pt", "structure.pt", "transactions.pt"]
    same_graph(data, make_graph(db(), text_embedder=HashingEmbedder(8))[0])
    same_graph(data, make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))[0])


def test_incomplete_or_damaged_entry_is_rebuilt(tmp_path):
    make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    (entry,) = tmp_path.glob("graph-*")
    with open(entry / "customer.pt", "r+b") as f:  # truncated: its size no longer matches
        f.truncate(10)
    assert not caching.complete(entry)
    fresh, _ = make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    assert caching.complete(entry) and temporaries(tmp_path) == []
    (entry / caching.MARKER).unlink()              # an entry without its marker (older rdl)
    assert not caching.complete(entry)
    again, _ = make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    assert caching.complete(entry) and temporaries(tmp_path) == []
    same_graph(fresh, again)


def test_only_temporaries_of_dead_or_old_processes_are_removed(tmp_path):
    mine = caching.temp_dir(tmp_path, "graph-a")   # this (live) process's build
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    host = caching._host()
    gone = tmp_path / f".graph-b.tmp-{host}-{dead}-x1"
    elsewhere = tmp_path / ".graph-c.tmp-otherhost-1-x2"   # another machine's: can't tell
    stale = tmp_path / ".graph-d.tmp-otherhost-1-x3"
    for p in (gone, elsewhere, stale):
        p.mkdir()
    old = time.time() - caching.MAX_AGE_S - 60
    os.utime(stale, (old, old))
    entry = tmp_path / "graph-e"                   # a published entry is never a temporary
    entry.mkdir()
    assert sorted(caching.remove_stale(tmp_path)) == sorted([gone, stale])
    assert mine.exists() and elsewhere.exists() and entry.exists()


# Dies after the first table's file: the database folder is half written.
KILL_DB = """
import os, signal, sys
from rdl.data import stored as database
from rdl.data.hm import synthetic_hm_db
write_table = database.write_table
def write_then_die(*args, **kwargs):
    write_table(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
database.write_table = write_then_die
synthetic_hm_db(seed=0, scale=float(sys.argv[2]), cache_dir=sys.argv[1])
"""


def test_killed_database_save_is_never_trusted_and_cleaned_up(tmp_path):
    killed_while(KILL_DB, tmp_path, SCALE)
    path = synthetic_cache_path(0, SCALE, tmp_path)
    assert len(temporaries(tmp_path)) == 1 and not path.exists()
    fresh = synthetic_hm_db(seed=0, scale=SCALE, cache_dir=tmp_path)
    assert temporaries(tmp_path) == [] and (path / "metadata.json").exists()
    loaded = synthetic_hm_db(seed=0, scale=SCALE, cache_dir=tmp_path)
    for name, tab in fresh:
        pd.testing.assert_frame_equal(tab.df, loaded[name].df)


def test_unwritable_cache_runs_uncached_with_one_warning(tmp_path, monkeypatch):
    """As the Permission denied of a read-only folder (the tests may run as root, whom
    chmod does not stop): rdl's check that it can write there fails."""
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(caching.tempfile, "TemporaryFile", refuse)
    monkeypatch.setattr(caching, "_warned", set())
    monkeypatch.setenv("RDL_CACHE", str(tmp_path))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        database = synthetic_hm_db(seed=0, scale=SCALE)
        data, _ = make_graph(database, cache_dir=rdl.cache_dir() / "graphs",
                             text_embedder=HashingEmbedder(8))
    messages = [str(w.message) for w in seen if issubclass(w.category, caching.CacheWarning)]
    assert messages == [f"cannot write the rdl cache in {tmp_path} (Permission denied): running "
                        "without caching (databases and graphs are built again every run); set "
                        "RDL_CACHE or data.cache_dir to a writable folder"]
    assert data["transactions"].num_nodes == len(database["transactions"])
    assert [p.name for p in tmp_path.iterdir()] in ([], ["graphs"])  # no entry, no temporary
    assert not list(tmp_path.rglob("*.*"))


def test_a_cached_graph_is_mapped_from_its_files(tmp_path):
    """A graph read from the cache maps its tables' files (rdl.graph.store.load_frame): the
    processes that read it share the pages instead of each holding a copy."""
    from rdl.graph.store import table_file as _file
    from tests.test_prepared_cache import mapped

    built, _ = make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    data, _ = make_graph(db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8))
    (entry,) = tmp_path.glob("graph-*")
    same_graph(built, data)
    for nt in data.node_types:
        for feat in data[nt].tf.feat_dict.values():
            values = feat if isinstance(feat, torch.Tensor) else feat.values
            assert mapped(values, entry / _file(nt)), nt


def test_cache_dir_false_loads_every_generated_database_and_writes_no_cache(
        tiny_cfg, tmp_path, monkeypatch):
    """``data.cache_dir=false`` (no cache): the synthetic H&M database is generated in
    memory and a generated folder (the forum) exported to a temporary folder and removed;
    neither writes into rdl's cache (it crashed on ``Path(False)`` before)."""
    from rdl import api
    cache = tmp_path / "cache"
    monkeypatch.setenv("RDL_CACHE", str(cache))
    for data in ("data=hm", "experiment=forum-user-active"):
        cfg = tiny_cfg(data, "data.cache_dir=false")
        db = api.load_database(cfg)
        assert len(db.tables) >= 3 and all(len(t) > 0 for _, t in db), data
        assert not cache.exists() or not any(cache.iterdir()), (data, list(cache.iterdir()))
    same = api.load_database(tiny_cfg("data=hm"))    # the cached one: the same rows
    nocache = api.load_database(tiny_cfg("data=hm", "data.cache_dir=false"))
    for name, table in same:
        pd.testing.assert_frame_equal(table.df, nocache[name].df)


def test_a_key_finds_the_graph_without_hashing_the_rows_again(tmp_path, monkeypatch):
    """``make_graph(..., key=)`` (the prepared data's digest, which hashed every row): the
    first build hashes the rows and records the key; the next finds the same entry by the
    key alone. A key whose entry is gone, or a database of another shape under the same
    key, hashes the rows again."""
    from rdl.graph import build
    hashed = []
    real = build.fingerprint
    monkeypatch.setattr(build, "fingerprint", lambda *a, **k: hashed.append(1) or real(*a, **k))

    def graph(key, database=None):
        return make_graph(database or db(), cache_dir=tmp_path, text_embedder=HashingEmbedder(8),
                          key=key)

    def keys() -> int:
        return len(list((tmp_path / "keys").iterdir()))

    built, _ = graph("k1")
    (entry,) = tmp_path.glob("graph-*")
    assert hashed == [1] and keys() == 2         # the key with the shape, and alone
    assert {p.read_text() for p in (tmp_path / "keys").iterdir()} == {entry.name}
    again, _ = graph("k1")
    assert hashed == [1]                          # found by the key: no row hashed
    same_graph(built, again)
    graph("k2")                                   # another key: the rows are hashed, the
    assert hashed == [1, 1]                       # same entry found, the key recorded
    assert list(tmp_path.glob("graph-*")) == [entry] and keys() == 4
    graph(None)                                   # no key: hashed as before, no index written
    assert hashed == [1, 1, 1] and keys() == 4
    fewer = db()
    fewer.tables["customer"] = type(fewer["customer"])(
        fewer["customer"].df.drop(columns=[fewer["customer"].df.columns[-1]]),
        fewer["customer"].pkey, fewer["customer"].fkeys, fewer["customer"].time_col)
    other, _ = graph("k1", fewer)                 # same key, another shape: hashed, built
    assert hashed == [1, 1, 1, 1] and len(list(tmp_path.glob("graph-*"))) == 2
    shutil.rmtree(entry)                          # the key's entry removed: built again
    graph("k1")
    assert hashed == [1, 1, 1, 1, 1] and caching.complete(entry)


def test_a_graph_is_found_by_its_key_alone_with_no_database(tmp_path):
    """``cached_graph`` (what a restart reads before it cuts the database): the graph that
    ``make_graph(..., key=)`` built, read back by the key and settings alone, every tensor
    (frames, times, edges) mapped from the entry's files; another key, other stypes,
    another text embedder or the statistics of another graph find nothing."""
    from rdl.graph.store import STRUCTURE, cached_graph, table_file
    from tests.graph.test_build import same_structure
    from tests.test_prepared_cache import mapped

    emb = HashingEmbedder(8)
    assert cached_graph(tmp_path, "k", None, emb) is None          # nothing built yet
    built, stats = make_graph(db(), cache_dir=tmp_path, text_embedder=emb, key="k")
    found, found_stats = cached_graph(tmp_path, "k", None, emb)
    (entry,) = tmp_path.glob("graph-*")
    same_structure(make_graph(db(), text_embedder=emb)[0], found)   # as built uncached
    assert found_stats.keys() == stats.keys()
    for nt in found.node_types:
        for feat in found[nt].tf.feat_dict.values():
            values = feat if isinstance(feat, torch.Tensor) else feat.values
            assert mapped(values, entry / table_file(nt)), nt
        if "time" in found[nt]:
            assert mapped(found[nt].time, entry / STRUCTURE), nt
    for et in found.edge_types:
        assert mapped(found[et].edge_index, entry / STRUCTURE), et
    assert cached_graph(tmp_path, "other", None, emb) is None
    assert cached_graph(tmp_path, "k", {"customer": {"club": None}}, emb) is None
    assert cached_graph(tmp_path, "k", None, HashingEmbedder(16)) is None
    assert cached_graph(tmp_path, "k", None, emb, given_stats=True) is None
    assert cached_graph(None, "k", None, emb) is None and cached_graph(tmp_path, None, None, emb) is None


def test_a_cache_file_saved_without_checksums_reads_back_the_same(tmp_path):
    """``caching.without_checksums``: inside it torch writes no CRC-32 (where this torch
    has the setting), after it torch's setting is as it was, even after an error; the file
    reads back equal, mapped and not."""
    from torch.utils.serialization import config

    before = config.save.compute_crc32
    x = {"a": torch.arange(100_000), "b": torch.rand(3, 5)}
    with caching.without_checksums():
        assert config.save.compute_crc32 is False
        torch.save(x, tmp_path / "x.pt")
    assert config.save.compute_crc32 == before
    try:
        with caching.without_checksums():
            raise KeyError
    except KeyError:
        pass
    assert config.save.compute_crc32 == before
    for mmap in (False, True):
        got = torch.load(tmp_path / "x.pt", weights_only=True, mmap=mmap)
        assert all(torch.equal(got[k], v) for k, v in x.items())
