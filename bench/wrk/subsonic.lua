-- Subsonic calls for bench/subsonic.sh, each request with token auth (u, t = md5(password + s), s):
--   WRK_MODE=albumlist  getAlbumList2 of 50 albums at a random offset, type alphabeticalByName or newest
--   WRK_MODE=search3    search3 with a new query every request (word prefixes as bench/wrk/search.lua)
--   WRK_MODE=ping       ping
-- The token is computed once per thread by the script (WRK_TOKEN, WRK_SALT from the environment).
local words = {}
for w in ("amber blue cedar dawn echo falcon garden harbor island jasmine kestrel lantern meadow " ..
          "night orchid pepper quartz river silver thunder umber velvet willow xenon yellow zephyr " ..
          "anchor bridge canyon delta ember forest glacier horizon ivory juniper kindle lagoon " ..
          "marble nectar ocean prairie quiet raven summit tundra unity valley winter yonder zenith"):gmatch("%S+") do
  words[#words + 1] = w
end
local mode = os.getenv("WRK_MODE") or "ping"
local albums = tonumber(os.getenv("WRK_ALBUMS") or "1000")
local auth = "u=" .. (os.getenv("WRK_USER") or "bench") .. "&t=" .. (os.getenv("WRK_TOKEN") or "") ..
             "&s=" .. (os.getenv("WRK_SALT") or "") .. "&v=1.16.1&c=wrk&f=json"

local function prefix()
  local w = words[math.random(#words)]
  return w:sub(1, math.random(2, #w))
end

function init(args)
  math.randomseed(tonumber(os.getenv("WRK_SEED") or "1") + (id or 0))
end

function setup(thread)
  thread:set("id", math.random(1000000))
end

request = function()
  if mode == "albumlist" then
    local kind = math.random() < 0.5 and "alphabeticalByName" or "newest"
    return wrk.format("GET", "/rest/getAlbumList2?" .. auth .. "&type=" .. kind .. "&size=50&offset=" ..
                      math.random(0, math.max(0, albums - 50)))
  elseif mode == "search3" then
    local q = prefix()
    if math.random() < 0.5 then q = q .. "+" .. prefix() end
    return wrk.format("GET", "/rest/search3?" .. auth .. "&query=" .. q .. "&songCount=20&albumCount=20&artistCount=20")
  end
  return wrk.format("GET", "/rest/ping?" .. auth)
end
