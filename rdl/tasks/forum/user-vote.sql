-- forum-user-vote: for each seed time t, every user who votes in (t, t + window];
-- post_id = the list of distinct posts voted on then.
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    v.user_id,
    LIST(DISTINCT v.post_id ORDER BY v.post_id) AS post_id
FROM timestamps s
JOIN votes v
    ON v.created > s.timestamp
   AND v.created <= s.timestamp + $window
WHERE v.user_id IS NOT NULL AND v.post_id IS NOT NULL
GROUP BY s.timestamp, v.user_id
