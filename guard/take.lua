-- Take the stack's run guard unless a run holds it, in one atomic step:
-- a guest's run (kind "g") gives way to the owner's (kind "o").
-- KEYS[1] the guard's key
-- KEYS[2] the count of takes (in KEYS[1]'s slot)
-- ARGV[1] the taker's token
-- ARGV[2] the time it takes it, Unix ms
-- ARGV[3] its kind: "g" or "o"
-- ARGV[4] its name
-- ARGV[5] the lease, in milliseconds
-- Returns {1, value, the guest's value it took the stack from or false}
-- when taken, {0, the holder's value} when refused. A value is "TOKEN
-- UNIXMS SEQ KIND NAME".
local v = redis.call("GET", KEYS[1])
if v then
  local kind = string.match(v, "^%S+ %d+ %d+ (%a) ")
  if not (kind == "g" and ARGV[3] == "o") then
    return {0, v}
  end
end
local seq = redis.call("INCR", KEYS[2])
local mine = ARGV[1] .. " " .. ARGV[2] .. " " .. seq .. " " .. ARGV[3] .. " " .. ARGV[4]
redis.call("SET", KEYS[1], mine, "PX", ARGV[5])
return {1, mine, v}
