-- nycflights13-plane-dest: for each seed time t, every plane that departs from New York in
-- (t, t + window]; dest = the list of airports it flies to then. A departure is a flight
-- that left (dep_time known: not cancelled).
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    f.tailnum,
    LIST(DISTINCT f.dest ORDER BY f.dest) AS dest
FROM timestamps s
JOIN flights f
    ON f.time_hour > s.timestamp
   AND f.time_hour <= s.timestamp + $window
WHERE f.tailnum IS NOT NULL AND f.dest IS NOT NULL AND f.dep_time IS NOT NULL
GROUP BY s.timestamp, f.tailnum
