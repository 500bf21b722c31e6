-- nycflights13-plane-flights: for each seed time t, every plane that departed from New
-- York in (t - window, t]; flights = how many times it departs from New York in
-- (t, t + window], 0 if none. A departure is a flight that left (not cancelled).
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    f.tailnum,
    CAST(COUNT(*) FILTER (WHERE f.time_hour > s.timestamp) AS DOUBLE) AS flights
FROM timestamps s
JOIN flights f
    ON f.time_hour > s.timestamp - $window
   AND f.time_hour <= s.timestamp + $window
WHERE f.tailnum IS NOT NULL AND f.dep_time IS NOT NULL
GROUP BY s.timestamp, f.tailnum
HAVING COUNT(*) FILTER (WHERE f.time_hour <= s.timestamp) > 0
