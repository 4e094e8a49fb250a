-- hostile.lua: every escape a plugin might try, chosen by ctx.params.attack. Each must be
-- refused with a clear error, and the next call (ok.lua) must still work.
local attacks = {
  io = function() return io.open("/etc/passwd") end,
  os_execute = function() return os.execute("true") end,
  os_exit = function() return os.exit(1) end,
  os_getenv = function() return os.getenv("HOME") end,
  load = function() return load("return 1")() end,
  loadfile = function() return loadfile("/etc/passwd") end,
  dofile = function() return dofile("/etc/passwd") end,
  dump = function() return string.dump(function() end) end,
  dump_method = function() return ("x").dump(print) end,
  debug = function() return debug.getinfo(1) end,
  package = function() return package.loaded end,
  require_outside = function() return require("../hostile") end,
  require_stdlib = function() return require("io") end,
  require_missing = function() return require("nothere") end,
  set_shared = function() string.upper = nil end,
  set_governor = function() governor.log = nil end,
  set_nested = function() governor.cron.matches = nil end,
  metatable_shared = function() setmetatable(string, {}) end,
  string_metatable = function() getmetatable("").__index = {} end,
  rawset_shared = function() rawset(math, "pi", 3) end,
  gc_metamethod = function() setmetatable({}, { __gc = function() end }) end,
  collectgarbage = function() collectgarbage("stop") end,
  coroutine = function() return coroutine.create(print) end,
  rep = function() return string.rep("x", 1 << 40) end,
  rep_empty = function() return string.rep("", 1 << 60) end,
  find = function() return string.find(string.rep("a", 30000), ".-.-.-.-b") end,
  gsub = function() return (string.rep("a", 30000)):gsub("(a*)*b", "") end,
  loop = function() while true do end end,
  loop_pcall = function() while true do pcall(function() while true do end end) end end,
  alloc = function() local t = {} for i = 1, 1e9 do t[i] = {i} end end,
  alloc_pcall = function()
    while true do pcall(function() local t = {} while true do t[#t + 1] = {} end end) end
  end,
  concat = function() local s = "x" while true do s = s .. s end end,
  upper_loop = function() local s = string.rep("z", 1 << 24) while true do s = s:upper() end end,
  error = function() error("boom") end,
  error_table = function() error({}) end,
  -- a message handler that loops: Lua runs it with the hooks off after a limit's error
  xpcall_loop = function() return xpcall(error, function() while true do end end) end,
  xpcall_nested = function()
    return pcall(xpcall, function() error("x") end,
                 function() return xpcall(error, function() while true do end end) end)
  end,
  close_loop = function()
    local x <close> = setmetatable({}, { __close = function() while true do end end })
    while true do end
  end,
  -- library calls whose work is set by their arguments
  table_move = function() return table.move({}, 1, 300000000, 2) end,
  insert_len = function()
    table.insert(setmetatable({}, { __len = function() return 1 << 40 end }), 1, 0)
  end,
  remove_len = function()
    table.remove(setmetatable({}, { __len = function() return 1 << 40 end }), 1)
  end,
  os_date = function() return #os.date(string.rep("%Y", 500000)) end,
  format_q = function() return #string.format("%q", string.rep("\0\0\0\0\0\0\0\0", 131072)) end,
  pack_pad = function() return #string.pack("c20000000", "") end,
  gsub_repl = function() return #string.rep("a", 100000):gsub("", string.rep("%0", 5000)) end,
  utf8_codes = function()
    local s = "a" .. string.rep("\x80\x80\x80\x80\x80\x80\x80\x80", 250000)
    local f = utf8.codes(s)
    while true do f(s, 1) end
  end,
  string_arith = function()
    local s = string.rep("1111111111111111", 62500)
    while true do local x = s + 0 end
  end,
}

return {
  kind = "evaluator",
  evaluate = function(vertex, evaluated, ctx)
    local f = attacks[ctx.params.attack]
    if not f then error("no such attack: " .. tostring(ctx.params.attack)) end
    return f()
  end,
}
