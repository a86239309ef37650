-- bench/submit.lua - wrk script: POST a small valid job spec with the
-- bearer token in $BENCH_TOKEN, each request with an Idempotency-Key of
-- its own ($BENCH_KEY_PREFIX, the thread, a counter). At the end it prints
-- "answers 201 N other M": the 201 answers wrk received, and the rest.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
wrk.body = [[{"name":"bench","model":{"preset":"tiny"},"data":{"train":"data/b_*.bin"},
"parallel":{"data_parallel":1,"micro_batch":1,"global_batch":1},
"resources":{"nodes":1,"gpus_per_node":0,"ranks_per_node":1},"training":{"steps":1}}]]

local threads = {}
local made = 0

function setup(thread)
	made = made + 1
	thread:set("tid", made)
	table.insert(threads, thread)
end

local prefix = os.getenv("BENCH_KEY_PREFIX") or "bench"
-- globals: thread:get() reads them in done()
n, created, other = 0, 0, 0

function request()
	n = n + 1
	local h = {}
	for k, v in pairs(wrk.headers) do
		h[k] = v
	end
	h["Idempotency-Key"] = prefix .. "-" .. tid .. "-" .. n
	return wrk.format(nil, nil, h)
end

function response(status, headers, body)
	if status == 201 then
		created = created + 1
	else
		other = other + 1
	end
end

function done(summary, latency, requests)
	local c, o = 0, 0
	for _, t in ipairs(threads) do
		c = c + t:get("created")
		o = o + t:get("other")
	end
	io.write(string.format("answers 201 %d other %d\n", c, o))
end
