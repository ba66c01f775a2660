-- wrk script: POST /v1/orgs/{orgId}/projects (the URL given to wrk) with a bearer token, each
-- request a new project; with IDEMPOTENCY=1 each also carries a key of its own (a logical write
-- with no retry: the first-request path, the one every keyed write pays). The one JSON summary
-- line at the end comes from bench/http/report.lua (WRK_REPORT).
dofile(os.getenv("WRK_REPORT"))

local keyed = os.getenv("IDEMPOTENCY") == "1"
local run = os.getenv("RUN_ID") or "run"
local n = 0

request = function()
  n = n + 1
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = os.getenv("WRK_AUTH") }
  if keyed then headers["Idempotency-Key"] = string.format('"%s-%d"', run, n) end
  return wrk.format("POST", nil, headers, string.format('{"name":"Bench project %s %d"}', run, n))
end
