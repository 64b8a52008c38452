-- wrk: POST /Projects with a JSON body, each request a project of its own name, reported like
-- wrk-report.lua (whose path is BENCH_REPORT_LUA). Used by bench/row-security.mjs.
wrk.method = 'POST'
wrk.headers['Content-Type'] = 'application/json'
dofile(os.getenv('BENCH_REPORT_LUA'))

local counter = 0
request = function()
  counter = counter + 1
  return wrk.format(nil, nil, nil, string.format('{"name":"Bench %d-%d"}', math.random(1, 1000000), counter))
end
