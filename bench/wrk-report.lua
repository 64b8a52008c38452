-- wrk reporter: prints one line "BENCH_JSON {...}" that bench/run.mjs reads.
-- Latencies come from wrk's own histogram (microseconds); rps is completed requests / run time.
-- Headers (Authorization, x-organization-id) are passed with -H on the command line.

done = function(summary, latency, requests)
  local seconds = summary.duration / 1000000
  local errors = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"rps":%.2f,' ..
    '"latencyUs":{"mean":%.1f,"stdev":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d},' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"non2xx":%d}}\n',
    summary.requests, summary.duration, summary.bytes, summary.requests / seconds,
    latency.mean, latency.stdev,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    errors.connect, errors.read, errors.write, errors.timeout, errors.status))
end
