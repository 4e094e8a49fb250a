-- marshal_test.lua: test.ctx builds the ctx a decision would (see marshal.lua).
local m = test.plugin("marshal")

test.case("test.ctx passes parameters and options as text", function()
  local out = m.evaluate({}, {}, test.ctx { params = { n = 2, b = false }, config = { k = 1.5 } })
  test.eq(out["params.n"], "string:2")
  test.eq(out["params.b"], "string:false")
  test.eq(out["config.k"], "string:1.5")
end)

test.case("test.ctx's job is read-only all the way down", function()
  local ctx = test.ctx { job = { vertices = { { id = "v" } } } }
  test.fails(function() ctx.job.vertices[1].id = "x" end, "read-only")
  test.fails(function() ctx.job.name = "x" end, "read-only")
end)

test.case("test.ctx leaves the tables it is given as they were", function()
  local job = { vertices = { { id = "v" } } }
  test.ctx { job = job }
  job.vertices[1].id = "w"
  test.eq(job.vertices[1].id, "w")
end)

test.case("a parameter that has no text is refused", function()
  test.fails(function() test.ctx { params = { o = {} } } end, "ctx.params.o must be text")
end)
