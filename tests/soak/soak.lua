-- wrk script of the soak (tests/soak/soak.py): POST /v1/jobs/{job}/metrics round-robin over a
-- fixed set of jobs (500 per wrk thread, soak-<thread>-<n>), so that a long run keeps the same
-- jobs. From the environment: SOAK_BASE (the job time of this run's first sample, seconds; each
-- run starts later than the previous one ended, so no sample goes back in time) and SOAK_DELAY
-- (the mean milliseconds a connection waits before each request; 0 or unset: no wait, the
-- maximum rate; read when the script loads, since wrk only paces when delay() exists).
-- done() prints one line "SOAK {json}" with the run's figures for the driver.
local jobs = 500
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local base = tonumber(os.getenv("SOAK_BASE") or "0")
local delay_ms = tonumber(os.getenv("SOAK_DELAY") or "0")
local ts = {}
local n = 0

if delay_ms > 0 then
  function delay()
    -- wrk waits whole milliseconds: dither so that the mean is delay_ms
    local d = math.floor(delay_ms)
    if math.random() < delay_ms - d then
      d = d + 1
    end
    return d
  end
end

function request()
  n = n + 1
  local j = n % jobs
  local t = (ts[j] or base) + 10
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
    at, 100 * (t % 1000), 1000 * t, 1000 * t, 1000 * t, 100 * t)
  return wrk.format("POST", string.format("/v1/jobs/soak-%d-%d/metrics", tid or 0, j),
                    {["Content-Type"] = "application/json"}, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'SOAK {"requests": %d, "duration_us": %d, "errors": %d, "non2xx": %d, ' ..
    '"p50_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), latency.max))
end
