"""``python -m rdl.backtest``: :func:`rdl.backtest.cli.main`, the OpenMP wait policy set
first (:func:`rdl.threads.at_start`: before torch is imported)."""
from rdl.threads import at_start

at_start()

from rdl.backtest.cli import main  # noqa: E402  (after the wait policy)

main()
