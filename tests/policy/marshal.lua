-- marshal.lua: describes what it was handed (marshal.test, marshal_test.lua), so that a policy
-- test can check it gets its values as the server would hand them: parameters and options as
-- text, numbers by the host's rule (an integral figure is an integer), ctx.backlog for
-- evaluators, ctx.job read-only all the way down.
local function describe(x)
  if type(x) == "number" then return math.type(x) .. ":" .. tostring(x) end
  return type(x) .. ":" .. tostring(x)
end

return {
  kind = "evaluator",
  evaluate = function(vertex, evaluated, ctx)
    local out = { backlog = describe(ctx.backlog) }
    for k, x in pairs(ctx.params) do out["params." .. k] = describe(x) end
    for k, x in pairs(ctx.config) do out["config." .. k] = describe(x) end
    for k, x in pairs(vertex) do out["vertex." .. k] = describe(x) end
    for k, x in pairs(evaluated) do out["evaluated." .. k] = describe(x) end
    local v = ctx.job.vertices and ctx.job.vertices[1]
    if v then
      out["job.vertices[1] read-only"] = not pcall(function() v.id = "changed" end)
    end
    return out
  end,
}
