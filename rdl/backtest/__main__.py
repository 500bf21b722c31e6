"""``python -m rdl.backtest``: :func:`rdl.backtest.cli.main`."""
from rdl.backtest.cli import main

main()
