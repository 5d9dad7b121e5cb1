-- Take the stack's run guard unless a run holds it, in one atomic step.
-- KEYS[1] the guard's key
-- ARGV[1] the taker's value: its token, the time it takes it (Unix ms) and its name, space-separated
-- ARGV[2] the lease, in milliseconds
-- Returns false when taken, else the value of the run that holds it.
local v = redis.call("GET", KEYS[1])
if v then
  return v
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return false
