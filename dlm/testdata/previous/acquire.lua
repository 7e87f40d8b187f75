
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
