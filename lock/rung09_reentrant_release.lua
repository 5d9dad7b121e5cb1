-- Leave a reentrant lock once; free it when the owner's count reaches 0,
-- and while it stays above 0 give the lease a fresh TTL (as the articles'
-- script does: an outer acquisition still holds the lock).
-- KEYS[1] lock key: a hash {owner: hold count}
-- ARGV[1] owner, ARGV[2] lease in milliseconds
-- Returns the owner's remaining hold count (0: the lock is free now), or -1
-- when the owner holds no count: its lease lapsed, perhaps to another owner.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return -1
end
local n = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if n > 0 then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return n
end
redis.call("DEL", KEYS[1])
return 0
