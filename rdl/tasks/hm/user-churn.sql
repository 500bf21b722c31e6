-- user-churn (rel-hm): for each seed time t, every customer with at least one
-- transaction in (t - window, t]; churn = 1 if the customer has no transaction in
-- (t, t + window].
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    c.customer_id,
    CAST(NOT EXISTS (
        SELECT 1 FROM transactions t
        WHERE t.customer_id = c.customer_id
          AND t.t_dat > s.timestamp
          AND t.t_dat <= s.timestamp + $window
    ) AS INTEGER) AS churn
FROM timestamps s, customer c
WHERE EXISTS (
    SELECT 1 FROM transactions t
    WHERE t.customer_id = c.customer_id
      AND t.t_dat > s.timestamp - $window
      AND t.t_dat <= s.timestamp
)
