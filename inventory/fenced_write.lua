-- Write a value under a fencing token, refusing a token lower than the
-- highest seen for the resource.
-- KEYS[1] the highest token seen for the resource (e.g. lock:{item}:stock:fence:max)
-- KEYS[2] the key to write (stock, num)
-- KEYS[3] optional: a counter to INCR in the same step (sold)
-- ARGV[1] the caller's fencing token, ARGV[2] the new value
-- Returns {1, token} when written, or {0, highest} when a higher token has
-- been seen: the caller is stale and nothing was written.
local highest = tonumber(redis.call("GET", KEYS[1]) or "0")
local token = tonumber(ARGV[1])
if token < highest then
  return {0, highest}
end
if token > highest then
  redis.call("SET", KEYS[1], ARGV[1])
end
redis.call("SET", KEYS[2], ARGV[2])
if KEYS[3] then
  redis.call("INCR", KEYS[3])
end
return {1, token}
