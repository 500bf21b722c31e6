-- cdnow-customer-repeat: for each seed time t, every customer who has bought by t;
-- buys = 1 if they buy in (t, t + window].
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    c.customer_id,
    CAST(EXISTS (
        SELECT 1 FROM purchases p
        WHERE p.customer_id = c.customer_id
          AND p.date > s.timestamp
          AND p.date <= s.timestamp + $window
    ) AS INTEGER) AS buys
FROM timestamps s, customers c
WHERE c.first_seen <= s.timestamp
