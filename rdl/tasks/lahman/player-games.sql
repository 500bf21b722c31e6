-- lahman-player-games: for each seed time t (the start of a season), every player who
-- played in the season before, (t - window, t]; games = the games the player plays in the
-- season after, (t, t + window] (batting's G, summed over the player's teams), 0 if none.
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
SELECT
    s.timestamp,
    b.player_id,
    CAST(COALESCE(SUM(b.G) FILTER (WHERE b.season > s.timestamp), 0) AS DOUBLE) AS games
FROM timestamps s
JOIN batting b
    ON b.season > s.timestamp - $window
   AND b.season <= s.timestamp + $window
GROUP BY s.timestamp, b.player_id
HAVING COUNT(*) FILTER (WHERE b.season <= s.timestamp) > 0
