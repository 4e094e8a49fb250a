-- hpa_eval.lua + hpa_exec.lua: Kubernetes HPA's rule, to compare policies on your own
-- history: desired = ceil(current x utilization / target), no change while
-- |utilization / target - 1| <= tolerance. Utilization is the vertex's busy fraction (LOAD).
-- Parameters (both plugins): target (default job.autoscaler.utilization.target),
-- tolerance (default 0.1).
-- The evaluator moves the core's bounds to the HPA tolerance band: with r = LOAD x TPR (the
-- rate the vertex processes now), TPR < r / (target (1 + tol)) exactly when
-- LOAD > target (1 + tol), and TPR > r / (target (1 - tol)) exactly when
-- LOAD < target (1 - tol). The executor then replaces the targets with HPA's formula.
local cfg = require "cfg"

return {
  kind = "evaluator",
  evaluate = function(vertex, evaluated, ctx)
    local target = cfg.num(ctx.params.target) or cfg.num(ctx.config["job.autoscaler.utilization.target"]) or 0.7
    local tol = cfg.num(ctx.params.tolerance) or 0.1
    local u, tpr = evaluated.load, evaluated.true_processing_rate
    if not u or not tpr or u <= 0 or tpr == math.huge then return nil end
    local r = u * tpr
    return {
      target_data_rate = r,
      catch_up_data_rate = 0,
      scale_up_rate_threshold = r / (target * (1 + tol)),
      scale_down_rate_threshold = tol < 1 and r / (target * (1 - tol)) or math.huge,
    }
  end,
}
