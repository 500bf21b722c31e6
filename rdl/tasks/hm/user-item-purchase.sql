-- user-item-purchase (rel-hm): for each seed time t, every customer with at least one
-- transaction in (t, t + window]; article_id = the list of distinct articles bought then.
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    t.customer_id,
    LIST(DISTINCT t.article_id ORDER BY t.article_id) AS article_id
FROM timestamps s
JOIN transactions t
    ON t.t_dat > s.timestamp
   AND t.t_dat <= s.timestamp + $window
WHERE t.customer_id IS NOT NULL AND t.article_id IS NOT NULL
GROUP BY s.timestamp, t.customer_id
