-- freeze_test.lua: the freeze executor through the Lua test API.
local freeze = test.plugin("freeze")
local T = 1764410580000 -- 2025-11-29T10:03:00Z

test.case("max-factor limits a scale-up per step", function()
  local d = { vertices = { { id = "agg", current = 4, target = 20 } } }
  local out = freeze.execute(d, test.ctx { params = { ["max-factor"] = "3" }, now = T })
  -- ceil(4 x 3) = 12
  test.eq(out.vertices[1].target, 12)
end)

test.case("a freeze window vetoes with a reason", function()
  local d = { vertices = { { id = "agg", current = 4, target = 5 } } }
  local out, why = freeze.execute(d, test.ctx { params = { freeze = "09:00-11:00" }, now = T })
  test.eq(out, nil)
  test.eq(why, "change freeze (09:00-11:00)")
end)

test.case("outside the window nothing is vetoed", function()
  local d = { vertices = { { id = "agg", current = 4, target = 5 } } }
  local out = freeze.execute(d, test.ctx { params = { freeze = "11:00-12:00" }, now = T })
  test.eq(out, d)
end)

test.case("ctx.params is read-only", function()
  local ctx = test.ctx { params = { freeze = "x" } }
  test.fails(function() ctx.params.freeze = nil end, "read-only")
end)
