#!/usr/bin/env bash
# A server that must keep serving: fresh copies of examples/httpd.c, each
# asked once with curl, loaded with a wrk burst, then asked again, with
# busy loops competing for the cores. A server that does not answer the
# first or the last request has stalled (a lost wake-up: the process is
# alive, nobody takes the work). Only 127.0.0.1 is used.
#
#   stress/stall-check.sh [-n RUNS] [-m per-p|timerthread|both] [-b BUSY]
#                          [-c CONNS] [-d SECS] [-x HTTPD]
#     -n  fresh servers per timer mode (default 200); they alternate 1 and 2 Ps
#     -m  timer modes (default both)
#     -b  busy loops beside the servers (default 6)
#     -c  wrk's connections (default 5000), -d its seconds (default 2)
#     -x  the server binary (default: build/example_httpd, built if missing)
# Prints a line per mode: runs, stalls before the burst, stalls after it.
# Exit status 1 if any server stalled.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=200 MODES="per-p timerthread" BUSY=6 CONNS=5000 SECS=2 HTTPD=
while getopts "n:m:b:c:d:x:" o; do
    case $o in
    n) RUNS=$OPTARG ;;
    m) [ "$OPTARG" = both ] || MODES=$OPTARG ;;
    b) BUSY=$OPTARG ;;
    c) CONNS=$OPTARG ;;
    d) SECS=$OPTARG ;;
    x) HTTPD=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
    esac
done
command -v wrk >/dev/null && command -v curl >/dev/null || bash scripts/deps.sh wrk curl
if [ -z "$HTTPD" ]; then
    HTTPD=build/example_httpd
    if [ ! -x "$HTTPD" ]; then
        bash scripts/deps.sh
        cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
        cmake --build build -j"$(nproc)" --target example_httpd >/dev/null
    fi
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
busy_pids=()
server=
# Every step may fail (a server already gone): none may stop the rest, or
# the busy loops outlive the script (set -e holds inside the trap too).
cleanup() {
    if [ -n "$server" ]; then kill -9 "$server" 2>/dev/null || true; fi
    for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq "$BUSY"); do
    bash -c 'while :; do :; done' &
    busy_pids+=($!)
done

# Asks once; true if the server answered "ok" within the bound. A
# connect that fails at once (curl's 7) is the client's: a burst leaves
# thousands of loopback ports in TIME_WAIT, and a connect can find none
# free. It is tried again (counted in `noconn`), as the server never saw
# it; a connection the server accepted and left unanswered is a stall.
noconn=0 rc=0
ask() {
    local out tries=0
    while :; do
        out=$(curl -s -m 10 "http://127.0.0.1:$1/" 2>/dev/null) && rc=0 || rc=$?
        [ "$rc" = 7 ] && [ $((tries += 1)) -le 10 ] || break
        noconn=$((noconn + 1))
        sleep 1
    done
    [ "$rc" = 0 ] && [ "$out" = ok ]
}

# What a server that did not answer looks like: alive or not, what it
# printed, each thread's name, state and kernel wait channel, and
# whether it answers once more, later.
report() { # pid port what
    echo "run $i ($mode, $procs P): $3 (curl exit $rc)" >&2
    # the listening socket's accept queue (Recv-Q): connections the kernel
    # made that the server has not accepted; 0 means none reached it
    ss -ltnH "sport = :$2" 2>/dev/null | sed 's/^/  listening: /' >&2
    if ! kill -0 "$1" 2>/dev/null; then
        echo "  the server is gone:" >&2
        sed 's/^/    /' "$work/out" >&2
        return
    fi
    for t in /proc/"$1"/task/*; do
        printf '  thread %s %-16s state %s wchan %s\n' "${t##*/}" "$(cat "$t/comm" 2>/dev/null)" \
            "$(awk '{print $3}' "$t/stat" 2>/dev/null)" "$(cat "$t/wchan" 2>/dev/null)" >&2
    done
    if ask "$2"; then echo "  it answered a request made 10 s later" >&2
    else echo "  no answer to a request made 10 s later either" >&2; fi
}

stalled=0
for mode in $MODES; do
    before=0 after=0
    for i in $(seq "$RUNS"); do
        procs=$(( 1 + i % 2 ))
        "$HTTPD" -P "$procs" -m "$mode" >"$work/out" 2>&1 &
        server=$!
        port=
        for _ in $(seq 500); do
            port=$(sed -n 's/^listening on 127.0.0.1://p' "$work/out")
            [ -n "$port" ] && break
            sleep 0.01
        done
        if [ -z "$port" ]; then
            echo "run $i ($mode, $procs P): the server did not start" >&2
            cat "$work/out" >&2
            exit 1
        fi
        if ! ask "$port"; then
            before=$((before + 1))
            report "$server" "$port" "no answer to the first request"
        else
            wrk -t1 -c"$CONNS" -d"${SECS}s" --timeout 5s "http://127.0.0.1:$port/" >/dev/null 2>&1 || true
            if ! ask "$port"; then
                after=$((after + 1))
                report "$server" "$port" "no answer after the burst"
            fi
        fi
        kill -9 "$server" 2>/dev/null
        wait "$server" 2>/dev/null || true
        server=
    done
    echo "$mode: $RUNS fresh servers (1 and 2 Ps), $BUSY busy loops, wrk -c$CONNS -d${SECS}s:" \
         "$before stalled before the burst, $after after it" \
         "($noconn connects that the client could not make, tried again)"
    noconn=0
    stalled=$((stalled + before + after))
done
[ "$stalled" = 0 ]
