-- Release a fair lock by handing it to the oldest live waiter, or leave
-- the queue, in one step.
-- KEYS[1] lock key, KEYS[2] the queue (list of tokens, oldest first),
-- KEYS[3] the queue's deadlines (hash {token: ms}), KEYS[4] the fencing
-- token counter
-- ARGV[1] the caller's token, ARGV[2] lease in ms, ARGV[3] the pub/sub
-- channel for handoffs ("" for none), ARGV[4] "1" when the caller is a
-- waiter giving up: its queue entry goes first
-- Returns 1 when the caller held the lock (now handed on or deleted), 0
-- when it did not (its lease lapsed, perhaps to someone else).
if ARGV[4] == "1" and redis.call("HDEL", KEYS[3], ARGV[1]) == 1 then
  redis.call("LREM", KEYS[2], 1, ARGV[1])
end
local holder = redis.call("GET", KEYS[1])
if holder and holder ~= ARGV[1] then
  return 0
end
-- Ours, or free because a lease lapsed: pass it to the oldest live waiter.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local head = redis.call("LPOP", KEYS[2])
  if not head then
    break
  end
  local dl = tonumber(redis.call("HGET", KEYS[3], head))
  redis.call("HDEL", KEYS[3], head)
  if dl and dl >= now then
    redis.call("SET", KEYS[1], head, "PX", ARGV[2])
    local fence = redis.call("INCR", KEYS[4])
    if ARGV[3] ~= "" then
      redis.call("PUBLISH", ARGV[3], head .. "|" .. fence)
    end
    if holder then return 1 end
    return 0
  end
end
if holder then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
