-- bench/submit.lua - wrk script: POST a small valid job spec to
-- $BENCH_PATH with the bearer token in $BENCH_TOKEN.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.body = [[{"name":"bench","model":{"preset":"tiny"},"data":{"train":"data/b_*.bin"},
"parallel":{"data_parallel":1,"micro_batch":1,"global_batch":1},
"resources":{"nodes":1,"gpus_per_node":0,"ranks_per_node":1},"training":{"steps":1}}]]
