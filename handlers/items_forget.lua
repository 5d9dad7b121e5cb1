-- Forget item ARGV[1] if it was last made before ARGV[2] (ms): not made
-- again since it was found idle.
-- KEYS[1] the sorted set of the items that exist, by when last made
-- Returns 1 if forgotten.
local made = redis.call("ZSCORE", KEYS[1], ARGV[1])
if made and tonumber(made) < tonumber(ARGV[2]) then
  return redis.call("ZREM", KEYS[1], ARGV[1])
end
return 0
