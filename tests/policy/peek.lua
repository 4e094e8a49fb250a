-- peek.lua: reads what another plugin (ok.lua) set as a global: it must not see it.
return {
  kind = "evaluator",
  evaluate = function() return leak == nil, string.upper("y") end,
}
