-- Renew a reentrant lock's lease, only while the owner still holds it.
-- KEYS[1] lock key: a hash {owner: hold count}
-- ARGV[1] owner, ARGV[2] lease in milliseconds
-- Returns 1 when renewed, 0 when the owner no longer holds the lock.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
