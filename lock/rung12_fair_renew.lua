-- Renew a lease, only while the caller still holds the lock.
-- KEYS[1] lock key
-- ARGV[1] the holder's token, ARGV[2] lease in ms
-- Returns 1 when renewed, 0 when the lock is gone or someone else's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
