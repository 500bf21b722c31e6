-- lahman-player-plays: for each seed time t (the start of a season), every player who
-- played in the season before, (t - window, t]; plays = 1 if the player bats or pitches in
-- a major-league game in the season after, (t, t + window].
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
WITH played AS (
    SELECT player_id, season FROM batting
    UNION ALL
    SELECT player_id, season FROM pitching
)
SELECT
    s.timestamp,
    p.player_id,
    CAST(COUNT(*) FILTER (WHERE p.season > s.timestamp) > 0 AS INTEGER) AS plays
FROM timestamps s
JOIN played p
    ON p.season > s.timestamp - $window
   AND p.season <= s.timestamp + $window
GROUP BY s.timestamp, p.player_id
HAVING COUNT(*) FILTER (WHERE p.season <= s.timestamp) > 0
