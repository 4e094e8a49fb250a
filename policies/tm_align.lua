-- tm_align.lua: an alignment mode that rounds parallelism up to whole TaskManagers
-- (multiples of taskmanager.numberOfTaskSlots, or the parameter `slots`; spec section 8
-- item 5), so no TaskManager runs half empty. When the next multiple is above the upper
-- limit or the key groups, the largest multiple below it is taken if it still differs from
-- the current parallelism in the same direction; otherwise the proposal stands.
-- Select with job.autoscaler.scaling.parallelism-alignment.mode = tm_align.
local cfg = require "cfg"

return {
  kind = "alignment",
  align = function(a, ctx)
    local slots = cfg.num(ctx.params.slots) or cfg.num(ctx.config["taskmanager.numberOfTaskSlots"]) or 1
    slots = math.tointeger(slots) or error("slots must be an integer")
    if slots <= 1 or a.proposed == a.current then return a.proposed end
    local up = (a.proposed + slots - 1) // slots * slots
    local ceiling = math.min(a.upper, a.max_parallelism)
    if up <= ceiling then return up end
    local down = ceiling // slots * slots
    if down >= a.lower and (down - a.current) * (a.proposed - a.current) > 0 then
      return down
    end
    return a.proposed
  end,
}
