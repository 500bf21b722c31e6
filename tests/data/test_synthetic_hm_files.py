"""The chunked writer of the synthetic H&M files (rdl/data/synthetic_hm/files.py): the bytes
write_kaggle writes of generate()'s frames, read back as its database, never more than a
week of transactions or ``chunk_rows`` formatted rows held at once, nothing half-written."""
import os

import pytest

from rdl.data import synthetic_hm
from rdl.data.hm import hm_database
from rdl.data.hm_schema import KAGGLE
from rdl.data.kaggle import kaggle_hm_db, write_kaggle
from rdl.data.synthetic_hm.files import main, write_kaggle_files

SCALE = 0.002
FILES = [f for f, _, _ in KAGGLE.values()]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """generate()'s frames, and the files write_kaggle writes of them."""
    frames = synthetic_hm.generate(seed=3, scale=SCALE)
    return frames, write_kaggle(frames, tmp_path_factory.mktemp("whole") / "kaggle")


def chunks(folder, chunk_rows, scale=SCALE, seed=3):
    seen = []
    write_kaggle_files(folder, seed, scale, chunk_rows=chunk_rows,
                       on_chunk=lambda what, rows: seen.append((what, rows)))
    return seen


@pytest.mark.parametrize("chunk_rows", [97, 1_000_000])
def test_the_files_are_generate_s_written_whole(whole, tmp_path, chunk_rows):
    frames, expected = whole
    seen = chunks(tmp_path / "files", chunk_rows)
    assert sorted(os.listdir(tmp_path / "files")) == sorted(FILES)   # no week files left
    for f in FILES:
        assert (tmp_path / "files" / f).read_bytes() == (expected / f).read_bytes(), f
    # every row written once, in chunks of at most chunk_rows
    written = {k: sum(n for what, n in seen if what == k) for k in KAGGLE}
    assert written == {k: len(df) for k, df in frames.items()}
    assert max(n for what, n in seen if what != "week") <= chunk_rows
    if chunk_rows == 97:   # several chunks a file: a week's rows split too
        assert all(sum(what == k for what, _ in seen) > 1 for k in KAGGLE)


def test_read_back_it_is_generate_s_database(whole, tmp_path):
    frames, _ = whole
    write_kaggle_files(tmp_path / "files", seed=3, scale=SCALE, chunk_rows=500)
    got, want = kaggle_hm_db(tmp_path / "files", cache_dir=False), hm_database(**frames)
    assert list(got.tables) == list(want.tables)
    for name, table in want:
        assert got[name].df.equals(table.df), name
    for name, keys in want.keys.items():
        assert got.keys[name].equals(keys), name


def test_a_week_at_a_time_whatever_the_scale(tmp_path):
    """The simulation's rows are held a week at a time (a few per cent of them, at any
    scale) and formatted chunk_rows at a time: what the writer holds grows with the
    customers and a week's rows, not with the whole table."""
    for scale in (0.001, 0.004):
        seen = chunks(tmp_path / f"s{scale}", chunk_rows=300, scale=scale)
        weeks = [n for what, n in seen if what == "week"]
        total = sum(n for what, n in seen if what == "transactions")
        assert len(weeks) == 55 and sum(weeks) == total   # 382 days: every week has rows
        assert max(weeks) < total / 10, (max(weeks), total)
        assert max(n for what, n in seen if what != "week") <= 300


def test_a_new_folder_only_and_nothing_half_written(whole, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="busy: exists and is not empty"):
        write_kaggle_files(busy, scale=SCALE)
    assert os.listdir(busy) == ["mine.txt"]
    with pytest.raises(ValueError, match="chunk_rows must be >= 1"):
        write_kaggle_files(tmp_path / "new", scale=SCALE, chunk_rows=0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        write_kaggle_files(tmp_path / "new", scale=0)

    def fail(what, rows):
        if what == "transactions":
            raise RuntimeError("disk full")
    with pytest.raises(RuntimeError, match="disk full"):
        write_kaggle_files(tmp_path / "new", scale=SCALE, on_chunk=fail)
    assert sorted(os.listdir(tmp_path)) == ["busy"]   # no folder, no temporary left


def test_the_command_line(tmp_path, capsys):
    main([str(tmp_path / "cli"), "--scale", "0.001", "--seed", "1"])
    assert "data=hm-kaggle data.db.path=" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "cli")) == sorted(FILES)
