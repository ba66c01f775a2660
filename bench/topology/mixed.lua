-- wrk script of the topology benchmark: a mixed workload read from the file WRK_REQUESTS, one
-- request per line, tab-separated: method, path, Authorization value or "-", JSON body or "-".
-- The lines are sent in order, round and round; "{n}" in a path or body becomes a tag unique in
-- the run (names that must be unique: organisations, projects). Prints one JSON summary line at
-- the end, with how many answers each status other than 2xx got.
local lines = {}
local i = 0
local n = 0
local tag = os.getenv("WRK_NONCE") or "0"
statuses = {} -- global: done() reads it from each thread

local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

function init(args)
  tag = tag .. "-" .. tostring(id)
  for line in io.lines(os.getenv("WRK_REQUESTS")) do
    local method, path, auth, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
    local headers = {}
    if auth ~= "-" then headers["Authorization"] = auth end
    if body == "-" then body = nil else headers["Content-Type"] = "application/json" end
    table.insert(lines, { method = method, path = path, headers = headers, body = body })
  end
  -- Each thread starts at another place in the list, so they do not send the same request at once.
  i = (id - 1) * 7 % #lines
end

function request()
  i = i % #lines + 1
  local r = lines[i]
  local path, body = r.path, r.body
  if path:find("{n}", 1, true) or (body and body:find("{n}", 1, true)) then
    n = n + 1
    local unique = tag .. "-" .. n
    path = path:gsub("{n}", unique)
    if body then body = body:gsub("{n}", unique) end
  end
  return wrk.format(r.method, path, r.headers, body)
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    local key = tostring(status)
    statuses[key] = (statuses[key] or 0) + 1
  end
end

done = function(summary, latency, requests)
  local counts = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do counts[status] = (counts[status] or 0) + count end
  end
  local parts = {}
  for status, count in pairs(counts) do table.insert(parts, string.format('"%s":%d', status, count)) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"statuses":{%s}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean, e.connect, e.read, e.write, e.status, e.timeout, table.concat(parts, ",")))
end
