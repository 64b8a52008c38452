-- wrk: POST /Projects as wrk-create.lua does, each request with an Idempotency-Key of its own
-- (a first use every time: the keyed write's whole cost). With BENCH_REPEAT_KEY set, every request
-- sends that one key and the same body instead: all but the first are repeats, answered from the
-- kept answer. Reported like wrk-report.lua (BENCH_REPORT_LUA). Used by bench/idempotency.mjs.
wrk.method = 'POST'
wrk.headers['Content-Type'] = 'application/json'
dofile(os.getenv('BENCH_REPORT_LUA'))

-- Each thread gets a number of its own, so that two threads never make the same key.
local threads = 0
setup = function(thread)
  threads = threads + 1
  thread:set('threadNumber', threads)
end

local repeatKey = os.getenv('BENCH_REPEAT_KEY')
local run = os.time()
local counter = 0
-- wrk.format takes headers in place of wrk.headers (the -H ones and Content-Type): a copy, plus the key.
local withKey = function(key)
  local headers = {}
  for name, value in pairs(wrk.headers) do headers[name] = value end
  headers['Idempotency-Key'] = key
  return headers
end

request = function()
  counter = counter + 1
  if repeatKey then
    return wrk.format(nil, nil, withKey(repeatKey), '{"name":"Bench repeated"}')
  end
  local key = string.format('%d-%d-%d', run, threadNumber, counter)
  return wrk.format(nil, nil, withKey(key), string.format('{"name":"Bench %s"}', key))
end
