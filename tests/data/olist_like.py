"""A folder in the shape of the Olist Brazilian e-commerce export (Kaggle's nine CSV
files, seven here): ids as 32-digit hex text; a customer id per order and the person
behind it in ``customer_unique_id``; orders with their purchase time and four later
ones (approved, handed to the carrier, delivered, and the estimate known at purchase);
items, payments and reviews that hold no time of their own but their order's (items a
shipping deadline, reviews their creation date and answer time); review ids repeated."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def write_olist(folder: Path, orders: int = 600, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    hexes = lambda n: [f"{v:032x}" for v in rng.integers(0, 2**62, n)]   # noqa: E731
    fmt = lambda t: pd.Series(t).dt.strftime("%Y-%m-%d %H:%M:%S")      # noqa: E731
    day = lambda t: pd.Series(t).dt.strftime("%Y-%m-%d 00:00:00")      # noqa: E731
    folder.mkdir(parents=True, exist_ok=True)
    persons = hexes(orders // 2)
    customers = pd.DataFrame({
        "customer_id": hexes(orders), "customer_unique_id": rng.choice(persons, orders),
        "customer_zip_code_prefix": rng.integers(1000, 99999, orders),
        "customer_city": rng.choice(["sao paulo", "rio de janeiro", "curitiba"], orders),
        "customer_state": rng.choice(["SP", "RJ", "PR"], orders)})
    customers.to_csv(folder / "olist_customers_dataset.csv", index=False)
    sellers = pd.DataFrame({"seller_id": hexes(30), "seller_state": rng.choice(["SP", "MG"], 30)})
    sellers.to_csv(folder / "olist_sellers_dataset.csv", index=False)
    products = pd.DataFrame({
        "product_id": hexes(80),
        "product_category_name": rng.choice(["cama_mesa_banho", "esporte_lazer", None], 80),
        "product_weight_g": rng.integers(50, 30000, 80)})
    products.to_csv(folder / "olist_products_dataset.csv", index=False)
    bought = pd.Series(np.sort(pd.Timestamp("2017-01-05") + pd.to_timedelta(
        rng.uniform(0, 300, orders), unit="D")))
    days = lambda lo, hi: pd.to_timedelta(rng.uniform(lo, hi, orders), unit="D")  # noqa: E731
    approved, carrier = bought + days(0, 1), bought + days(1, 4)
    delivered = carrier + days(2, 15)
    order_ids = hexes(orders)
    pd.DataFrame({
        "order_id": order_ids, "customer_id": customers["customer_id"],
        "order_status": "delivered", "order_purchase_timestamp": fmt(bought),
        "order_approved_at": fmt(approved), "order_delivered_carrier_date": fmt(carrier),
        "order_delivered_customer_date": fmt(delivered),
        "order_estimated_delivery_date": day(bought + days(15, 30))}).to_csv(
        folder / "olist_orders_dataset.csv", index=False)
    n = rng.integers(1, 4, orders)
    item = np.repeat(np.arange(orders), n)
    pd.DataFrame({
        "order_id": np.asarray(order_ids)[item],
        "order_item_id": np.concatenate([np.arange(1, k + 1) for k in n]),
        "product_id": rng.choice(products["product_id"], len(item)),
        "seller_id": rng.choice(sellers["seller_id"], len(item)),
        "shipping_limit_date": fmt(bought[item].to_numpy() + pd.Timedelta(days=6)),
        "price": rng.uniform(5, 500, len(item)).round(2),
        "freight_value": rng.uniform(0, 60, len(item)).round(2)}).to_csv(
        folder / "olist_order_items_dataset.csv", index=False)
    pd.DataFrame({
        "order_id": order_ids, "payment_sequential": 1,
        "payment_type": rng.choice(["credit_card", "boleto", "voucher"], orders),
        "payment_installments": rng.integers(1, 10, orders),
        "payment_value": rng.uniform(10, 900, orders).round(2)}).to_csv(
        folder / "olist_order_payments_dataset.csv", index=False)
    reviews = hexes(orders)
    reviews[1] = reviews[0]   # Olist's review ids repeat across orders
    created = delivered.dt.normalize() + pd.Timedelta(days=1)
    pd.DataFrame({
        "review_id": reviews, "order_id": order_ids, "review_score": rng.integers(1, 6, orders),
        "review_creation_date": day(created),
        "review_answer_timestamp": fmt(created + days(0.1, 3))}).to_csv(
        folder / "olist_order_reviews_dataset.csv", index=False)
    return folder
