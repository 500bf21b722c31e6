"""The bar chart of ``python -m rdl.bench train`` (``train.png``; needs matplotlib)."""
from __future__ import annotations

from pathlib import Path

from rdl.caching import atomic_file


def plot(rows: list[dict], path: Path, title: str = "") -> None:
    """Bar chart of ms/step per variant, one panel per task:model (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no train.png (pip install -e '.[bench]')")
        return
    groups = {}
    for r in rows:
        if r["ms/step"] != "":
            groups.setdefault(f"{r['task']}:{r['model']}", []).append(r)
    if not groups:
        return
    n = max(len(g) for g in groups.values())
    fig, axes = plt.subplots(1, len(groups), figsize=(max(7.0, 4.5 * len(groups)), 1.8 + 0.45 * n),
                             squeeze=False)
    for i, (ax, (key, g)) in enumerate(zip(axes[0], groups.items())):
        y = list(range(len(g)))[::-1]
        h = 0.4
        ax.barh([v + h / 2 for v in y], [r["ms/step"] for r in g], h,
                label="sampler excluded" if i == 0 else None)
        ax.barh([v - h / 2 for v in y], [r["ms/step+sampler"] or 0 for r in g], h,
                label="sampler included" if i == 0 else None, alpha=0.6)
        ax.set_yticks(y, [r["variant"] for r in g])
        ax.set_xlabel("ms / train step (median)")
        ax.set_title(key)
    fig.legend(loc="lower center", ncol=2, fontsize="small")
    if title:
        fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    with atomic_file(path) as tmp:
        fig.savefig(tmp, dpi=120, format=Path(path).suffix[1:] or None)
    plt.close(fig)
    print(f"bar chart written to {path}")
