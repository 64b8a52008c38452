-- wrk: POST /api/auth/sign-in/email with the JSON body in BENCH_SIGN_IN_BODY, reported like
-- wrk-report.lua (whose path is BENCH_REPORT_LUA). Used by bench/sign-in.mjs.
wrk.method = 'POST'
wrk.body = os.getenv('BENCH_SIGN_IN_BODY')
wrk.headers['Content-Type'] = 'application/json'
dofile(os.getenv('BENCH_REPORT_LUA'))
