
local function owns(v)
  return v == ARGV[1] and v ~= 'dlm:readers'
end

local n = #KEYS / 2
for i = 1, n do
  if not owns(redis.call('GET', KEYS[i])) then return 0 end
end
local f = tonumber(ARGV[2])
for i = n + 1, 2 * n do
  if tonumber(redis.call('GET', KEYS[i]) or '0') < f then
    local ttl = redis.call('PTTL', KEYS[i])
    if ttl > 0 then
      redis.call('SET', KEYS[i], ARGV[2], 'PX', ttl)
    else
      redis.call('SET', KEYS[i], ARGV[2])
    end
  end
end
return 1
