-- allowlist.lua: lists what the sandbox exposes (the globals of a plugin's environment and
-- the names in every shared library table), so that allowlist.test pins the allow list:
-- anything added or taken away shows as a failing test.
local function names(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = tostring(k) end
  table.sort(out)
  return table.concat(out, " ")
end

return {
  kind = "alignment",
  align = function(a, ctx)
    local r = { globals = names(_G), string_metatable = tostring(getmetatable("")) }
    for _, lib in ipairs({ "string", "table", "math", "utf8", "os", "governor" }) do
      r[lib] = names(_G[lib])
    end
    for _, sub in ipairs({ "cron", "daily", "periods" }) do
      r["governor." .. sub] = names(governor[sub])
    end
    return r
  end,
}
