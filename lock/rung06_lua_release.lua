-- Release a lock only if we still own it, in one atomic step.
-- KEYS[1] lock key
-- ARGV[1] the owner token this holder wrote when it acquired
-- ARGV[2] optional: a pub/sub channel to announce the release on, so that
-- waiters sleeping for it wake at once (see Notifier)
-- Returns 1 when deleted, 0 when the lock is gone or someone else's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  if ARGV[2] and ARGV[2] ~= "" then
    redis.call("PUBLISH", ARGV[2], "r|" .. KEYS[1])
  end
  return 1
end
return 0
