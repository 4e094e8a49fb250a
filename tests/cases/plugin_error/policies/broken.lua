-- broken.lua: an executor with a bug (indexes a nil field).
return {
  kind = "executor",
  execute = function(decision, ctx)
    return decision.nothing.here
  end,
}
