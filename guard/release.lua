-- Release the guard only if the run still holds it: compare and delete.
-- KEYS[1] the guard's key
-- ARGV[1] the run's token
-- Returns 1 when deleted, 0 when it is gone or another run's.
local v = redis.call("GET", KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. " " then
  return redis.call("DEL", KEYS[1])
end
return 0
