-- Take a lease and hand out the next fencing token, in one step.
-- KEYS[1] lock key, KEYS[2] the lock's token counter (<lock key>:fence)
-- ARGV[1] the owner's random token, ARGV[2] lease in milliseconds
-- Returns the fencing token (1, 2, 3, ... for successive holders), or 0 when
-- the lock is held.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2])
end
return 0
