-- wrk script: request shape from the environment, one JSON summary line at the end.
--   WRK_METHOD (GET), WRK_BODY (JSON, sets Content-Type), WRK_AUTH (Authorization header)
wrk.method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")
if body and body ~= "" then
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end
local auth = os.getenv("WRK_AUTH")
if auth and auth ~= "" then
  wrk.headers["Authorization"] = auth
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean, e.connect, e.read, e.write, e.status, e.timeout))
end
