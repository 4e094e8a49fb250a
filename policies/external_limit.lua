-- external_limit.lua: an evaluator for a vertex that writes to an external system with a
-- known limit (spec section 8 item 13). Parameters (under
-- job.autoscaler.metrics.custom-evaluator.<name>.):
--   vertex    the id of the vertex that writes to the external system
--   max-rate  records/s the external system accepts
-- The named vertex's target data rate is capped at max-rate, and every vertex upstream of it
-- at its share of max-rate (max-rate x its input rate / the vertex's input rate, from the
-- sample's records_in_per_s gauges), so no vertex is scaled for throughput that cannot be
-- delivered. The catch-up rate is cut to what is left under the cap, and the utilization
-- thresholds are recomputed from the capped rates (the core does not recompute them after
-- an evaluator, core/README.md's Evaluation), with the configured restart.time for the restart share.
local cfg = require "cfg"

local function by_id(job)
  local t = {}
  for _, v in ipairs(job.vertices or {}) do t[v.id] = v end
  return t
end

-- Is `from` upstream of (or equal to) `to`?
local function reaches(vertices, from, to, seen)
  if from == to then return true end
  seen = seen or {}
  for _, v in pairs(vertices) do
    for _, input in ipairs(v.inputs) do
      if input.from == from and not seen[v.id] then
        seen[v.id] = true
        if reaches(vertices, v.id, to, seen) then return true end
      end
    end
  end
  return false
end

return {
  kind = "evaluator",
  evaluate = function(vertex, evaluated, ctx)
    local target = ctx.params.vertex
    local limit = cfg.num(ctx.params["max-rate"])
    if not target or not limit then
      error("external_limit needs the parameters 'vertex' and 'max-rate'")
    end
    local vertices = by_id(ctx.job)
    local sink = vertices[target]
    if not sink or not reaches(vertices, vertex.id, target) then return nil end
    local cap = limit
    if vertex.id ~= target then
      local mine = vertex.metrics.records_in_per_s
      local theirs = sink.metrics.records_in_per_s
      if not mine or not theirs or theirs <= 0 then return nil end
      cap = limit * mine / theirs
    end
    local tdr = evaluated.target_data_rate
    local catch_up = evaluated.catch_up_data_rate or 0
    if not tdr or tdr + catch_up <= cap then return nil end
    tdr = math.min(tdr, cap)
    catch_up = math.max(0, math.min(catch_up, cap - tdr))
    local upper, lower = cfg.bounds(ctx.config, ctx.backlog)
    local restart_s = governor.duration(ctx.config["job.autoscaler.restart.time"] or "5 min") // 1000
    local catch_up_s = governor.duration(ctx.config["job.autoscaler.catch-up.duration"] or "30 min") // 1000
    local restart_rate = catch_up_s > 0 and tdr * restart_s / catch_up_s or 0
    local out = { target_data_rate = tdr, catch_up_data_rate = catch_up }
    out.scale_up_rate_threshold = upper > 0 and cfg.round(catch_up + tdr / upper) or math.huge
    out.scale_down_rate_threshold = lower > 0 and cfg.round(catch_up + restart_rate + tdr / lower)
      or math.huge
    ctx.log(string.format("%s: target data rate capped at %.3f (external limit %s at %s)",
      vertex.id, tdr, limit, target))
    return out
  end,
}
