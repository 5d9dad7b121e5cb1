-- Note the items a /reset makes, unless that makes more than the most
-- that may exist at once; then note none.
-- KEYS[1] the set of the items that exist
-- ARGV[1] the most items that may exist
-- ARGV[2..] the items the reset makes
-- Returns {1, items now} when noted, {0, items now} when refused.
local new = 0
for i = 2, #ARGV do
  if redis.call("SISMEMBER", KEYS[1], ARGV[i]) == 0 then
    new = new + 1
  end
end
local n = redis.call("SCARD", KEYS[1])
if n + new > tonumber(ARGV[1]) then
  return {0, n}
end
for i = 2, #ARGV do
  redis.call("SADD", KEYS[1], ARGV[i])
end
return {1, n + new}
