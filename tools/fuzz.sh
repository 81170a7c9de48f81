#!/usr/bin/env bash
# Builds the fuzz targets (clang, libFuzzer, ASan + UBSan) and runs each for
# a while, seeded from ../shared/fixtures and the zoo samples (generated into
# the build folder, never copied into the repository).
#   tools/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# Exits non-zero on any finding; crash inputs are left in build-fuzz/findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${1:-60}
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (Debian package clang)" >&2; exit 1; }
[ -x build/app/lowering-cli ] || { echo "fuzz: build first (tools/dev.sh build)" >&2; exit 1; }
out=build-fuzz
mkdir -p "$out/findings"
includes="-I$root -I$root/build/engine"
sources=$(ls "$root"/engine/*.cpp "$root"/engine/lowering/*.cpp "$root"/engine/lowering/passes/*.cpp "$root"/engine/samples/*.cpp)
flags="-std=c++20 -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
# The engine once, as objects, then one link per target.
mkdir -p "$out/obj"
objs=()
for s in $sources; do
  o="$out/obj/$(echo "${s#$root/}" | tr '/' '_').o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ]; then clang++ $flags $includes -c "$s" -o "$o"; fi
  objs+=("$o")
done
seeds="$out/seeds"
mkdir -p "$seeds/pte" "$seeds/pt2" "$seeds/json" "$seeds/config"
fixtures="$root/../shared/fixtures"
if [ -d "$fixtures" ]; then
  cp "$fixtures"/pte/*.pte "$fixtures"/ptd/*.ptd "$fixtures"/other/*.bpte "$seeds/pte/" 2>/dev/null || true
  cp "$fixtures"/pt2/linear.pt2 "$fixtures"/other/etrecord.bin "$seeds/pt2/" 2>/dev/null || true
fi
for s in mlp dynamic_batch training quantized_linear; do
  build/app/lowering-cli sample "$s" -o "$seeds/pt2/$s.pt2" >/dev/null
  unzip -p "$seeds/pt2/$s.pt2" "$s/models/model.json" > "$seeds/json/$s.json" 2>/dev/null || true
done
echo '{"memory_planning_pass": {"alignment": 64}, "remove_view_copy": false, "external_constants": [{"name": "*.weight", "file": "w.ptd"}]}' > "$seeds/config/a.json"
status=0
for target in pte:pte pt2:pt2 program_json:json config:config; do
  name=${target%%:*}; corpus=${target##*:}
  clang++ $flags -fsanitize=fuzzer $includes "tests/fuzz/fuzz_$name.cpp" "${objs[@]}" -lsimdjson -lminizip -lz -lpthread \
    -o "$out/fuzz_$name"
  echo "fuzz: $name for ${seconds}s"
  mkdir -p "$out/corpus_$name"
  if ! "$out/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=400000 \
       -artifact_prefix="$out/findings/${name}-" "$out/corpus_$name" "$seeds/$corpus" > "$out/fuzz_$name.log" 2>&1; then
    echo "fuzz: $name found a problem (see $out/fuzz_$name.log and $out/findings/)" >&2
    tail -n 30 "$out/fuzz_$name.log" >&2
    status=1
  else
    grep -E "^(#[0-9]+ *DONE|Done)" "$out/fuzz_$name.log" | tail -n 1 || true
  fi
done
exit $status
