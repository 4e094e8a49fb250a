-- wrk script: requests go round-robin over 500 jobs per wrk thread, each job's samples 10 s
-- of job time apart, so a job's next sample is sent long after its previous one was answered
-- (no 409 from reordering) and each job's metric window stays at its steady size.
local jobs = 500
local ts = {}
local n = 0
local prefix = nil

function request()
  if not prefix then
    prefix = string.format("bench-%d", math.random(1, 1e9))
  end
  n = n + 1
  local j = n % jobs
  local t = (ts[j] or 0) + 10
  ts[j] = t
  local at = 1764410400000 + t * 1000
  local body = string.format([[{"at": %d, "running_since": 1764410400000, "status": "RUNNING",
"vertices": [
 {"id": "src", "parallelism": 2, "max_parallelism": 128, "inputs": [],
  "metrics": {"busy_ms_per_s": 500, "backpressured_ms_per_s": 0, "pending_records": %d,
              "records_in": %d, "records_out": %d, "records_in_per_s": 1000}},
 {"id": "agg", "parallelism": 2, "max_parallelism": 128, "inputs": [{"from": "src", "ship": "HASH"}],
  "metrics": {"busy_ms_per_s": {"min": 600, "avg": 700, "max": 800}, "records_in": %d,
              "records_out": %d, "records_in_per_s": 1000}}]}]],
    at, 100 * t, 1000 * t, 1000 * t, 1000 * t, 100 * t)
  return wrk.format("POST", "/v1/jobs/" .. prefix .. "-" .. j .. "/metrics",
                    {["Content-Type"] = "application/json"}, body)
end
