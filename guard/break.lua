-- Free the guard whoever holds it, and say whose it was, in one step.
-- KEYS[1] the guard's key
-- Returns the value it held, or false when nobody held it.
local v = redis.call("GET", KEYS[1])
if v then
  redis.call("DEL", KEYS[1])
end
return v
