-- Release a lock only if we still own it, in one atomic step.
-- KEYS[1] lock key
-- ARGV[1] the owner token this holder wrote when it acquired
-- Returns 1 when deleted, 0 when the lock is gone or someone else's.
-- (The DEL is announced by Redis itself, as a keyspace event, to the
-- waiters that sleep until it: see lock.Notifier.)
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
