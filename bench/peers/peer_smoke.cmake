# The tokio peer (bench/peers/tokio), through ptbench as the main job runs
# it: every workload it implements, at 1 and 2 threads, for a tiny count.
# The build system makes it (target ptbench-tokio, with cargo against
# Debian's crates), built here first; ptbench checks each row's counts as
# it checks ours (every task started finished, every wait ended once, no
# sleep woke early; it exits 1 otherwise); this checks that every row
# came, with its fields. Where cargo or librust-tokio-dev is missing, the
# build has no such target, and this test is skipped with that reason.
#   cmake -DPTBENCH=... -DBUILD_DIR=... -DHAVE_TOKIO=ON|OFF -DOUT=... -P peer_smoke.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT HAVE_TOKIO)
  message("SKIPPED: the tokio peer: no cargo or no tokio crates (librust-tokio-dev) at configure time")
  return()
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ptbench-tokio
                RESULT_VARIABLE brc OUTPUT_VARIABLE bout ERROR_VARIABLE berr)
if(NOT brc EQUAL 0)
  message(FATAL_ERROR "building the tokio peer failed (${brc}):\n${bout}\n${berr}")
endif()
set(timer_wls rpc rpc-pending reset latency ticker slack memory)
set(sched_wls spawn pingpong chan-timeout sleep sleep-1 busy-lateness rpc-sched conn-churn
              memory-g spawn-burst)
execute_process(COMMAND ${PTBENCH} --help OUTPUT_VARIABLE help)
set(wls ${timer_wls})
if(help MATCHES "sched-perp")
  list(APPEND wls ${sched_wls})
endif()
string(REPLACE ";" "," wlist "${wls}")
file(REMOVE_RECURSE ${OUT})
execute_process(
  COMMAND ${PTBENCH} -w ${wlist} -d kernel -t 1,2 -r 1 -n 2000 --latency-ms 40 --ticker-ms 100
          --tickers 100 --memory-timers 20000 --memory-gs 2000 --burst-gs 2000
          --slacks 0 --slack-tickers 100 --slack-ms 200
          --stack-guards auto --peers tokio,tokio-warm --no-plots -q -o ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(out MATCHES "peer tokio: skipped \\(([^)]*)\\)")
  message("SKIPPED: the tokio peer: ${CMAKE_MATCH_1}")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ptbench with the tokio peer failed (${rc}):\n${out}\n${err}")
endif()
if(out MATCHES "peer tokio[^\n]*failed[^\n]*")
  message(FATAL_ERROR "${CMAKE_MATCH_0}\n${err}")
endif()

# A row per workload and thread count (memory and memory-g: one thread,
# a process each), and tokio-warm's for rpc and rpc-pending.
set(want "")
foreach(w IN LISTS wls)
  if(w STREQUAL "memory" OR w STREQUAL "memory-g")
    list(APPEND want "tokio ${w} 1")
  else()
    list(APPEND want "tokio ${w} 1" "tokio ${w} 2")
  endif()
endforeach()
list(APPEND want "tokio-warm rpc 1" "tokio-warm rpc 2" "tokio-warm rpc-pending 1"
     "tokio-warm rpc-pending 2")

file(STRINGS ${OUT}/ptbench.jsonl lines)
set(seen "")
foreach(line IN LISTS lines)
  string(JSON design GET "${line}" design)
  if(NOT design MATCHES "^tokio")
    continue()
  endif()
  string(JSON w GET "${line}" workload)
  string(JSON t GET "${line}" threads)
  string(JSON ops GET "${line}" ops)
  if(NOT ops GREATER 0)
    message(FATAL_ERROR "${design} ${w} ${t}: no ops: ${line}")
  endif()
  if(w STREQUAL "memory" OR w STREQUAL "memory-g")
    string(JSON b GET "${line}" bytes_per_timer)
    if(NOT b GREATER 0)
      message(FATAL_ERROR "${design} ${w}: no bytes each: ${line}")
    endif()
  endif()
  if(w STREQUAL "slack") # its wake-ups, counted as ours are
    string(JSON wk GET "${line}" wakeups_per_s)
    if(NOT wk GREATER 0)
      message(FATAL_ERROR "${design} slack ${t}: no wake-ups: ${line}")
    endif()
  endif()
  if(w MATCHES "^(latency|ticker|slack|sleep|sleep-1|busy-lateness|rpc-sched|conn-churn)$")
    string(JSON p99 GET "${line}" lat_p99_us)
    if(NOT p99 GREATER 0)
      message(FATAL_ERROR "${design} ${w} ${t}: no lateness: ${line}")
    endif()
  endif()
  list(APPEND seen "${design} ${w} ${t}")
endforeach()
foreach(row IN LISTS want)
  if(NOT row IN_LIST seen)
    message(FATAL_ERROR "no row for ${row}; rows: ${seen}")
  endif()
endforeach()
list(LENGTH want nwant)
message(STATUS "the tokio peer: ${nwant} rows, every count adding up")
