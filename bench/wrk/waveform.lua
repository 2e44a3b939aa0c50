-- /api/waveform over one cached track at random zoom windows (a page zooming and scrolling):
-- a window of 1 s to the whole track at a random place, 1000 pairs. WAVEFORM_ID and
-- WAVEFORM_SECONDS come from the environment (bench/waveform.sh).
local id = os.getenv("WAVEFORM_ID") or "1"
local seconds = tonumber(os.getenv("WAVEFORM_SECONDS") or "3600")
math.randomseed(26)

request = function()
  local span = math.exp(math.random() * math.log(seconds))
  local from = math.random() * (seconds - span)
  return wrk.format("GET", string.format("/api/waveform/%s?from=%.3f&to=%.3f&width=1000", id, from, from + span))
end
