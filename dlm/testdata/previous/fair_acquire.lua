
local flag = ARGV[#ARGV]
local mode = string.sub(flag, 1, 1)
local loud = mode == '1' or mode == '2'
local pub, numsub = 'PUBLISH', 'NUMSUB'
if mode == '2' then pub, numsub = 'SPUBLISH', 'SHARDNUMSUB' end
local function readersHold(k, v)
  if v == 'dlm:readers' and string.sub(flag, 2, 2) == 'w' then
    redis.call('SET', k .. ':wait', '1', 'PX', ARGV[2])
  end
end
local function clearIntent(k)
  if redis.call('GET', k .. ':wait') then
    redis.call('DEL', k .. ':wait')
  end
end
local function announce(k, payload)
  if not loud then return end
  local ch = k .. ':wake'
  if payload then
    redis.pcall(pub, ch, payload)
    return
  end
  local subs = redis.pcall('PUBSUB', numsub, ch)
  local listening = type(subs) == 'table' and tonumber(subs[2]) or nil
  if listening == 0 then return end
  redis.pcall(pub, ch, 'r' .. (listening or 0))
end
local nk = #KEYS
local function take()
local function owns(v)
  return v == ARGV[1] and v ~= 'dlm:readers'
end

for i = 1, nk do
  local v = redis.call('GET', KEYS[i])
  if v and not owns(v) then
    readersHold(KEYS[i], v)
    return 0
  end
end
for i = 1, nk do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  announce(KEYS[i], 't')
end
return 1
end

nk = nk - 3
local line, places, tickets = KEYS[nk + 1], KEYS[nk + 2], KEYS[nk + 3]
local fa = #ARGV - 4
local me, life, held, bound = ARGV[fa], tonumber(ARGV[fa + 1]), tonumber(ARGV[fa + 2]), tonumber(ARGV[fa + 3])
local keep = math.max(life, tonumber(ARGV[2]))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', places, '-inf', now)
if #gone > 0 then
  redis.call('ZREM', line, unpack(gone))
  redis.call('ZREM', places, unpack(gone))
end
local function place()
  local mine = tonumber(redis.call('ZSCORE', line, me))
  if not mine then
    if redis.call('ZCARD', line) > bound then return -1 end
    mine = redis.call('INCR', tickets)
  end
  if held > mine then mine = held end
  if mine > tonumber(redis.call('GET', tickets) or '0') then
    redis.call('SET', tickets, mine)
  end
  redis.call('ZADD', line, mine, me)
  redis.call('ZADD', places, now + life, me)
  for _, k in ipairs({tickets, line, places}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
  return mine
end
local head = redis.call('ZRANGE', line, 0, 0)[1]
if head == nil or head == me then
  local r = take()
  if r > 0 then
    if me ~= '' then return {r, place()} end
    return {r, 0}
  end
end
if me == '' then return {0, 0} end
return {0, place()}
