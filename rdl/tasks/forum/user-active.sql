-- forum-user-active: for each seed time t, every user who posted or voted in
-- (t - window, t]; active = 1 if the user posts or votes again in (t, t + window].
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
WITH acts AS (
    SELECT author_id AS user_id, created FROM posts WHERE author_id IS NOT NULL
    UNION ALL
    SELECT user_id, created FROM votes WHERE user_id IS NOT NULL
)
SELECT
    s.timestamp,
    u.user_id,
    CAST(EXISTS (
        SELECT 1 FROM acts a
        WHERE a.user_id = u.user_id
          AND a.created > s.timestamp
          AND a.created <= s.timestamp + $window
    ) AS INTEGER) AS active
FROM timestamps s, users u
WHERE EXISTS (
    SELECT 1 FROM acts a
    WHERE a.user_id = u.user_id
      AND a.created > s.timestamp - $window
      AND a.created <= s.timestamp
)
