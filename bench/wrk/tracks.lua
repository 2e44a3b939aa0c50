-- /api/tracks pages at random offsets over the whole library (WRK_TOTAL tracks), WRK_LIMIT rows
-- each, in a random one of the sort orders.
local total = tonumber(os.getenv("WRK_TOTAL") or "100000")
local limit = tonumber(os.getenv("WRK_LIMIT") or "100")
local sorts = {}
for s in (os.getenv("WRK_SORTS") or "path"):gmatch("[^,]+") do sorts[#sorts + 1] = s end

function init(args)
  math.randomseed(tonumber(os.getenv("WRK_SEED") or "1") + (id or 0))
end

function setup(thread)
  thread:set("id", math.random(1000000))
end

request = function()
  local offset = math.random(0, math.max(0, total - limit))
  return wrk.format("GET", "/api/tracks?offset=" .. offset .. "&limit=" .. limit .. "&sort=" .. sorts[math.random(#sorts)])
end
