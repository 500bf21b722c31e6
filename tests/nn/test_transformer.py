"""The relational graph transformer: pad tokens and other seeds change no output, bad
budgets fail clearly; its link variant scores candidate tokens pair-wise."""
import pytest
import torch

from rdl.nn import ContextGT, RelGraphTransformer
from rdl.families.link import LinkTask
from rdl.families import data_module
from rdl.training.data_settings import DataSettings
from rdl.families.link.module import LinkTaskModule
from rdl.families.node.module import NodeTaskModule
from rdl.training.shapes import Tokens
from tests.training.test_label_history import make_task, random_db


@pytest.fixture(scope="module")
def setup():
    dm = data_module(random_db(), make_task("user-churn"), DataSettings.of(
        batch_size=16, num_neighbors=[6, 3], cache_dir=False, tree_prior=False))
    torch.manual_seed(0)
    model = RelGraphTransformer(budgets={"customer": 2, "transactions": 5, "article": 4,
                                         "label_history": 3},
                                channels=16, encoder_layers=1, heads=2, num_centroids=4,
                                **dm.model_kwargs()).eval()
    dm = dm.with_shapes(Tokens(model.budgets))
    module = NodeTaskModule(model, dm.task, optimizer=torch.optim.Adam, compile=False,
                            shapes=dm.shapes)
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


def test_static_token_batches_give_the_dynamic_outputs(setup):
    """Static token sets (compiled with dynamic=False): every batch, the short last
    one too, has the same shapes (pad seeds, one row per token), and the real seeds'
    outputs are those of the distinct-row, unpadded batch."""
    model, B = setup[0], 4
    task = make_task("user-churn")
    outs, shapes = {}, {}
    for static in (False, True):
        dm = data_module(random_db(), task, DataSettings.of(batch_size=B, num_neighbors=[6, 3],
                                                            cache_dir=False, tree_prior=False))
        dm = dm.with_shapes(Tokens(model.budgets, static))
        module = NodeTaskModule(model, task, optimizer=torch.optim.Adam, compile=False,
                                shapes=dm.shapes).eval()
        outs[static], shapes[static] = [], set()
        for batch in dm.loader("val", shuffle=False):
            args, kwargs = module.inputs(batch)
            shapes[static].add((args[-1].shape, kwargs["seed_x"].shape,
                                *((args[0][t].num_rows, args[1][t].shape) for t in model.types)))
            with torch.no_grad():
                outs[static].append(module(batch))
    n = len(task.split_table("val", random_db()))
    assert n > B and n % B, "several batches, the last one short"
    assert len(shapes[True]) == 1, shapes[True]                       # one shape for all
    ((seed_time, seed_x, *per_type),) = shapes[True]
    assert seed_time == (B,) and seed_x[0] == B
    assert all(rows == B * model.budgets[t] and slots == (B, model.budgets[t])
               for (rows, slots), t in zip(per_type, model.types))
    assert len(shapes[False]) > 1                                     # dynamic: varies
    dyn, sta = torch.cat(outs[False]), torch.cat(outs[True])
    assert sta.shape == dyn.shape == (n,)                            # pad seeds dropped
    torch.testing.assert_close(sta, dyn, rtol=1e-4, atol=1e-5)


def test_context_transformer_scores_its_candidate_tokens_pairwise_and_the_rest_by_embedding():
    task = LinkTask(name="user-item-purchase", sql="hm/user-item-purchase.sql",
                    kind="link_prediction", entity_table="customer", entity_col="customer_id",
                    target_table="article", target_col="article_id", window="7d",
                    val_timestamp="2020-02-26", test_timestamp="2020-03-04", eval_k=4)
    dm = data_module(random_db(), task, DataSettings.of(batch_size=8, num_neighbors=[6, 3],
                                                        cache_dir=False, tree_prior=False))
    torch.manual_seed(0)
    model = ContextGT(budgets={"customer": 1, "transactions": 4, "article": 8}, channels=16,
                      encoder_layers=1, heads=2, num_centroids=4, **dm.model_kwargs()).eval()
    dm = dm.with_shapes(Tokens(model.budgets))
    module = LinkTaskModule(model, task, optimizer=torch.optim.Adam, compile=False,
                            num_dst_nodes=dm.model_kwargs()["num_dst_nodes"], shapes=dm.shapes)
    batch = next(iter(dm.loader("val", shuffle=False)))
    store = batch["article"]
    with torch.no_grad():
        got = module.scores(batch)
        pair, seed = module(batch)
    two = seed @ model.dst_emb.weight.t() + model.dst_bias.weight.t()
    B, K = store.tok_id.shape
    assert got.shape == (B, model.dst_emb.num_embeddings) and pair.shape == (B, K)
    mask = store.tok_mask
    assert mask.any() and not mask.all()  # real candidate tokens and pad slots both
    want = two.clone()
    for b in range(B):
        for j in range(K):
            if mask[b, j]:
                want[b, store.tok_id[b, j]] = pair[b, j]
    torch.testing.assert_close(got, want)
    # the pair-wise scores are not the two-tower ones they replace
    real = got[mask.nonzero()[:, 0], store.tok_id[mask]]
    assert not torch.allclose(real, two[mask.nonzero()[:, 0], store.tok_id[mask]])
