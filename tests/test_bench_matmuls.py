"""``python -m rdl.bench matmuls``: every way computes the same weight gradient."""
import csv

import torch

from rdl.bench.matmuls import main, ways


def test_every_way_computes_each_tables_weight_gradient_over_its_real_rows(monkeypatch):
    from rdl.bench import matmuls
    # 2 + 1 + 4 chunks (12 rows fill 3 chunks: stack_sizes keeps a pad row), and 1 each
    monkeypatch.setattr(matmuls, "CHUNKS", (4, 256))
    rows, c = [7, 3, 12], 5
    found = ways(rows, c, torch.device("cpu"), seed=1)
    assert {"chunks of 4", "chunks of 256"} <= set(found)
    # the inputs again, from the same seed: the real rows of x and grad of each table
    g = torch.Generator().manual_seed(1)
    expected = []
    for r in rows:
        x, grad = torch.randn(r, c, generator=g), torch.randn(r, c, generator=g)
        expected.append(grad.double().T @ x.double())
    expected = torch.stack(expected).float()
    for name, (fn, flop) in found.items():
        if name == "forward bmm":
            assert fn().shape == (3, 12, c)
            continue
        torch.testing.assert_close(fn(), expected, rtol=1e-4, atol=1e-4, msg=name)
        if name.startswith("chunks of"):
            k = int(name.split()[-1])
            assert flop == 2 * (7 if k == 4 else 3) * k * c * c
        else:
            assert flop == 2 * (sum(rows) if name == "per-table mm" else 3 * 12) * c * c


def test_the_benchmark_writes_one_row_per_way(tmp_path):
    main(["--device", "cpu", "--rows", "40", "9", "--channels", "8", "--repeat", "2",
          "--out", str(tmp_path)])
    with open(tmp_path / "matmuls.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["way"] for r in rows] == list(ways([40, 9], 8, torch.device("cpu")))
    assert float(rows[0]["vs_padded_bmm"]) == 1 and all(float(r["ms"]) > 0 for r in rows)
