-- Note the items a /reset makes, with when (their score), unless that
-- makes more than the most that may exist at once; then note none.
-- KEYS[1] the sorted set of the items that exist, by when last made
-- ARGV[1] the most items that may exist
-- ARGV[2] now, in ms
-- ARGV[3..] the items the reset makes
-- Returns {1, items now} when noted, {0, items now} when refused.
local new = 0
for i = 3, #ARGV do
  if not redis.call("ZSCORE", KEYS[1], ARGV[i]) then
    new = new + 1
  end
end
local n = redis.call("ZCARD", KEYS[1])
if n + new > tonumber(ARGV[1]) then
  return {0, n}
end
for i = 3, #ARGV do
  redis.call("ZADD", KEYS[1], ARGV[2], ARGV[i])
end
return {1, n + new}
