-- lahman-player-team: for each seed time t (the start of a season), every player who bats
-- or pitches in the season after, (t, t + window]; franchID = the list of franchises
-- (teams.franchID) he plays for then (more than one if he is traded in the season). A
-- player who debuts in that season is no seed (he does not exist at t: rdl.tasks.Task.existing).
-- Inputs: `timestamps(timestamp)` and the database tables; $window is an INTERVAL.
WITH played AS (
    SELECT player_id, team_id, season FROM batting
    UNION ALL
    SELECT player_id, team_id, season FROM pitching
)
SELECT
    s.timestamp,
    p.player_id,
    LIST(DISTINCT t.franchID ORDER BY t.franchID) AS franchID
FROM timestamps s
JOIN played p
    ON p.season > s.timestamp
   AND p.season <= s.timestamp + $window
JOIN teams t ON t.team_id = p.team_id
WHERE t.franchID IS NOT NULL
GROUP BY s.timestamp, p.player_id
