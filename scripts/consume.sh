#!/usr/bin/env bash
# Installs ptimer into a scratch prefix and builds the examples as an
# outside program would, against the shared libraries: once with
# pkg-config, once with find_package; checks that each shared library
# exports exactly the functions its headers mark PT_API; includes every
# installed header from C++ (the extern "C" guards); and builds the example
# engine (Seastar's timer set) against the installed engine.h and runs it
# in the installed ptbench and ptstress, its broken copy caught by name.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh g++
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DPT_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/build" -j"$(nproc)" --target all >/dev/null
cmake --install "$work/build" >/dev/null
libdir=$(find "$work/prefix" -name ptimer.pc -printf '%h\n' | head -1)
export PKG_CONFIG_PATH="$libdir"
rpath="-Wl,-rpath,$(dirname "$libdir")"

# Each shared library exports exactly what its headers declare PT_API.
exports() { # library-name header...
    local so
    so=$(find "$work/prefix" -name "lib$1.so.*" -type f | head -1)
    shift
    nm -D --defined-only "$so" | awk '{print $3}' | sort > "$work/exported"
    (cd "$work/prefix/include/ptimer" && cat "$@") |
        grep -o '^PT_API[^(]*\bpt_[a-z0-9_]*(' |
        sed -E 's/.*[^a-z0-9_](pt_[a-z0-9_]*)\($/\1/' | # the last name: not a pt_ inside it
        sort > "$work/declared"
    if ! diff "$work/declared" "$work/exported"; then
        echo "$so exports differ from the PT_API declarations (< declared, > exported)" >&2
        exit 1
    fi
    echo "exports of $(basename "$so"): ok ($(wc -l < "$work/exported") functions)"
}
exports ptimer clock.h ptimer.h timerthread.h
exports ptimer_pwheel pwheel.h
exports ptimer_lheap lheap.h
exports ptimer_netpoll netpoll.h
exports ptimer_sched sched.h
# and as many as the API has: a parse that found nothing would pass above
[ "$(nm -D --defined-only "$(find "$work/prefix" -name 'libptimer_pwheel.so.*' -type f | head -1)" |
     grep -c ' pt_wheel_')" = 17 ] || { echo "libptimer_pwheel: expected 17 exports" >&2; exit 1; }

# pkg-config: each example against its package, linked shared. (grep
# reads all of ldd's output: with pipefail, grep -q quitting at the first
# match could kill ldd with SIGPIPE and fail the check at random.)
cc -std=c11 -Wall -Werror examples/usage.c $(pkg-config --cflags --libs ptimer) \
    $rpath -o "$work/usage-pc"
cc -std=c11 -Wall -Werror examples/wheel.c $(pkg-config --cflags --libs ptimer-pwheel) \
    $rpath -o "$work/wheel-pc"
cc -std=c11 -Wall -Werror examples/lheap.c $(pkg-config --cflags --libs ptimer-lheap) \
    $rpath -o "$work/lheap-pc"
cc -std=c11 -Wall -Werror examples/deadline.c -pthread \
    $(pkg-config --cflags --libs ptimer-netpoll) $rpath -o "$work/deadline-pc"
cc -std=c11 -Wall -Werror examples/sleepers.c \
    $(pkg-config --cflags --libs ptimer-sched) $rpath -o "$work/sleepers-pc"
cc -std=c11 -Wall -Werror examples/echo.c \
    $(pkg-config --cflags --libs ptimer-sched) $rpath -o "$work/echo-pc"
cc -std=c11 -Wall -Werror examples/httpd.c \
    $(pkg-config --cflags --libs ptimer-sched) $rpath -o "$work/httpd-pc"
for exe in usage-pc wheel-pc lheap-pc deadline-pc sleepers-pc echo-pc httpd-pc; do
    ldd "$work/$exe" | grep "libptimer.so" >/dev/null ||
        { echo "$exe: not linked shared" >&2; exit 1; }
    "$work/$exe" >/dev/null
done
ldd "$work/wheel-pc" | grep "libptimer_pwheel.so" >/dev/null ||
    { echo "wheel-pc: pwheel not linked shared" >&2; exit 1; }
ldd "$work/lheap-pc" | grep "libptimer_lheap.so" >/dev/null ||
    { echo "lheap-pc: lheap not linked shared" >&2; exit 1; }
ldd "$work/deadline-pc" | grep "libptimer_netpoll.so" >/dev/null ||
    { echo "deadline-pc: netpoll not linked shared" >&2; exit 1; }
for exe in sleepers-pc echo-pc httpd-pc; do
    ldd "$work/$exe" | grep "libptimer_sched.so" >/dev/null ||
        { echo "$exe: sched not linked shared" >&2; exit 1; }
done
echo "pkg-config: ok (ptimer, ptimer-pwheel, ptimer-lheap, ptimer-netpoll, ptimer-sched; shared)"

# C++: every installed header in one translation unit
for h in "$work"/prefix/include/ptimer/*.h; do
    echo "#include <ptimer/$(basename "$h")>"
done > "$work/headers.cpp"
echo 'int main() { return 0; }' >> "$work/headers.cpp"
c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only \
    $(pkg-config --cflags ptimer) "$work/headers.cpp"
echo "C++ headers: ok ($(ls "$work"/prefix/include/ptimer/*.h | wc -l) headers)"

# find_package: the imported targets are the shared libraries
mkdir -p "$work/consumer"
cp examples/usage.c examples/wheel.c examples/lheap.c examples/deadline.c examples/sleepers.c \
    examples/echo.c "$work/consumer/"
cat > "$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(ptimer CONFIG REQUIRED)
add_executable(usage usage.c)
target_link_libraries(usage PRIVATE ptimer::ptimer)
add_executable(wheel wheel.c)
target_link_libraries(wheel PRIVATE ptimer::pwheel)
add_executable(lheap lheap.c)
target_link_libraries(lheap PRIVATE ptimer::lheap)
add_executable(deadline deadline.c)
target_link_libraries(deadline PRIVATE ptimer::netpoll)
add_executable(sleepers sleepers.c)
target_link_libraries(sleepers PRIVATE ptimer::sched)
add_executable(echo echo.c)
target_link_libraries(echo PRIVATE ptimer::sched)
CM
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
for exe in usage wheel lheap deadline sleepers echo; do
    ldd "$work/consumer/build/$exe" | grep "libptimer.so" >/dev/null ||
        { echo "$exe: not linked shared" >&2; exit 1; }
    "$work/consumer/build/$exe" >/dev/null
done
echo "find_package: ok (ptimer::ptimer, ptimer::pwheel, ptimer::lheap, ptimer::netpoll, ptimer::sched; shared)"

# An engine of the user's: the example, against the installed header only,
# with pkg-config and with find_package; then the installed tools on it.
cc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden examples/engine/timerset.c \
    $(pkg-config --cflags ptimer-engine) -pthread -o "$work/libtimerset-pc.so"
cmake -S examples/engine -B "$work/engine" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/engine" >/dev/null
engine=$(find "$work/engine" -name 'libtimerset.so' | head -1)
broken=$(find "$work/engine" -name 'libtimerset-broken.so' | head -1)
bin="$work/prefix/bin"
"$bin/ptstress" --engine "$work/libtimerset-pc.so" -s churn -t 2 -o 1 -T 0.2 -b 1000 -S 1 >/dev/null
"$bin/ptstress" --engine "$engine" -t 2 -o 1 -T 1 -b 1000 -S 1 > "$work/stress.out" ||
    { cat "$work/stress.out"; echo "timerset failed ptstress" >&2; exit 1; }
[ "$(grep -c '^PASS timerset ' "$work/stress.out")" = 4 ] ||
    { cat "$work/stress.out"; echo "timerset: not every scenario passed" >&2; exit 1; }
if "$bin/ptstress" --engine "$broken" -s modtimer -t 2 -o 1 -T 1 -b 1000 -S 1 > "$work/broken.out"; then
    echo "ptstress passed the broken timer set" >&2; exit 1
fi
grep -Eq '^FAIL timerset-broken modtimer:.* fired-after-stop=[1-9]' "$work/broken.out" ||
    { cat "$work/broken.out"; echo "the broken stop was not named" >&2; exit 1; }
"$bin/ptbench" --engine "$engine" -d timerthread -w rpc-pending -t 1 -r 1 -D 100 --no-peers \
    --no-plots -q -o "$work/bench" > "$work/bench.out" 2>&1 ||
    { cat "$work/bench.out"; echo "ptbench failed on timerset" >&2; exit 1; }
grep -q '"design":"timerset"' "$work/bench/ptbench.jsonl" ||
    { echo "ptbench: no timerset row" >&2; exit 1; }
echo "engine: ok (timerset built from the installed engine.h, pkg-config and find_package;"
echo "        every ptstress scenario passed, its broken copy named; a ptbench row)"
