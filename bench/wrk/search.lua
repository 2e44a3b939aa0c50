-- /api/search with a new query on every request: prefixes (2 letters up to the whole word) of
-- the words make-library.py builds titles, artists and albums from, one or two words, the way
-- a listener types them. WRK_SEED makes the sequence repeatable.
local words = {}
for w in ("amber blue cedar dawn echo falcon garden harbor island jasmine kestrel lantern meadow " ..
          "night orchid pepper quartz river silver thunder umber velvet willow xenon yellow zephyr " ..
          "anchor bridge canyon delta ember forest glacier horizon ivory juniper kindle lagoon " ..
          "marble nectar ocean prairie quiet raven summit tundra unity valley winter yonder zenith"):gmatch("%S+") do
  words[#words + 1] = w
end
local limit = os.getenv("WRK_LIMIT") or "100"

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
  local q = prefix()
  if math.random() < 0.5 then q = q .. "+" .. prefix() end
  return wrk.format("GET", "/api/search?q=" .. q .. "&limit=" .. limit)
end
