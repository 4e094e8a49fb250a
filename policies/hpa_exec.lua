-- hpa_exec.lua: the executor half of the HPA pair (see hpa_eval.lua).
local cfg = require "cfg"

return {
  kind = "executor",
  priority = 0,
  execute = function(decision, ctx)
    local target = cfg.num(ctx.params.target) or cfg.num(ctx.config["job.autoscaler.utilization.target"]) or 0.7
    local tol = cfg.num(ctx.params.tolerance) or 0.1
    for _, v in ipairs(decision.vertices) do
      local u = v.evaluated and v.evaluated.load
      if u and not v.excluded then
        local ratio = u / target
        if math.abs(ratio - 1) <= tol then
          v.target = v.current
        else
          v.target = math.max(1, math.ceil(v.current * ratio - 1e-9))
        end
      end
    end
    return decision
  end,
}
