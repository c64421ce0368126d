-- wrk script for Benchmarks/serve.sh: requests the paths of a list file (one a line), each
-- thread its own share (thread i of n takes lines i, i+n, ...), in order; when the list is
-- shorter than the threads, every thread takes all of it.
--
--   wrk ... -s serve.lua URL -- LIST THREADS once DIR   every path once, then the thread stops
--   wrk ... -s serve.lua URL -- LIST THREADS cycle       round and round until wrk's duration ends
--
-- In `once` mode a thread stops when it has as many responses as it has paths, so each URL is
-- asked (about) once: the requests a thread's other connections have in flight by then are
-- dropped. wrk runs for its whole duration even when every thread has stopped, so each thread
-- then writes DIR/done-<id>; serve.sh sends wrk SIGINT when all have, which ends the run there
-- (wrk's requests/s is over the time up to the signal).

local next_id = 0

function setup(thread)
   thread:set("id", next_id)
   next_id = next_id + 1
end

local paths = {}
local position = 0
local responses = 0
local once = false
local done_dir = nil

function init(args)
   local list, threads = args[1], tonumber(args[2])
   once = args[3] == "once"
   done_dir = args[4]
   local line_number = 0
   for line in io.lines(list) do
      if line_number % threads == id then
         paths[#paths + 1] = line
      end
      line_number = line_number + 1
   end
   if #paths == 0 then  -- fewer paths than threads (one URL for every connection): all of them
      for line in io.lines(list) do
         paths[#paths + 1] = line
      end
   end
end

function request()
   position = position % #paths + 1
   return wrk.format("GET", paths[position])
end

function response(status, headers, body)
   responses = responses + 1
   if once and responses == #paths then
      local marker = io.open(done_dir .. "/done-" .. id, "w")
      marker:close()
      wrk.thread:stop()
   end
end
