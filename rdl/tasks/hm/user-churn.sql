-- user-churn (rel-hm): for each seed time t, every customer with at least one
-- transaction in (t - window, t]; churn = 1 if the customer has no transaction in
-- (t, t + window].
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
--
-- RelBench writes it as every (seed time, customer) pair filtered by two EXISTS; the same
-- rows come from the transactions in (t - window, t + window] of each seed time (a range
-- join of the transactions with the few seed times), grouped by (t, customer): its cost
-- grows with the transactions, not with seed times x customers (at four times rel-hm's
-- size, 52 x 5.5M pairs; docs/performance.md, the cost curve).
SELECT
    s.timestamp,
    t.customer_id,
    CAST(NOT bool_or(t.t_dat > s.timestamp) AS INTEGER) AS churn
FROM timestamps s
JOIN transactions t
    ON t.t_dat > s.timestamp - $window
   AND t.t_dat <= s.timestamp + $window
WHERE t.customer_id IN (SELECT customer_id FROM customer)
GROUP BY s.timestamp, t.customer_id
HAVING bool_or(t.t_dat <= s.timestamp)
