-- lib/cfg.lua: small helpers shared by the shipped plugins (reached with require "cfg").
local M = {}

-- A number from an option's text; nil when unset or empty.
function M.num(v)
  if v == nil or v == "" then return nil end
  local n = tonumber(v)
  if n == nil then error("not a number: " .. tostring(v), 2) end
  return n
end

-- Java's Math.round (half up), as the core rounds capacities.
function M.round(x)
  return math.floor(x + 0.5)
end

-- Trims blanks at both ends.
function M.trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- The utilization bounds (core/README.md, Evaluation) from the effective config.
function M.bounds(config, backlog)
  if backlog then return 1.0, 0.0 end
  local target = M.num(config["job.autoscaler.utilization.target"]) or 0.7
  local boundary = M.num(config["job.autoscaler.target.utilization.boundary"]) or 0.3
  local upper = M.num(config["job.autoscaler.utilization.max"]) or (target + boundary)
  local lower = M.num(config["job.autoscaler.utilization.min"]) or (target - boundary)
  return upper, lower
end

return M
