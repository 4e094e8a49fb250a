-- ok.lua: a well-behaved evaluator; hostile.test calls it after each refused escape.
leak = "mine" -- a global of this plugin's own environment
return {
  kind = "evaluator",
  evaluate = function(vertex, evaluated, ctx)
    return { load = 0.5, string_upper = string.upper("x"), leak = leak, pi = math.pi > 3.14 }
  end,
}
