-- Take a reentrant lock, or enter it again as its owner, in one step.
-- KEYS[1] lock key: a hash {owner: hold count}
-- ARGV[1] owner, ARGV[2] lease in milliseconds
-- Returns the owner's hold count after this acquisition (1: the outermost),
-- or 0 when another owner holds the lock.
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  local n = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return n
end
return 0
