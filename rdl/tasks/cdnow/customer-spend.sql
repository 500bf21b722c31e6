-- cdnow-customer-spend: for each seed time t, every customer who has bought by t;
-- dollars = what they spend in (t, t + window], 0 if nothing.
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    c.customer_id,
    CAST(COALESCE((
        SELECT SUM(p.dollar_value) FROM purchases p
        WHERE p.customer_id = c.customer_id
          AND p.date > s.timestamp
          AND p.date <= s.timestamp + $window
    ), 0) AS DOUBLE) AS dollars
FROM timestamps s, customers c
WHERE c.first_seen <= s.timestamp
