"""Files and folders written whole (:func:`rdl.caching.atomic_file`, :func:`~rdl.caching.atomic_dir`):
a write that raises leaves the old file (or none) and no temporary; a completed one
replaces the old file."""
import os
import stat

import pytest

from rdl import caching


class Boom(Exception):
    pass


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text("old")
    with pytest.raises(Boom), caching.atomic_file(path) as tmp:
        tmp.write_text("half")
        raise Boom
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]
    assert path.read_text() == "old"


def test_failed_first_write_leaves_nothing(tmp_path):
    with pytest.raises(Boom), caching.atomic_file(tmp_path / "a.csv") as tmp:
        with open(tmp, "w") as f:
            f.write("x,y\n")
            raise Boom
    assert list(tmp_path.iterdir()) == []


def test_completed_write_replaces_the_old_file_as_a_normal_file(tmp_path):
    path = tmp_path / "report.md"
    path.write_text("old")
    with caching.atomic_file(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name != path.name and tmp.read_text() == ""
        assert caching._TMP_NAME.match(tmp.name)  # a dead writer's is removed by remove_stale
        tmp.write_text("new")
        assert path.read_text() == "old"          # renamed only when the block completes
    caching.write_atomic(tmp_path / "b.md", "text")
    assert path.read_text() == "new" and (tmp_path / "b.md").read_text() == "text"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.md", "report.md"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600


@pytest.mark.parametrize("keep_first", [False, True])
def test_folder_written_whole(tmp_path, keep_first):
    entry = tmp_path / "db"
    with pytest.raises(Boom), caching.atomic_dir(entry, keep_first) as tmp:
        (tmp / "a.parquet").write_text("half")
        raise Boom
    assert list(tmp_path.iterdir()) == []
    with caching.atomic_dir(entry, keep_first) as tmp:
        (tmp / "a").write_text("1")
    with caching.atomic_dir(entry, keep_first) as tmp:  # the entry exists meanwhile
        (tmp / "a").write_text("2")
    # replaced by the second write, or (keep_first) the first one's kept
    assert (entry / "a").read_text() == ("1" if keep_first else "2")
    assert [p.name for p in tmp_path.iterdir()] == ["db"]
