return {
  kind = "executor",
  execute = function(decision, ctx)
    local x = nil
    return x.field
  end,
}
