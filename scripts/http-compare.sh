#!/usr/bin/env bash
# Side by side under wrk: examples/httpd.c in both timer modes against the
# Go 1.19 servers of bench/peers/go-http (raw net.Conn with
# SetReadDeadline, and net/http with the same timeouts), alternated and
# repeated, on 127.0.0.1. Prints one line per run and the medians.
#
#   scripts/http-compare.sh [-r REPS] [-d SECS] [-c CONNS,...] [-P PROCS,...]
#
# wrk and the servers share the machine's cores, as on a loaded host; the
# figures are ratios within one run of this script, never across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=3 SECS=4 CONNS=100,1000 PROCS=1,2
while getopts "r:d:c:P:" o; do
    case $o in
    r) REPS=$OPTARG ;; d) SECS=$OPTARG ;; c) CONNS=$OPTARG ;; P) PROCS=$OPTARG ;;
    *) sed -n '2,11p' "$0"; exit 2 ;;
    esac
done
command -v wrk >/dev/null || { echo "http-compare: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
GO=$(command -v go || echo /usr/lib/go-1.19/bin/go)
work=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
[ -x build/example_httpd ] || cmake --build build --target example_httpd >/dev/null
servers="c-per-p c-timerthread"
if [ -x "$GO" ] && (cd bench/peers/go-http && GOCACHE="$work/gocache" "$GO" build -o "$work/go-http" .); then
    servers="$servers go-raw go-nethttp"
else
    echo "http-compare: no Go toolchain: the Go rows are left out" >&2
fi

start() { # server procs -> sets pid, port
    case $1 in
    c-per-p) build/example_httpd -P "$2" -m per-p >"$work/out" 2>&1 & ;;
    c-timerthread) build/example_httpd -P "$2" -m timerthread >"$work/out" 2>&1 & ;;
    go-raw) GOMAXPROCS=$2 "$work/go-http" -server raw >"$work/out" 2>&1 & ;;
    go-nethttp) GOMAXPROCS=$2 "$work/go-http" -server nethttp >"$work/out" 2>&1 & ;;
    esac
    pid=$!
    port=
    for _ in $(seq 500); do
        port=$(sed -n 's/^listening on 127.0.0.1://p' "$work/out")
        [ -n "$port" ] && break
        sleep 0.01
    done
    [ -n "$port" ] || { echo "$1 did not start" >&2; cat "$work/out" >&2; exit 1; }
    curl -sf "http://127.0.0.1:$port/" >/dev/null || { echo "$1: no answer" >&2; exit 1; }
}

echo "# $0 -r $REPS -d $SECS -c $CONNS -P $PROCS   ($(nproc) CPUs, $(uname -r))"
printf '%-14s %3s %6s %4s %10s %9s %9s %7s\n' server P conns rep "req/s" p50_us p99_us errors
for c in ${CONNS//,/ }; do
  for p in ${PROCS//,/ }; do
    for r in $(seq "$REPS"); do
      # the order rotates each repetition, so no server always goes first
      set -- $servers
      for _ in $(seq $(( (r - 1) % $# ))); do set -- "${@:2}" "$1"; done
      for s in "$@"; do
        start "$s" "$p"
        wrk -t1 -c"$c" -d"${SECS}s" --timeout 5s --latency "http://127.0.0.1:$port/" >"$work/wrk" 2>&1 || true
        kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
        rps=$(awk '/^Requests\/sec/ {print $2}' "$work/wrk")
        p50=$(awk '$1=="50%" {print $2}' "$work/wrk")
        p99=$(awk '$1=="99%" {print $2}' "$work/wrk")
        err=$(awk '/Socket errors|Non-2xx/ {s=s $0 "; "} END {print s==""?"0":"yes"}' "$work/wrk")
        us() { awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /s$/) print n*1e6; else print "?" }'; }
        printf '%-14s %3s %6s %4s %10s %9s %9s %7s\n' "$s" "$p" "$c" "$r" "$rps" "$(us "$p50")" "$(us "$p99")" "$err" | tee -a "$work/rows"
      done
    done
  done
done
echo "# medians"
awk '{print $1, $2, $3}' "$work/rows" | sort -u -k3,3n -k2,2n -k1,1 | while read -r s p c; do
    awk -v s="$s" -v p="$p" -v c="$c" '$1==s && $2==p && $3==c {print $5}' "$work/rows" | sort -g |
        awk -v k="$(printf '%-14s P=%s conns=%-6s' "$s" "$p" "$c")" \
            '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%s median req/s %10.0f\n", k, m}'
done
