-- Renew a run's hold on the guard; take it again when nobody holds it
-- (it expired) unless another run took it since (the count of takes
-- moved on, or Redis restarted without it and the run's counters); and
-- never past the bound of one holding, renewals included.
-- KEYS[1] the guard's key
-- KEYS[2] the count of takes
-- ARGV[1] the run's token
-- ARGV[2] the value to write when taking it again (token, the time the
--         run first took it, its number, kind, name)
-- ARGV[3] the lease, in milliseconds
-- ARGV[4] now, Unix milliseconds
-- ARGV[5] the bound of one holding, in milliseconds
-- Returns {0, value}: the caller's own, renewed or taken again;
-- {1, value}: another run's; {2, value}: the caller's holding reached its
-- bound and the guard is free again; {3, ""}: another run took it since
-- and let it go.
local now, bound = tonumber(ARGV[4]), tonumber(ARGV[5])
local v = redis.call("GET", KEYS[1])
if not v then
  local since, seq = string.match(ARGV[2], "^%S+ (%d+) (%d+) ")
  since = tonumber(since)
  if now - since >= bound then
    return {2, ARGV[2]}
  end
  if redis.call("GET", KEYS[2]) ~= seq then
    return {3, ""}
  end
  redis.call("SET", KEYS[1], ARGV[2], "PX", math.min(tonumber(ARGV[3]), since + bound - now))
  return {0, ARGV[2]}
end
if string.sub(v, 1, #ARGV[1] + 1) ~= ARGV[1] .. " " then
  return {1, v}
end
local left = tonumber(string.match(v, "^%S+ (%d+)")) + bound - now
if left <= 0 then
  redis.call("DEL", KEYS[1])
  return {2, v}
end
redis.call("PEXPIRE", KEYS[1], math.min(tonumber(ARGV[3]), left))
return {0, v}
