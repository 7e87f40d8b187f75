
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

local function owns(v)
  return v == ARGV[1] and v ~= 'dlm:readers'
end

local n = nk / 2
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if v and not owns(v) then
    readersHold(KEYS[i], v)
    return 0
  end
end
local fx = tonumber(ARGV[3])
local f = 0
for i = n + 1, 2 * n do
  local c = redis.call('GET', KEYS[i])
  if c then
    c = tonumber(c)
  elseif fx > 0 then
    local t = redis.call('TIME')
    c = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    c = 0
  end
  if c > f then f = c end
end
f = f + 1
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  if fx > 0 then
    redis.call('SET', KEYS[n + i], f, 'PX', fx)
  else
    redis.call('SET', KEYS[n + i], f)
  end
  announce(KEYS[i], 't')
end
return f
