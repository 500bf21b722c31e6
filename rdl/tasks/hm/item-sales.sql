-- item-sales (rel-hm): for each seed time t, every article; sales = the sum of the
-- prices of its transactions in (t, t + window], 0 if there are none.
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    a.article_id,
    COALESCE(SUM(t.price), 0.0) AS sales
FROM timestamps s
CROSS JOIN article a
LEFT JOIN transactions t
    ON t.article_id = a.article_id
   AND t.t_dat > s.timestamp
   AND t.t_dat <= s.timestamp + $window
GROUP BY s.timestamp, a.article_id
