"""Link-prediction metrics against a plain reference (RelBench's definitions) and by hand."""
import numpy as np
import pytest
import torch

from rdl.training.metrics import LinkMAP, LinkPrecision, LinkRecall


def reference(pred, truth, k):
    """Plain Python: lists of ranked predictions and sets of true ids."""
    maps, precs, recs = [], [], []
    for p, t in zip(pred, truth):
        if not t:
            continue
        hit = [int(x in t) for x in p[:k]]
        ap = sum(sum(hit[: i + 1]) / (i + 1) * hit[i] for i in range(len(hit)))
        maps.append(ap / min(len(t), k))
        precs.append(sum(hit) / k)
        recs.append(sum(hit) / len(t))
    return np.mean(maps), np.mean(precs), np.mean(recs)


def pad(truth):
    width = max(1, max(len(t) for t in truth))
    return torch.tensor([sorted(t) + [-1] * (width - len(t)) for t in truth])


def test_hand_made_cases():
    # row 0: hits at ranks 1 and 3 of 3 true ids -> AP = (1/1 + 2/3) / 3
    # row 1: one true id at rank 2 -> AP = 1/2; row 2: no true id -> skipped
    pred = torch.tensor([[5, 1, 7, 9], [3, 4, 0, 2], [1, 2, 3, 4]])
    truth = pad([{5, 7, 8}, {4}, set()])
    m, p, r = LinkMAP(k=4), LinkPrecision(k=4), LinkRecall(k=4)
    for metric in (m, p, r):
        metric.update(pred, truth)
    assert m.compute().item() == pytest.approx(((1 + 2 / 3) / 3 + 1 / 2) / 2)
    assert p.compute().item() == pytest.approx((2 / 4 + 1 / 4) / 2)
    assert r.compute().item() == pytest.approx((2 / 3 + 1 / 1) / 2)


def test_many_true_ids_are_capped_at_k():
    pred = torch.tensor([[0, 1]])
    truth = pad([{0, 1, 2, 3, 4}])
    m = LinkMAP(k=2)
    m.update(pred, truth)
    assert m.compute().item() == pytest.approx(1.0)  # divided by min(5, 2)


@pytest.mark.parametrize("seed", range(5))
def test_random_against_reference_over_several_batches(seed):
    rng = np.random.default_rng(seed)
    k, n = 12, 200
    pred = [list(rng.permutation(50)[:k]) for _ in range(n)]
    truth = [set(rng.choice(50, size=rng.integers(0, 20), replace=False).tolist()) for _ in range(n)]
    metrics = [LinkMAP(k=k), LinkPrecision(k=k), LinkRecall(k=k)]
    for lo in range(0, n, 64):  # accumulated over batches of different widths
        p, t = torch.tensor(pred[lo:lo + 64]), pad(truth[lo:lo + 64])
        for metric in metrics:
            metric.update(p, t)
    got = [metric.compute().item() for metric in metrics]
    assert got == pytest.approx(reference(pred, truth, k), rel=1e-6)
