-- Write a value under a fencing token, and only if the key still holds the
-- value the caller computed from (compare-and-set): a carried value
-- (lock.CohortCarry) is checked here instead of read again.
-- KEYS[1] the highest token seen for the resource (e.g. lock:{item}:stock:fence:max)
-- KEYS[2] the key to write (stock, num)
-- KEYS[3] optional: a counter to INCR in the same step (sold)
-- ARGV[1] the caller's fencing token, ARGV[2] the new value,
-- ARGV[3] the value the caller expects the key to hold (a missing key is "0")
-- Returns {1, token} when written; {0, highest} when a higher token has
-- been seen (the caller is stale); {-1, current} when the key holds
-- another value. Nothing is written unless it returns 1.
local highest = tonumber(redis.call("GET", KEYS[1]) or "0")
local token = tonumber(ARGV[1])
if token < highest then
  return {0, highest}
end
local current = redis.call("GET", KEYS[2]) or "0"
if current ~= ARGV[3] then
  return {-1, current}
end
if token > highest then
  redis.call("SET", KEYS[1], ARGV[1])
end
redis.call("SET", KEYS[2], ARGV[2])
if KEYS[3] then
  redis.call("INCR", KEYS[3])
end
return {1, token}
