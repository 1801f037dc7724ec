#!/usr/bin/env bash
# Installs ptimer into a scratch prefix and builds the usage example as an
# outside program would: once with pkg-config, once with find_package; and
# includes every installed header from C++ (the extern "C" guards).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh g++
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DPT_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/build" -j"$(nproc)" >/dev/null
cmake --install "$work/build" >/dev/null
libdir=$(find "$work/prefix" -name ptimer.pc -printf '%h\n' | head -1)

# The shared library exports exactly the functions the headers mark PT_API
# (netpoll is a static library and not in it), nothing internal.
so=$(find "$work/prefix" -name 'libptimer.so.*' -type f | head -1)
nm -D --defined-only "$so" | awk '{print $3}' | sort > "$work/exported"
cat "$work"/prefix/include/ptimer/{clock,heap4,ptimer,timerthread}.h |
    grep -o '^PT_API[^(]*\bpt_[a-z0-9_]*(' | sed 's/.*\(pt_[a-z0-9_]*\)(/\1/' |
    sort > "$work/declared"
if ! diff "$work/declared" "$work/exported"; then
    echo "libptimer.so exports differ from the PT_API declarations (< declared, > exported)" >&2
    exit 1
fi
echo "exports: ok ($(wc -l < "$work/exported") functions)"

# pkg-config
PKG_CONFIG_PATH="$libdir" cc -std=c11 -Wall -Werror examples/usage.c \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs ptimer) \
    -Wl,-rpath,"$(dirname "$libdir")" -o "$work/usage-pc"
"$work/usage-pc" >/dev/null
echo "pkg-config: ok"

# C++: every installed header in one translation unit
for h in "$work"/prefix/include/ptimer/*.h; do
    echo "#include <ptimer/$(basename "$h")>"
done > "$work/headers.cpp"
echo 'int main() { return 0; }' >> "$work/headers.cpp"
c++ -std=c++17 -Wall -Wextra -Werror -fsyntax-only \
    $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags ptimer) "$work/headers.cpp"
echo "C++ headers: ok ($(ls "$work"/prefix/include/ptimer/*.h | wc -l) headers)"

# find_package
mkdir -p "$work/consumer"
cp examples/usage.c "$work/consumer/"
cat > "$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(ptimer CONFIG REQUIRED)
add_executable(usage usage.c)
target_link_libraries(usage PRIVATE ptimer::ptimer)
CM
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
"$work/consumer/build/usage" >/dev/null
echo "find_package: ok"
