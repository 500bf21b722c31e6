"""Progress while a user waits (rdl/progress.py): a stage says when it starts and how long it
took; a loop's bar is drawn only on a terminal and only once the loop has run a while, so
logs, pipes and CI get the stage's two lines and nothing else. A run's own stage lines:
tests/test_quiet.py."""
from __future__ import annotations

import io
import logging
import re
import sys
import time

import pytest

from rdl import progress
from rdl.progress import bar, stage

log = logging.getLogger("rdl.test_progress")


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == log.name]


def test_a_stage_says_when_it_starts_and_how_long_it_took(caplog):
    caplog.set_level(logging.INFO, logger=log.name)
    with stage("graph build", log):
        assert said(caplog) == ["graph build..."]
        time.sleep(0.15)
    start, end = said(caplog)
    seconds = float(re.fullmatch(r"graph build: (\d+\.\d) s", end).group(1))
    assert seconds >= 0.1
    timer = stage("tree prior", log)
    assert timer.end("7 train blocks") == pytest.approx(timer.seconds(), abs=0.05)
    timer.end("again")   # said once
    assert re.fullmatch(r"tree prior: \d+\.\d s; 7 train blocks", said(caplog)[-1])
    assert len(said(caplog)) == 4


def test_a_failed_stage_says_no_end(caplog):
    caplog.set_level(logging.INFO, logger=log.name)
    with pytest.raises(KeyError):
        with stage("reading 3 tables", log):
            raise KeyError("table")
    assert said(caplog) == ["reading 3 tables..."]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def looped(monkeypatch, stream, delay: float) -> str:
    """What a loop of 3 steps with a bar, and a bar moved by hand, write to ``stream``
    as stderr, with bars shown after ``delay`` seconds."""
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "BAR_DELAY", delay)
    assert [x for x in bar(range(3), "graph build", unit="table")
            if time.sleep(0.02) is None] == [0, 1, 2]
    with bar(desc="LightGBM", total=4, unit="tree") as trees:
        for _ in range(4):
            time.sleep(0.02)
            trees.update()
    return stream.getvalue()


def test_a_bar_is_drawn_on_a_terminal(monkeypatch):
    out = looped(monkeypatch, Terminal(), delay=0)
    assert re.search(r"graph build: .*\| \d/3 \[", out), out
    assert re.search(r"LightGBM: .*\| \d/4 \[", out), out


def test_no_bar_where_stderr_is_no_terminal(monkeypatch):
    assert looped(monkeypatch, io.StringIO(), delay=0) == ""


def test_no_bar_for_a_loop_shorter_than_the_delay(monkeypatch):
    assert looped(monkeypatch, Terminal(), delay=60) == ""
