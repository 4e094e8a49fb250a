-- excluded_periods.lua: job.autoscaler.excluded.periods in the job's time zone
-- (job.autoscaler.excluded.periods.timezone, default UTC). The list is split here: ';'
-- separates periods (any one excludes), '&&' joins a daily range and a cron expression
-- (both must match); each piece is matched by the host's native matcher, governor.daily
-- for ranges (they contain ':') and governor.cron for Quartz expressions.
local cfg = require "cfg"

local function piece_matches(expr, now, tz)
  if expr:find(":", 1, true) then
    return governor.daily.matches(expr, now, tz)
  end
  return governor.cron.matches(expr, now, tz)
end

local function element_matches(element, now, tz)
  local start = 1
  while true do
    local i = element:find("&&", start, true)
    local piece = cfg.trim(element:sub(start, i and i - 1 or -1))
    if not piece_matches(piece, now, tz) then return false end
    if not i then return true end
    start = i + 2
  end
end

return {
  kind = "exclusion",
  excluded = function(ctx)
    local periods = ctx.config["job.autoscaler.excluded.periods"] or ""
    local tz = ctx.config["job.autoscaler.excluded.periods.timezone"] or "UTC"
    if tz == "" then tz = "UTC" end
    for element in periods:gmatch("[^;]+") do
      element = cfg.trim(element)
      if element ~= "" and element_matches(element, ctx.now, tz) then
        return true, element
      end
    end
    return false
  end,
}
