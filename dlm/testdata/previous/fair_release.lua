
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

local function owns(v)
  return v == ARGV[1] and v ~= 'dlm:readers'
end
local waits = string.sub(flag, 2, 2) == 'w'

local nk = #KEYS - 2
local line, places = KEYS[nk + 1], KEYS[nk + 2]
if ARGV[2] ~= '' then
  redis.call('ZREM', line, ARGV[2])
  redis.call('ZREM', places, ARGV[2])
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', places, '-inf', now)
if #gone > 0 then
  redis.call('ZREM', line, unpack(gone))
  redis.call('ZREM', places, unpack(gone))
end
local head = redis.call('ZRANGE', line, 0, 0)[1] or ''
local n = 0
for i = 1, nk do
  if owns(redis.call('GET', KEYS[i])) then
    n = n + redis.call('DEL', KEYS[i])
    if not waits then clearIntent(KEYS[i]) end
    announce(KEYS[i], head)
  end
end
return n
