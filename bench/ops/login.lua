-- wrk script: POST /v1/auth/login (bearer transport) as LOGIN_USERS seeded users in turn,
-- bench-login-<i>@example.com with the password LOGIN_PASSWORD (as bench/ops/run.ts seeds them),
-- so that no one account's rows are the only ones written. The one JSON summary line at the end
-- comes from bench/http/report.lua (WRK_REPORT).
dofile(os.getenv("WRK_REPORT"))

local users = tonumber(os.getenv("LOGIN_USERS"))
local password = os.getenv("LOGIN_PASSWORD")
local requests = {}
local i = 0

init = function(args)
  for u = 1, users do
    local body = string.format('{"email":"bench-login-%d@example.com","password":"%s","transport":"bearer"}', u, password)
    requests[u] = wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, body)
  end
end

request = function()
  i = i % users + 1
  return requests[i]
end
