"""rdl's console scripts (``rdl-train``, ``rdl-predict``, ``rdl-backtest``,
``rdl-relbench``; ``pyproject.toml``): each puts the OpenMP wait policy in the environment
(:func:`rdl.threads.at_start`) before its command's module imports torch, as ``python -m
rdl.<command>`` does, then runs the command."""
from __future__ import annotations

from rdl.threads import at_start


def train():
    at_start()
    from rdl.train import main
    return main()


def predict():
    at_start()
    from rdl.predict import main
    return main()


def backtest():
    at_start()
    from rdl.backtest.cli import main
    return main()


def relbench():
    at_start()
    from rdl.leaderboard import main
    return main()
