-- Sell one item in one atomic step: the ceiling no lock can beat.
-- KEYS[1] stock, KEYS[2] sold counter
-- Returns the stock left after the sale, or -1 when there was none to sell.
local n = tonumber(redis.call("GET", KEYS[1]) or "0")
if n <= 0 then
  return -1
end
redis.call("SET", KEYS[1], n - 1)
redis.call("INCR", KEYS[2])
return n - 1
