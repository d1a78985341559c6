-- Request mixes for bench/load.py, one wrk script for all of them.
--
--   wrk -t2 -c64 -d10s -s bench/wrk/mix.lua http://127.0.0.1:PORT -- \
--       MIX DATAFILE OUTPREFIX NONCE THREADS [WEIGHTS]
--
-- MIX       create | get | list | checkout | cancel | refund | mixed | bare
-- DATAFILE  lines "T <token>" (companies), "P <token index> <payment id>" (payments to get
--           and cancel), "L <reference>" (multi-use links to pay), "R <token index> <payment
--           id>" (paid payments to refund 1 minor unit at a time); written by bench/load.py
-- OUTPREFIX done() writes OUTPREFIX.json (the figures); each thread k writes
--           OUTPREFIX.k.created (ids answered 201 by a create), .k.paid (references answered
--           PAID by a checkout), .k.cancelled (ids answered CANCELLED), .k.refunded (refund ids
--           answered 201), .k.samples (the first body of each error status), .k.unreadable
--           (201 bodies without a readable id)
-- NONCE     makes every Idempotency-Key unique across runs: NONCE-thread-counter
-- THREADS   the -t value: thread k cancels only payments k, k+THREADS, ... so no two threads
--           cancel the same one; thread k starts its walk of the refund pool (k-1)/THREADS of
--           the way round, since the service serializes the refunds of one payment
-- WEIGHTS   for mixed: "create=20,get=50,list=20,checkout=5,cancel=5" (refund=N adds refunds)
--
-- wrk does not tell response() which request it answers (several connections share a thread),
-- so responses are recognised by their status and body: 201 with a payment id is an
-- acknowledged create, 201 with a refund id an acknowledged refund, 200 with "redirectUrl" a
-- checkout, a 200 with one payment (no "nextCursor") in status CANCELLED a cancelled payment.
--
-- Threads write what they saw to files of their own as responses arrive (the C library
-- flushes them when wrk exits), and done() reads only numbers from them: wrk 4.1's
-- thread:get() pops one Lua stack slot too many for every table it copies (script_copy_value),
-- and the out-of-bounds writes that follow corrupt the thread's strings.

local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("tid", #threads)
end

local CREATE_BODY = '{"amountMinor":"1500","currency":"USD","description":"load"}'
local PAY_BODY = '{"card":{"number":"4242424242424242","expMonth":12,"expYear":2099,'
   .. '"cvc":"123"},"email":"buyer@example.com"}'
-- done() asks every thread for these counters; nothing else answers outside them.
local LOWEST_STATUS, HIGHEST_STATUS = 100, 599

local mix, nonce, counter
local tokens, payments, links = {}, {}, {}
local mine = {}           -- this thread's share of payments, for cancel
local refundable = {}     -- paid payments, for refund: { token, request body }
local schedule = {}       -- for mixed: a shuffled list of kinds, walked in a circle
local get_next, cancel_next, link_next, refund_next, token_next, step = 0, 0, 0, 0, 0, 0
local files = {}
local counter_names = {}

-- Globals, read by done() with thread:get(): n<status> (responses per status), wrapped, and
-- outprefix (set by init).
wrapped, outprefix = 0, nil

local function out(name)
   local f = files[name]
   if f == nil then
      f = assert(io.open(outprefix .. "." .. tid .. "." .. name, "w"))
      files[name] = f
   end
   return f
end

local function parse_weights(text)
   local kinds = {}
   for name, weight in string.gmatch(text, "(%a+)=(%d+)") do
      for _ = 1, tonumber(weight) do
         table.insert(kinds, name)
      end
   end
   -- A fixed shuffle per thread: the blend is exact over each cycle, the order is not.
   math.randomseed(tid * 7919)
   for i = #kinds, 2, -1 do
      local j = math.random(i)
      kinds[i], kinds[j] = kinds[j], kinds[i]
   end
   return kinds
end

function init(args)
   mix, outprefix, nonce = args[1], args[3], args[4]
   local nthreads = tonumber(args[5])
   counter = 0
   for line in io.lines(args[2]) do
      local kind, a, b = string.match(line, "^(%a) (%S+) ?(%S*)$")
      if kind == "T" then
         table.insert(tokens, "Bearer " .. a)
      elseif kind == "P" then
         table.insert(payments, { tonumber(a), b })
      elseif kind == "L" then
         table.insert(links, a)
      elseif kind == "R" then
         -- 1 minor unit: a pool payment of 100000000 does not run out (that would be a 409).
         -- The body is made once here; the token is known, as load.py writes T lines first.
         table.insert(refundable, {
            tokens[tonumber(a)], '{"paymentId":"' .. b .. '","amountMinor":"1"}',
         })
      end
   end
   for i = tid, #payments, nthreads do
      table.insert(mine, payments[i])
   end
   if mix == "mixed" then
      schedule = parse_weights(args[6] or "create=20,get=50,list=20,checkout=5,cancel=5")
   end
   -- Threads start at different points, so they do not all ask for the same thing at once.
   get_next, token_next, link_next = tid * 7, tid, tid
   -- Each refund waits for the one before it on the same payment to commit: threads walk the
   -- pool from evenly spaced starts, so they do not queue on the same payments.
   refund_next = (tid - 1) * math.floor(#refundable / nthreads)
   -- Every file exists, even when empty, so the harness need not guess which are missing.
   for _, name in ipairs({ "created", "paid", "cancelled", "refunded", "samples", "unreadable" }) do
      out(name)
   end
end

local function next_token()
   token_next = token_next % #tokens + 1
   return tokens[token_next]
end

local function key()
   counter = counter + 1
   return nonce .. "-" .. tid .. "-" .. counter
end

local function create()
   return wrk.format("POST", "/api/v1/merchant/payments", {
      ["Authorization"] = next_token(),
      ["Content-Type"] = "application/json",
      ["Idempotency-Key"] = key(),
   }, CREATE_BODY)
end

local function get()
   get_next = get_next % #payments + 1
   local p = payments[get_next]
   return wrk.format("GET", "/api/v1/merchant/payments/" .. p[2],
      { ["Authorization"] = tokens[p[1]] })
end

local function list()
   return wrk.format("GET", "/api/v1/merchant/payments?limit=20",
      { ["Authorization"] = next_token() })
end

local function checkout()
   link_next = link_next % #links + 1
   return wrk.format("POST", "/api/v1/checkout/" .. links[link_next] .. "/pay", {
      ["Content-Type"] = "application/json",
      ["Idempotency-Key"] = key(),
   }, PAY_BODY)
end

local function cancel()
   if #mine == 0 then
      return get()
   end
   cancel_next = cancel_next + 1
   if cancel_next > #mine then
      -- Every payment of this thread's share is cancelled already: from here on the service
      -- answers 409, and the report says the pool ran out.
      cancel_next, wrapped = 1, wrapped + 1
   end
   local p = mine[cancel_next]
   return wrk.format("POST", "/api/v1/merchant/payments/" .. p[2] .. "/cancel", {
      ["Authorization"] = tokens[p[1]],
      ["Idempotency-Key"] = key(),
   })
end

local function refund()
   refund_next = refund_next % #refundable + 1
   local r = refundable[refund_next]
   return wrk.format("POST", "/api/v1/merchant/refunds", {
      ["Authorization"] = r[1],
      ["Content-Type"] = "application/json",
      ["Idempotency-Key"] = key(),
   }, r[2])
end

local function bare()
   return wrk.format("GET", "/")
end

local kinds = {
   create = create, get = get, list = list, checkout = checkout, cancel = cancel,
   refund = refund, bare = bare,
}

function request()
   if mix == "mixed" then
      step = step % #schedule + 1
      return kinds[schedule[step]]()
   end
   return kinds[mix]()
end

local function printable(text)
   return (string.gsub(text, "[^%w%p ]", function(c)
      return string.format("\\x%02x", string.byte(c))
   end))
end

function response(status, headers, body)
   local name = counter_names[status]
   if name == nil then
      name = "n" .. status
      counter_names[status] = name
      if status >= 400 then
         out("samples"):write(status, "\t", printable(string.sub(body, 1, 600)), "\n")
      end
   end
   _G[name] = (_G[name] or 0) + 1
   if status == 201 then
      -- An id is prefix_ + 24 base62 characters; a refund's body names its payment only as
      -- "paymentId", so it never matches the first pattern.
      local id = string.match(body, '"id":"(pay_[^"]+)"')
      local refund_id = id == nil and string.match(body, '"id":"(re_[^"]+)"')
      if id and #id == 28 and not string.find(id, "[^%w_]") then
         out("created"):write(id, "\n")
      elseif refund_id and #refund_id == 27 and not string.find(refund_id, "[^%w_]") then
         out("refunded"):write(refund_id, "\n")
      else
         -- An acknowledged create or refund whose id we cannot read: keep the body to look at.
         out("unreadable"):write(printable(body), "\n")
      end
   elseif status == 200 then
      if string.find(body, '"redirectUrl"', 1, true) then
         if string.find(body, '"status":"PAID"', 1, true) then
            out("paid"):write(string.match(body, '"reference":"([^"]+)"'), "\n")
         end
      elseif string.find(body, '"status":"CANCELLED"', 1, true)
         and not string.find(body, '"nextCursor"', 1, true) then
         -- One payment (a get or a cancel), not a list page, whose first id is another's.
         out("cancelled"):write(string.match(body, '"id":"(pay_[^"]+)"'), "\n")
      end
   end
end

function done(summary, latency, requests)
   local parts = {}
   local wraps = 0
   for status = LOWEST_STATUS, HIGHEST_STATUS do
      local n = 0
      for _, t in ipairs(threads) do
         n = n + (t:get("n" .. status) or 0)
      end
      if n > 0 then
         table.insert(parts, string.format('"%d":%d', status, n))
      end
   end
   for _, t in ipairs(threads) do
      wraps = wraps + t:get("wrapped")
   end
   local e = summary.errors
   local f = assert(io.open(threads[1]:get("outprefix") .. ".json", "w"))
   f:write(string.format(
      '{"durationUs":%d,"requests":%d,"bytes":%d,"statuses":{%s},'
         .. '"socketErrors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},'
         .. '"latencyUs":{"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p75":%d,"p90":%d,'
         .. '"p95":%d,"p99":%d,"p999":%d},"cancelPoolWrapped":%d}\n',
      summary.duration, summary.requests, summary.bytes, table.concat(parts, ","),
      e.connect, e.read, e.write, e.timeout,
      latency.mean, latency.stdev, latency.max, latency:percentile(50), latency:percentile(75),
      latency:percentile(90), latency:percentile(95), latency:percentile(99),
      latency:percentile(99.9), wraps))
   f:close()
end
