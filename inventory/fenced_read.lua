-- Read a value under a fencing token, registering the token as the highest
-- seen for the resource, so that every older holder's later write fails.
-- KEYS[1] the highest token seen for the resource (e.g. lock:{item}:stock:fence:max)
-- KEYS[2] the key to read (stock, num)
-- ARGV[1] the caller's fencing token
-- Returns {1, value} (value "0" when the key is missing), or {0, highest}
-- when a higher token has been seen: the caller is stale.
local highest = tonumber(redis.call("GET", KEYS[1]) or "0")
local token = tonumber(ARGV[1])
if token < highest then
  return {0, highest}
end
if token > highest then
  redis.call("SET", KEYS[1], ARGV[1])
end
return {1, redis.call("GET", KEYS[2]) or "0"}
