-- wrk script: every connection is its own job and POSTs the base pipeline of tests/cases,
-- 10 s of job time apart, so each job's metric window stays at its steady size.
local counter = 0
local job = nil
local t = 0

function init(args)
  counter = counter + 1
end

function request()
  if not job then
    job = string.format("bench-%d-%d", math.random(1, 1e9), counter)
  end
  t = t + 10
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
  return wrk.format("POST", "/v1/jobs/" .. job .. "/metrics",
                    {["Content-Type"] = "application/json"}, body)
end
