cmake_policy(SET CMP0057 NEW)
# ctest's smoke test of ptbench: every design x workload with tiny counts;
# checks the JSON lines' fields and that the counts add up, and that bad
# options give a usage message and exit 2 (never a crash).
#   cmake -DPTBENCH=<path> -DOUT=<dir> -P smoke.cmake
set(designs pheap pheap-sync pheap-staged timerthread globalheap floor pwheel)

# A memory row's resident bytes per timer may not come out under 90% of
# the design's own structures: they did when memory freed by earlier runs
# was reused (bytes_per_timer is x.yy; compared in whole bytes). The own
# figure is what the workload's pending timers occupy in the design, so
# the check holds under any allocator (mimalloc rounds some blocks up; the
# C library's malloc does not).
function(check_memory_row line)
  string(JSON own GET "${line}" timer_bytes)
  string(JSON measured GET "${line}" bytes_per_timer)
  string(REGEX REPLACE "\\..*" "" whole "${measured}")
  math(EXPR floor90 "${own} * 9 / 10")
  if(whole LESS floor90)
    message(FATAL_ERROR "memory: ${measured} B measured, under its own ${own} B: ${line}")
  endif()
endfunction()
# A row's lateness quantiles never above the next one, nor above the
# maximum (if() compares numbers as doubles).
function(check_quantiles line)
  set(prev 0)
  foreach(q lat_p50_us lat_p99_us lat_p999_us lat_max_us)
    string(JSON v GET "${line}" ${q})
    if(v LESS prev)
      message(FATAL_ERROR "${q} ${v} under the quantile before it: ${line}")
    endif()
    set(prev ${v})
  endforeach()
endfunction()
string(REPLACE ";" "," dlist "${designs}")
set(engine_wls rpc rpc-pending descending random reset reset-alt ticker latency latency-busy memory
               netpoll)
string(REPLACE ";" "," ewlist "${engine_wls}")
execute_process(
  COMMAND ${PTBENCH} -w ${ewlist} -d ${dlist} -t 1,2 -r 1 -n 3000 -D 30 --ticker-ms 60 --latency-ms 40
          --preload 200 --window 100 --tickers 50 --memory-timers 20000
          --no-peers --no-plots -q -o ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ptbench failed (${rc}):\n${out}\n${err}")
endif()
file(STRINGS ${OUT}/ptbench.jsonl lines)
list(LENGTH lines n)
if(n LESS 50)
  message(FATAL_ERROR "expected a row per design x workload x threads, got ${n}")
endif()
set(seen "")
foreach(line IN LISTS lines)
  foreach(field design workload threads ops_per_s ns_per_op lat_p50_us lat_p99_us
                lat_p999_us lat_max_us wakeups cpu_s bytes_per_timer ops scheduled fired
                cancelled stale_cancels expected_ticks)
    string(JSON v ERROR_VARIABLE e GET "${line}" ${field})
    if(e)
      message(FATAL_ERROR "missing ${field}: ${line}")
    endif()
    set(${field} ${v})
  endforeach()
  list(APPEND seen "${design}/${workload}")
  check_quantiles("${line}")
  # every throughput row says how much was resident at its end (a
  # process never has none), and how that changed over the run
  string(JSON kind GET "${line}" kind)
  string(JSON rss GET "${line}" rss_bytes)
  string(JSON rss_growth ERROR_VARIABLE e GET "${line}" rss_growth_bytes)
  if(e OR (kind STREQUAL "throughput" AND rss LESS_EQUAL 0))
    message(FATAL_ERROR "throughput row without resident memory: ${line}")
  endif()
  if(ops LESS_EQUAL 0)
    message(FATAL_ERROR "no ops: ${line}")
  endif()
  if(NOT workload STREQUAL "ticker")
    # every one-shot armed either fired or was cancelled
    math(EXPR sum "${fired} + ${cancelled}")
    if(NOT sum EQUAL scheduled)
      message(FATAL_ERROR "scheduled ${scheduled} != fired ${fired} + cancelled ${cancelled}: ${line}")
    endif()
  elseif(fired GREATER 0 AND expected_ticks EQUAL 0)
    message(FATAL_ERROR "ticks without expected ticks: ${line}")
  endif()
  if(workload MATCHES "^latency" AND NOT fired EQUAL ops)
    message(FATAL_ERROR "latency: not every timer fired: ${line}")
  endif()
  if(workload STREQUAL "memory")
    if(NOT cancelled EQUAL ops)
      message(FATAL_ERROR "memory: not every pending timer was cancelled: ${line}")
    endif()
    check_memory_row("${line}")
  endif()
endforeach()
foreach(d IN LISTS designs)
  foreach(w rpc rpc-pending descending random reset reset-alt ticker latency latency-busy memory)
    if(NOT "${d}/${w}" IN_LIST seen)
      message(FATAL_ERROR "no row for ${d} ${w}")
    endif()
  endforeach()
endforeach()

# slack: a row per design and window, kernel-slack's too, none early (a
# firing before its time fails the run), every one with ticks owed and
# delivered, and the wake-ups and timers per wake-up it reports.
execute_process(
  COMMAND ${PTBENCH} -w slack -d ${dlist},lheap,kernel-slack -t 1 -r 1 --slacks 0,10
          --slack-tickers 200 --slack-ms 300 --no-peers --no-plots -q -o ${OUT}/slack
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ptbench -w slack failed (${rc}):\n${out}\n${err}")
endif()
file(STRINGS ${OUT}/slack/ptbench.jsonl slack_lines)
set(slack_seen "")
foreach(line IN LISTS slack_lines)
  foreach(field design variant early_wakes expected_ticks fired wakeups_per_s fired_per_wakeup)
    string(JSON ${field} GET "${line}" ${field})
  endforeach()
  list(APPEND slack_seen "${design}/${variant}")
  if(NOT early_wakes EQUAL 0 OR expected_ticks LESS_EQUAL 0 OR fired LESS_EQUAL 0
     OR wakeups_per_s LESS_EQUAL 0 OR fired_per_wakeup LESS_EQUAL 0)
    message(FATAL_ERROR "slack: a row without its counts: ${line}")
  endif()
endforeach()
foreach(d IN LISTS designs ITEMS lheap kernel-slack)
  foreach(v "slack=0%" "slack=10%")
    if(NOT "${d}/${v}" IN_LIST slack_seen)
      message(FATAL_ERROR "slack: no row for ${d} ${v}")
    endif()
  endforeach()
endforeach()

# The CSV carries the JSON lines' fields (both come from one list,
# fields.c; CMake lists a JSON object's members sorted, so compare sets).
file(STRINGS ${OUT}/ptbench.csv csv LIMIT_COUNT 1)
string(REPLACE "," ";" csv "${csv}")
list(SORT csv)
list(GET lines 0 first)
string(JSON nkeys LENGTH "${first}")
math(EXPR last "${nkeys} - 1")
set(keys "")
foreach(i RANGE ${last})
  string(JSON k MEMBER "${first}" ${i})
  list(APPEND keys "${k}")
endforeach()
list(SORT keys)
if(NOT csv STREQUAL keys)
  message(FATAL_ERROR "CSV header is not the JSON fields:\n${csv}\n${keys}")
endif()

# The report starts with the verdict: a line per workload and thread
# count, judged by the figure its kind calls for.
file(READ ${OUT}/table.txt table)
if(NOT table MATCHES "^== verdict")
  message(FATAL_ERROR "table.txt does not start with the verdict:\n${table}")
endif()
string(FIND "${table}" "\ncommand:" at_header)
string(SUBSTRING "${table}" 0 ${at_header} verdict)
foreach(v "rpc;1;ns/op/thr" "rpc;2;ns/op/thr" "rpc-pending;2;ns/op/thr" "descending;1;ns/op/thr"
          "random;2;ns/op/thr" "reset;1;ns/op/thr" "reset-alt;2;ns/op/thr"
          "ticker T=50;1;p99 us" "ticker T=50;2;p99 us" "latency;1;p99 us"
          "latency-busy;2;p99 us" "memory;1;B/timer" "netpoll 100us;1;p99 us"
          "netpoll 10ms;1;p99 us")
  list(GET v 0 wl)
  list(GET v 1 thr)
  list(GET v 2 metric)
  if(NOT verdict MATCHES "\n${wl} +${thr}  ${metric}  +[a-z0-9.-]+ +[0-9.]+ [|]")
    message(FATAL_ERROR "no verdict line for ${wl} at ${thr} threads by ${metric}:\n${verdict}")
  endif()
endforeach()
# Each cell: the ratio to the winner and the row's spread, "tie" before
# it where the spread overlaps the winner's; floor, a reference, never
# wins (the least a per-P design can cost: it would win every rpc line).
string(REGEX MATCH "\nrpc +1  ns/op/thr  +([a-z0-9.-]+) +[0-9.]+ [|]([^\n]*)" rpc1 "${verdict}")
set(rpc_winner "${CMAKE_MATCH_1}")
set(rpc_cells "${CMAKE_MATCH_2}")
string(REGEX REPLACE "(tie )?[0-9.]+±[0-9]+" "" rest "${rpc_cells}")
if(rpc_winner STREQUAL "floor" OR NOT rest MATCHES "^[ -]*$" OR NOT rpc_cells MATCHES " 1[.]00±")
  message(FATAL_ERROR "rpc's verdict cells are not ratio±spread, or floor won:\n${rpc1}")
endif()
# The results page: the run's header, then the verdict, then its figures.
file(READ ${OUT}/RESULTS.md page)
foreach(part "^# ptbench results\n" "\ncommand:  [^\n]*ptbench" "\ncommit:   ([0-9a-f]+|unknown)"
             "\ndate:     20[0-9][0-9]-" "\nclock:    " "## Verdict[^#]*\nrpc +1  ns/op/thr"
             "## The figures\n[^#]*\nrpc +1  ns/op/thr  +[a-z0-9.-]+ +[0-9.]+ [|] +[0-9.]+ ")
  if(NOT page MATCHES "${part}")
    message(FATAL_ERROR "RESULTS.md has no ${part}:\n${page}")
  endif()
endforeach()
# Columns only where they mean something: no lateness in a table whose
# timers never fire, no ns/op in a latency table.
foreach(t "rpc;p99 us;1" "random;p99 us;0" "latency;ns/op;1" "ticker T=50;ns/op;1"
          "memory;wakeups;1" "rpc;RSS MiB;0" "latency;RSS MiB;1")
  list(GET t 0 wl)
  list(GET t 1 col)
  list(GET t 2 absent)
  string(REGEX MATCH "\n== ${wl}\n[^\n]*" head "${table}")
  string(FIND "${head}" "${col}" at)
  if((absent AND NOT at EQUAL -1) OR (NOT absent AND at EQUAL -1) OR NOT head)
    message(FATAL_ERROR "the ${wl} table's header, '${col}' (absent: ${absent}):${head}")
  endif()
endforeach()

# The table pairs every design with floor repetition by repetition under
# each throughput table (report.c, floor_footer), and gives every design's
# p99 over the kernel floor's under each netpoll table (the kernel design,
# latency's floor, is not in this run's list).
# rpc, rpc-pending, descending, random, reset, reset-alt x 1 and 2 threads
string(REGEX MATCHALL "\n   pheap +[0-9.]+ [[][0-9.]+ - [0-9.]+[]]" paired "${table}")
list(LENGTH paired npaired)
if(npaired LESS 12)
  message(FATAL_ERROR "expected 12 paired pheap-over-floor ratios, got ${npaired}:\n${table}")
endif()
foreach(t "netpoll 100us" "netpoll 1ms" "netpoll 10ms")
  if(NOT table MATCHES "== ${t}[^=]*p99 over the kernel floor's")
    message(FATAL_ERROR "no kernel-floor ratios under the ${t} table:\n${table}")
  endif()
endforeach()

# memory right after a timed rpc run, which leaves the allocator holding
# the pages of a large TimerThread task pool: each memory repetition runs
# in a fresh process, so it still counts the design's own bytes (a forked
# child inherited those pages and read 1.6 B per 80 B task).
# Without -q, and stderr not a terminal: a line of progress per row, no
# carriage returns. With plots, where gnuplot is installed.
execute_process(
  COMMAND ${PTBENCH} -w rpc,memory -d timerthread,pheap -t 1 -r 1 -D 100 --memory-timers 20000
          --no-peers -o ${OUT}/after-rpc
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ptbench rpc,memory failed (${rc}):\n${out}\n${err}")
endif()
string(FIND "${err}" "\r" cr)
string(REGEX MATCHALL "ptbench: [^\n]*\n" progress "${err}")
list(LENGTH progress nprogress)
if(NOT cr EQUAL -1 OR NOT nprogress EQUAL 4)
  message(FATAL_ERROR "expected 4 lines of progress and no carriage return:\n${err}")
endif()
find_program(GNUPLOT gnuplot)
if(GNUPLOT)
  foreach(png throughput-rpc memory)
    if(NOT EXISTS ${OUT}/after-rpc/${png}.png)
      file(READ ${OUT}/after-rpc/plots.log log)
      message(FATAL_ERROR "no ${png}.png:\n${out}\n${log}")
    endif()
  endforeach()
endif()
file(STRINGS ${OUT}/after-rpc/ptbench.jsonl lines REGEX "\"workload\":\"memory\"")
list(LENGTH lines n_after)
if(NOT n_after EQUAL 2)
  message(FATAL_ERROR "memory after rpc: expected 2 rows, got ${n_after}")
endif()
foreach(line IN LISTS lines)
  check_memory_row("${line}")
endforeach()

# The workloads inside the scheduler, where it is built: each on
# sched-perp, sched-lheap and sched-tt at 1 and 2 Ps (memory-g, a process of its own,
# at 1), the kernel floor beside sleep-1 only; the stack workloads
# (memory-g, spawn-burst) on sched-perp alone, a row per G count and
# stack guard. Every G started finished,
# every wait ended once, no sleep woke early, as many ops as -n asked
# (ops x Ps), and a verdict line for each, by its figure. ptbench itself
# exits 1 when a count does not add up.
execute_process(COMMAND ${PTBENCH} --help OUTPUT_VARIABLE help)
if(NOT help MATCHES "--full")
  message(FATAL_ERROR "ptbench --help does not say what --full runs:\n${help}")
endif()
set(nsched 0)
# Not under ThreadSanitizer: every G is a TSan fiber, and its switch costs
# grow with the number of fibers, so 1000 sleeping Gs take many minutes.
# The scheduler's own suite covers it under TSan; this checks ptbench's
# plumbing, which the release and ASan runs do.
if(help MATCHES "sched-perp" AND NOT SANITIZE STREQUAL "thread")
  set(sched_wls spawn pingpong chan-timeout sleep sleep-1 busy-lateness rpc-sched conn-churn
                memory-g spawn-burst)
  string(REPLACE ";" "," swlist "${sched_wls}")
  execute_process(
    COMMAND ${PTBENCH} -w ${swlist} -d sched-perp,sched-lheap,sched-tt,kernel,floor,pheap -t 1,2 -r 1 -n 3000
            --latency-ms 40 --memory-gs 2000 --burst-gs 2000,3000 --stack-guards auto,pages
            --no-peers --no-plots -q -o ${OUT}/sched
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ptbench (in the scheduler) failed (${rc}):\n${out}\n${err}")
  endif()
  file(STRINGS ${OUT}/sched/ptbench.jsonl slines)
  list(LENGTH slines nsched)
  set(sseen "")
  foreach(line IN LISTS slines)
    foreach(field design workload threads ops ns_per_op bytes_per_timer gs_started gs_finished
                  waits wakes early_wakes spawn_error timers_owner timers_stolen timers_sysmon
                  steals overflowed handoffs)
      string(JSON v ERROR_VARIABLE e GET "${line}" ${field})
      if(e)
        message(FATAL_ERROR "missing ${field}: ${line}")
      endif()
      set(${field} ${v})
    endforeach()
    string(JSON variant GET "${line}" variant)
    list(APPEND sseen "${design}/${workload}/${threads}" "${workload} ${variant}/${threads}")
    check_quantiles("${line}")
    string(JSON kind GET "${line}" kind)
    string(JSON rss GET "${line}" rss_bytes)
    if(kind STREQUAL "throughput" AND rss LESS_EQUAL 0)
      message(FATAL_ERROR "throughput row without resident memory: ${line}")
    endif()
    if(ops LESS_EQUAL 0 OR NOT spawn_error EQUAL 0)
      message(FATAL_ERROR "no ops, or a G not started: ${line}")
    endif()
    if(NOT gs_finished EQUAL gs_started OR NOT wakes EQUAL waits OR NOT early_wakes EQUAL 0)
      message(FATAL_ERROR "counts do not add up: ${line}")
    endif()
    if(design MATCHES "^(kernel|floor)$") # plain threads, no G
      set(want_gs 0)
    elseif(workload STREQUAL "spawn")
      math(EXPR want_gs "3000 * ${threads}")
    elseif(workload STREQUAL "sleep")
      set(want_gs 1000)
    elseif(workload STREQUAL "busy-lateness")
      math(EXPR want_gs "100 + ${threads}")
    elseif(workload STREQUAL "memory-g")
      set(want_gs 2000)
    elseif(workload STREQUAL "spawn-burst") # N=2k or N=3k
      string(REGEX REPLACE "^N=([0-9]+)k.*" "\\1000" want_gs "${variant}")
    elseif(workload STREQUAL "rpc-sched") # 64 clients, 64 servers
      set(want_gs 128)
    elseif(workload STREQUAL "conn-churn") # the acceptor, 64 clients, a G per connection
      math(EXPR want_gs "65 + (3000 * ${threads} + 63) / 64 * 64")
    elseif(workload STREQUAL "chan-timeout") # the body's own G only
      set(want_gs 0)
    else() # pingpong's ponger, sleep-1's sleeper
      set(want_gs 1)
    endif()
    if(NOT gs_started EQUAL want_gs)
      message(FATAL_ERROR "${workload}: ${gs_started} Gs, not ${want_gs}: ${line}")
    endif()
    # an op is a G, a round trip, a sleep, a request answered (-n 3000
    # per P; sleep, rpc-sched: shared out over 1000 Gs, 64 clients,
    # rounded up), a parked G
    math(EXPR per_p "3000 * ${threads}")
    if(workload MATCHES "^(spawn|pingpong|chan-timeout)$" AND NOT ops EQUAL per_p)
      message(FATAL_ERROR "${workload}: ${ops} ops, not ${per_p}: ${line}")
    endif()
    math(EXPR sleeps "(${per_p} + 999) / 1000 * 1000")
    if(workload STREQUAL "sleep" AND NOT ops EQUAL sleeps)
      message(FATAL_ERROR "sleep: ${ops} sleeps, not ${sleeps}: ${line}")
    endif()
    math(EXPR requests "(${per_p} + 63) / 64 * 64")
    if(design STREQUAL "floor") # a client thread per P
      set(requests ${per_p})
    endif()
    if(workload MATCHES "^(rpc-sched|conn-churn)$" AND NOT ops EQUAL requests)
      message(FATAL_ERROR "${workload}: ${ops} answered, not ${requests}: ${line}")
    endif()
    if(workload MATCHES "^(sleep|sleep-1|busy-lateness|rpc-sched|conn-churn|memory-g|chan-timeout|spawn-burst)$"
       AND NOT ops EQUAL wakes)
      message(FATAL_ERROR "${workload}: ${ops} ops but ${wakes} wakes: ${line}")
    endif()
    if(workload STREQUAL "memory-g" AND bytes_per_timer LESS 1)
      message(FATAL_ERROR "memory-g: no bytes per G: ${line}")
    endif()
  endforeach()
  foreach(w IN LISTS sched_wls)
    foreach(t 1 2)
      foreach(d sched-perp sched-lheap sched-tt kernel floor pheap)
        set(want 0)
        if(d MATCHES "^sched-" OR (d STREQUAL "kernel" AND w STREQUAL "sleep-1")
           OR (d STREQUAL "floor" AND w STREQUAL "rpc-sched"))
          set(want 1)
        endif()
        if(w STREQUAL "memory-g" AND t EQUAL 2)
          set(want 0)
        endif()
        if(w MATCHES "^(memory-g|spawn-burst)$" AND NOT d STREQUAL "sched-perp")
          set(want 0)
        endif()
        if("${d}/${w}/${t}" IN_LIST sseen)
          set(have 1)
        else()
          set(have 0)
        endif()
        if(NOT have EQUAL want)
          message(FATAL_ERROR "${d} ${w} at ${t} Ps: a row (${have}), expected ${want}")
        endif()
      endforeach()
    endforeach()
  endforeach()
  file(READ ${OUT}/sched/table.txt stable)
  string(FIND "${stable}" "\ncommand:" at_header)
  string(SUBSTRING "${stable}" 0 ${at_header} verdict)
  foreach(v "chan-timeout;1;ns/op/thr" "chan-timeout;2;ns/op/thr"
            "spawn;1;ns/op/thr" "spawn;2;ns/op/thr" "pingpong;1;ns/op/thr"
            "pingpong;2;ns/op/thr" "sleep;1;ns/op/thr" "sleep;2;ns/op/thr" "sleep-1;1;p99 us"
            "sleep-1;2;p99 us" "busy-lateness;1;p99 us" "busy-lateness;2;p99 us"
            "rpc-sched;1;ns/op/thr" "rpc-sched;2;ns/op/thr"
            "conn-churn;1;ns/op/thr" "conn-churn;2;ns/op/thr"
            "memory-g N=2k guard=auto;1;B/G" "memory-g N=2k guard=pages;1;B/G"
            "spawn-burst N=2k guard=auto;1;ns/G" "spawn-burst N=3k guard=pages;2;ns/G")
    list(GET v 0 wl)
    list(GET v 1 thr)
    list(GET v 2 metric)
    if(NOT verdict MATCHES "\n${wl} +${thr}  ${metric}  +sched-[a-z]+ +[0-9.]+ [|]")
      message(FATAL_ERROR "no verdict line for ${wl} at ${thr} Ps by ${metric}:\n${verdict}")
    endif()
  endforeach()
  # sleep's table has its throughput and its lateness; sleep-1's, every
  # design's p50 and p99 over the kernel floor's
  string(REGEX MATCH "\n== sleep\n[^\n]*" head "${stable}")
  if(NOT head MATCHES "ns/op/thr" OR NOT head MATCHES "p99 us")
    message(FATAL_ERROR "the sleep table's header:${head}")
  endif()
  if(NOT stable MATCHES "== sleep-1[^=]*p50 / p99 over the kernel floor's[^\n]*sched-perp")
    message(FATAL_ERROR "no kernel-floor ratios under the sleep-1 table:\n${stable}")
  endif()
endif()

# vtime-hour, where the scheduler is built: the hour of virtual time on
# each timer mode at 2 Ps. Every tick and wake counted (3,600,000 and
# 10,000), every G finished, none early and none late on the virtual
# clock (ptbench's own count check says the rest). Not under TSan (as
# above).
if(help MATCHES "sched-perp" AND NOT SANITIZE STREQUAL "thread")
  execute_process(
    COMMAND ${PTBENCH} -w vtime-hour -d sched-perp,sched-lheap,sched-tt -t 2 -r 1 --no-peers
            --no-plots -q -o ${OUT}/vtime
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ptbench -w vtime-hour failed (${rc}):\n${out}\n${err}")
  endif()
  file(STRINGS ${OUT}/vtime/ptbench.jsonl vlines)
  list(LENGTH vlines nv)
  if(NOT nv EQUAL 3)
    message(FATAL_ERROR "vtime-hour: expected a row per timer mode, got ${nv}:\n${out}")
  endif()
  foreach(line IN LISTS vlines)
    foreach(field ops waits wakes early_wakes gs_started gs_finished)
      string(JSON ${field} GET "${line}" ${field})
    endforeach()
    check_quantiles("${line}")
    # in µs to 2 places: ptbench's own count check sees the nanoseconds
    string(JSON late GET "${line}" lat_max_us)
    if(NOT ops EQUAL 3610000 OR NOT waits EQUAL 3610000 OR NOT wakes EQUAL 3610000
       OR NOT early_wakes EQUAL 0 OR NOT gs_started EQUAL 10001 OR NOT gs_finished EQUAL 10001
       OR late GREATER 0)
      message(FATAL_ERROR "vtime-hour row: ${line}")
    endif()
  endforeach()
endif()

# http, where wrk is installed and the scheduler built: our server in both
# timer modes for a second under 50 connections (the peers' servers need
# Go and nginx, which the main job installs). Every row has requests, no
# client errors, the server's memory and CPU, and ordered quantiles; the
# table and the verdict have their lines. Not under TSan (as above).
find_program(WRK wrk)
set(nhttp 0)
if(WRK AND help MATCHES "sched-perp" AND NOT SANITIZE STREQUAL "thread")
  execute_process(
    COMMAND ${PTBENCH} -w http,http-idle -d sched-perp,sched-lheap,sched-tt,floor -t 1 -r 1 --http-conns 50
            --http-secs 1 --idle-conns 300 --idle-ms 300 --no-peers --no-plots -q -o ${OUT}/http
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ptbench -w http failed (${rc}):\n${out}\n${err}")
  endif()
  file(STRINGS ${OUT}/http/ptbench.jsonl hlines)
  list(LENGTH hlines nhttp)
  if(NOT nhttp EQUAL 7)
    message(FATAL_ERROR "http: expected a row for sched-perp, sched-lheap and sched-tt in each of "
                        "http and http-idle, and the floor's in http, got ${nhttp}:\n${out}")
  endif()
  # http-idle: every idle connection made and closed by the server (an
  # early close is a judgment of timing, left to the table), the server's
  # bytes per connection and the load's requests counted
  foreach(line IN LISTS hlines)
    foreach(field kind variant ops errors rss_bytes cpu_s client_cpu_s bytes_per_timer
                  load_req_per_s)
      string(JSON ${field} GET "${line}" ${field})
    endforeach()
    if(kind STREQUAL "http")
      if(NOT variant STREQUAL "c=50" OR ops LESS_EQUAL 0 OR NOT errors EQUAL 0
         OR rss_bytes LESS_EQUAL 0 OR cpu_s LESS_EQUAL 0 OR client_cpu_s LESS_EQUAL 0)
        message(FATAL_ERROR "http row: ${line}")
      endif()
    elseif(NOT kind STREQUAL "idle" OR NOT variant STREQUAL "idle=300" OR NOT ops EQUAL 300
           OR bytes_per_timer LESS_EQUAL 0 OR load_req_per_s LESS_EQUAL 0)
      message(FATAL_ERROR "http-idle row: ${line}")
    endif()
    check_quantiles("${line}")
  endforeach()
  file(READ ${OUT}/http/table.txt htable)
  if(NOT htable MATCHES "\nhttp c=50 +1  ns/req  +sched-[a-z]+ +[0-9.]+ [|]"
     OR NOT htable MATCHES "\n== http c=50\n[^\n]*req/s[^\n]*cli cpu"
     OR NOT htable MATCHES "threads 1: sched-perp's req/s / p99 over: sched-tt [0-9.]+ / [0-9.]+"
     OR NOT htable MATCHES "\nfloor +1 +[0-9.]+ ")
    message(FATAL_ERROR "http: the table's verdict line, header or footer:\n${htable}")
  endif()
endif()

# Bad options: usage on stderr, exit 2.
foreach(bad "--bogus" "-t;0" "-t;x" "-d;nosuch" "-w;nosuch" "-r;0" "-r;65" "-D" "--tickers;-5"
            "-b;nosuch" "--memory-gs;0" "--burst-gs;1,0" "--stack-guards;auto,bogus"
            "--http-conns;0" "--http-secs;0" "--idle-conns;0" "--idle-ms;x")
  execute_process(COMMAND ${PTBENCH} ${bad} -o ${OUT} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 2 OR NOT e MATCHES "usage: ptbench")
    message(FATAL_ERROR "ptbench ${bad}: exit ${rc}, stderr: ${e}")
  endif()
endforeach()
message(STATUS "ptbench smoke: ${n} rows, ${nsched} in the scheduler, ${nhttp} http, counts add up")
