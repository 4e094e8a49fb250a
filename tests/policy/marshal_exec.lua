-- marshal_exec.lua: an executor that says whether its ctx has a backlog (only evaluators'
-- have one in a decision; marshal.test checks a test hands it the same way).
return {
  kind = "executor",
  execute = function(decision, ctx)
    return { backlog = type(ctx.backlog) }
  end,
}
