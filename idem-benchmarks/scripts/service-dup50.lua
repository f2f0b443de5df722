-- wrk script for the service benchmark: POSTs JSON events of which half are duplicates.
-- Odd requests carry a new id; each even request repeats the id sent 1001 requests earlier on the
-- same thread, long enough ago to be committed (a duplicate, not an in-flight key).
-- Args: <run-prefix> [delay-ms]  (delay paces each connection, for the half-rate latency run)
-- At the end it prints one machine-readable line:
--   RESULT requests=<n> seconds=<s> rps=<r> p50_us=<us> p99_us=<us> non2xx=<n> errors=<n>

local threads = {}
local next_thread = 0

function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
  table.insert(threads, thread)
end

function init(args)
  prefix = args[1] or "run"
  pace = tonumber(args[2] or "0")
  counter = 0
end

request = function()
  counter = counter + 1
  local n = counter
  if n % 2 == 0 and n > 1001 then
    n = n - 1001
  end
  local body = '{"id":"' .. prefix .. '-' .. tid .. '-' .. n ..
      '","type":"order.paid","amount":4200,"currency":"eur","customer":{"id":"c-' .. (n % 97) .. '"}}'
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end

function delay()
  return pace
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local s = summary.errors
  io.write(string.format(
      "RESULT requests=%d seconds=%.2f rps=%.0f p50_us=%d p99_us=%d non2xx=%d errors=%d\n",
      summary.requests, seconds, summary.requests / seconds,
      latency:percentile(50), latency:percentile(99), s.status,
      s.connect + s.read + s.write + s.timeout))
end
