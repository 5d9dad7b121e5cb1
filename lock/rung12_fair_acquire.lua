-- Take a fair lock, or queue for it, in one step.
-- KEYS[1] lock key (holds the holder's token), KEYS[2] the queue: a list of
-- waiter tokens, oldest first, KEYS[3] the queue's deadlines: a hash
-- {token: ms on Redis's clock}, KEYS[4] the fencing token counter
-- ARGV[1] this waiter's token, ARGV[2] lease in ms, ARGV[3] how long this
-- queue entry stays live without a refresh (ms), ARGV[4] the pub/sub channel
-- for handoffs ("<token>|<fence>" is published there; "" for none)
-- Returns the fencing token (> 0) when the lock is ours, 0 when we are
-- queued (or our entry was refreshed).
local holder = redis.call("GET", KEYS[1])
if holder == ARGV[1] then
  -- A release handed it to us and we had not heard yet.
  return tonumber(redis.call("GET", KEYS[4]))
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not holder then
  -- Free. The oldest live waiter gets it; stale entries (their waiter
  -- gave up or died) are dropped on the way.
  local head
  repeat
    head = redis.call("LINDEX", KEYS[2], 0)
    if head then
      local dl = tonumber(redis.call("HGET", KEYS[3], head))
      if dl and dl >= now then break end
      redis.call("LPOP", KEYS[2])
      redis.call("HDEL", KEYS[3], head)
    end
  until not head
  if head then
    redis.call("LPOP", KEYS[2])
    redis.call("HDEL", KEYS[3], head)
  end
  if not head or head == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return redis.call("INCR", KEYS[4])
  end
  -- Someone older is waiting (it missed its wake-up, or the last holder's
  -- lease lapsed): hand it to them, and queue behind.
  redis.call("SET", KEYS[1], head, "PX", ARGV[2])
  local fence = redis.call("INCR", KEYS[4])
  if ARGV[4] ~= "" then
    redis.call("PUBLISH", ARGV[4], head .. "|" .. fence)
  end
end
-- Queue at the tail, or refresh our entry where it stands.
if redis.call("HSET", KEYS[3], ARGV[1], now + tonumber(ARGV[3])) == 1 then
  redis.call("RPUSH", KEYS[2], ARGV[1])
end
local keep = 2 * tonumber(ARGV[3]) + tonumber(ARGV[2])
redis.call("PEXPIRE", KEYS[2], keep)
redis.call("PEXPIRE", KEYS[3], keep)
return 0
