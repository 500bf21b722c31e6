"""The relational graph transformer: pad tokens and other seeds change no output, bad
budgets fail clearly."""
import pytest
import torch

from rdl.nn import RelGraphTransformer
from rdl.training.datamodule import RelDataModule
from rdl.training.module import NodeTaskModule
from tests.training.test_label_history import make_task, random_db


@pytest.fixture(scope="module")
def setup():
    dm = RelDataModule(random_db(), make_task("user-churn"), batch_size=16,
                       num_neighbors=[6, 3], cache_dir=False)
    dm.setup()
    torch.manual_seed(0)
    model = RelGraphTransformer(budgets={"customer": 2, "transactions": 5, "article": 4,
                                         "label_history": 3},
                                channels=16, encoder_layers=1, heads=2, num_centroids=4,
                                **dm.model_kwargs()).eval()
    dm.token_budgets = model.budgets
    module = NodeTaskModule(model, dm.task, optimizer=torch.optim.Adam, compile=False)
    batch = next(iter(dm.loader("val", shuffle=False)))
    args, kwargs = module.inputs(batch)
    # Only the tokens' rows are encoded (and 2 pad rows), not every sampled node's.
    store = batch["transactions"]
    assert args[0]["transactions"].num_rows == store.tok_id.unique().numel() + 2
    assert store.tok_id.unique().numel() < store.n_id.unique().numel()
    return model, args, kwargs


def test_the_seed_token_comes_first(setup):
    model, args, _ = setup
    assert model.types[0] == "customer"
    mask = args[2]
    assert mask["customer"][:, 0].all()
    assert any(not m.all() for m in mask.values()), "some slots are padded"


def test_pad_tokens_change_no_output(setup):
    model, args, kwargs = setup
    tf, rows, mask, hop, deg, time, seed_time = args
    out = model(*args, **kwargs)
    # Point every pad slot at another row, hop, degree and time: nothing may change.
    rows2 = {t: torch.where(mask[t], r, (r + 1) % tf[t].num_rows) for t, r in rows.items()}
    hop2 = {t: torch.where(mask[t], h, 3) for t, h in hop.items()}
    deg2 = {t: torch.where(mask[t], d, 7) for t, d in deg.items()}
    time2 = {t: torch.where(mask[t], x, x - 86400 * 30) for t, x in time.items()}
    out2 = model(tf, rows2, mask, hop2, deg2, time2, seed_time, **kwargs)
    torch.testing.assert_close(out, out2)
    # ...while a real token's hop does change the output of its seed
    b = int(mask["transactions"].sum(1).argmax())
    hop3 = dict(hop, transactions=torch.where(mask["transactions"], 4, 0))
    out3 = model(tf, rows, mask, hop3, deg, time, seed_time, **kwargs)
    assert not torch.allclose(out[b], out3[b])


def test_each_seed_is_scored_on_its_own(setup):
    model, args, kwargs = setup
    out = model(*args, **kwargs)
    seed_x = kwargs["seed_x"].clone()
    seed_x[0] += 3.0
    out2 = model(*args, seed_x=seed_x)
    assert not torch.allclose(out[0], out2[0])
    torch.testing.assert_close(out[1:], out2[1:])


def test_bad_budgets_and_sizes_fail_clearly(setup):
    model, _, _ = setup
    dm_kwargs = dict(col_names={"customer": {}, "article": {}}, col_stats={}, time_types=[],
                     entity_table="customer")
    with pytest.raises(ValueError, match="does not have.*'review'"):
        RelGraphTransformer(budgets={"customer": 1, "review": 4}, **dm_kwargs)
    with pytest.raises(ValueError, match="seed type 'customer'"):
        RelGraphTransformer(budgets={"article": 4}, **dm_kwargs)
    with pytest.raises(ValueError, match="multiple of model.heads"):
        RelGraphTransformer(budgets=4, channels=10, heads=4, **dm_kwargs)
