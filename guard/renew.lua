-- Renew a run's hold on the guard; take it again when nobody holds it
-- (it expired, or Redis restarted without it), never from another run.
-- KEYS[1] the guard's key
-- ARGV[1] the run's token
-- ARGV[2] the value to write when taking it again (token, time, name)
-- ARGV[3] the lease, in milliseconds
-- Returns the value of the run that holds it now: the caller's own
-- (renewed, or taken again), or another run's.
local v = redis.call("GET", KEYS[1])
if not v then
  redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
  return ARGV[2]
end
if string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. " " then
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
end
return v
