#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ (or FUZZ_BUILD, a tree
# configured with -DLSTUDIO_FUZZ=ON, as tools/dev.sh test's build-asan/) and runs
# each for a while with its dictionary (tests/fuzz/NAME.dict), seeded from
# ../shared/fixtures and the zoo samples (generated into build-fuzz/seeds,
# never copied into the repository). Corpora grow in build-fuzz/corpus_NAME.
#   tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60; all targets)
#   tools/fuzz.sh build                              (build and seed only)
# Targets: pte ptd pt2 program_json config delower xnnpack run npy etdump. FUZZ_NICE=19 runs them niced.
# Exits non-zero on any finding; crash inputs are left in build-fuzz/findings/
# and the end of the log is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (Debian packages clang, libclang-rt-dev)" >&2; exit 1; }
out=${FUZZ_BUILD:-build-fuzz}
all=(pte ptd pt2 program_json config delower xnnpack run npy etdump)

# An ordinary CMake build with clang: incremental, and quiet unless it fails.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$out/build.ninja" ]; then
  cmake -S "$root" -B "$out" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLSTUDIO_FUZZ=ON -DLSTUDIO_BUILD_GUI=OFF "${launcher[@]}" > "$out.configure.log" 2>&1 ||
    { cat "$out.configure.log" >&2; exit 1; }
  mv "$out.configure.log" "$out/"
fi
if ! cmake --build "$out" -j2 --target lowering-cli "${all[@]/#/fuzz_}" > "$out/build.log" 2>&1; then
  grep -E "error|FAILED" "$out/build.log" | head -n 40 >&2
  echo "fuzz: build failed (see $out/build.log)" >&2
  exit 1
fi

# Seeds: real files in place of the fixtures, zoo samples made by the CLI.
seeds="$out/seeds"
mkdir -p "$seeds/pte" "$seeds/xnnpack" "$seeds/delower" "$seeds/run" "$seeds/npy" "$seeds/etdump" "$seeds/ptd" "$seeds/pt2" "$seeds/program_json" "$seeds/config" "$out/findings"
fixtures="$root/../shared/fixtures"
if [ -d "$fixtures" ]; then
  cp -u "$fixtures"/pte/*.pte "$fixtures"/other/*.bpte "$seeds/pte/" 2>/dev/null || true
  cp -u "$fixtures"/ptd/*.ptd "$seeds/ptd/" 2>/dev/null || true
  cp -u "$fixtures"/pt2/linear.pt2 "$fixtures"/other/etrecord.bin "$seeds/pt2/" 2>/dev/null || true
fi
for s in mlp dynamic_batch training quantized_linear; do
  [ -f "$seeds/pt2/$s.pt2" ] || "$out/app/lowering-cli" sample "$s" -o "$seeds/pt2/$s.pt2" >/dev/null
  [ -f "$seeds/program_json/$s.json" ] ||
    unzip -p "$seeds/pt2/$s.pt2" "$s/models/model.json" > "$seeds/program_json/$s.json" 2>/dev/null || true
done
# De-lowering starts from real programs and from zoo samples exported by the studio.
cp -u "$seeds"/pte/*.pte "$seeds/delower/" 2>/dev/null || true
[ -f "$seeds/pt2/llama_small.pt2" ] || "$out/app/lowering-cli" sample llama --layers 1 --dim 32 --heads 2 --kv-heads 1 \
  --seq 8 --vocab 32 -o "$seeds/pt2/llama_small.pt2" >/dev/null
for s in dynamic_batch quantized_linear training llama_small; do  # small enough for -max_len
  [ -f "$seeds/delower/$s.pte" ] || "$out/app/lowering-cli" export "$seeds/pt2/$s.pt2" -o "$seeds/delower/$s.pte" >/dev/null
done
# The interpreter runs what de-lowering starts from: real programs and exported samples.
cp -u "$seeds"/delower/*.pte "$seeds/run/" 2>/dev/null || true
# Arrays the interpreter wrote: its outputs as .npy files.
for s in mlp dynamic_batch; do
  [ -f "$seeds/npy/${s}_output_0.npy" ] || { "$out/app/lowering-cli" run "$seeds/pt2/$s.pt2" --save-outputs "$seeds/npy/$s" \
    >/dev/null && mv "$seeds/npy/$s/output_0.npy" "$seeds/npy/${s}_output_0.npy" && rm -r "$seeds/npy/$s"; } || true
done
# ETDumps ExecuTorch's runtime wrote in the conformance run (tools/dev.sh test runs it first).
for f in build/interpreter/*/etdump/run.etdp; do
  [ -f "$f" ] && cp -u "$f" "$seeds/etdump/$(basename "$(dirname "$(dirname "$f")")").etdp" || true
done
# Delegate payloads cut out of the fixtures where the CLI says they lie.
for f in "$seeds"/pte/*.pte; do
  "$out/app/lowering-cli" delegates "$f" --json 2>/dev/null | python3 -c '
import json, sys
path, out = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
for m in json.load(sys.stdin)["methods"]:
    for i, d in enumerate(m["delegates"]):
        if d["bytes"] <= 400000:
            start = d["file_offset"]
            name = path.rsplit("/", 1)[-1] + "." + m["name"] + "." + str(i) + ".bin"
            open(out + "/" + name, "wb").write(raw[start:start + d["bytes"]])
' "$f" "$seeds/xnnpack" || true
done
echo '{"memory_planning_pass": {"alignment": 64}, "remove_view_copy": false, "external_constants": [{"name": "*.weight", "file": "w.ptd"}]}' \
  > "$seeds/config/a.json"

[ "${1:-}" = build ] && exit 0
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

status=0
for name in "${targets[@]}"; do
  mkdir -p "$out/corpus_$name"
  echo "fuzz: $name for ${seconds}s"
  # -timeout: a slow input is a finding (a hang); -rss_limit_mb: so is a huge allocation.
  if ! nice -n "${FUZZ_NICE:-0}" "$out/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=400000 -print_final_stats=1 -dict="tests/fuzz/$name.dict" \
       -artifact_prefix="$out/findings/${name}-" "$out/corpus_$name" "$seeds/$name" > "$out/fuzz_$name.log" 2>&1; then
    echo "fuzz: $name found a problem (see $out/fuzz_$name.log and $out/findings/)" >&2
    tail -n 40 "$out/fuzz_$name.log" >&2
    status=1
  else
    grep -E "^#[0-9]+[[:space:]]+DONE" "$out/fuzz_$name.log" | tail -n 1 || true
  fi
done
exit $status
