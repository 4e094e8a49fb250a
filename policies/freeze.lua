-- freeze.lua: an executor that keeps scale-ups gentle and honours change freezes.
-- Parameters (under job.autoscaler.scaling.custom-executor.<name>.):
--   max-factor  a scale-up may at most multiply a vertex's parallelism by this (>= 1)
--   freeze      an excluded-periods expression (cron / daily range, ';' and '&&') during
--               which every change is vetoed, in `timezone` (default: the job's
--               excluded.periods.timezone, else UTC)
--   until       an RFC 3339 instant before which every change is vetoed
local cfg = require "cfg"

return {
  kind = "executor",
  priority = 10,
  execute = function(decision, ctx)
    local p = ctx.params
    if p["until"] and p["until"] ~= "" then
      if ctx.now < governor.time(p["until"]) then
        return nil, "change freeze until " .. p["until"]
      end
    end
    if p.freeze and p.freeze ~= "" then
      local tz = p.timezone or ctx.config["job.autoscaler.excluded.periods.timezone"] or "UTC"
      if governor.periods.matches(p.freeze, ctx.now, tz) then
        return nil, "change freeze (" .. p.freeze .. ")"
      end
    end
    local f = cfg.num(p["max-factor"])
    if f then
      if f < 1 then error("max-factor must be at least 1, got " .. p["max-factor"]) end
      for _, v in ipairs(decision.vertices) do
        local cap = math.ceil(v.current * f)
        if v.target > v.current and v.target > cap then
          v.target = cap
        end
      end
    end
    return decision
  end,
}
