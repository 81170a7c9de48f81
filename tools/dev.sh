#!/usr/bin/env bash
# Sets up a Debian 12 machine for Lowering Studio, builds it, and runs it or its tests.
#   tools/dev.sh run [FILE]  install what is missing, build, start the studio (on the bundled
#                            sample build/samples/mlp.pt2 unless FILE is given)
#   tools/dev.sh test        install what is missing, build, run the conformance suites against
#                            ExecuTorch and, beside them, build with AddressSanitizer + UBSan
#                            (clang), run every Qt Test unit there and each libFuzzer target
#                            briefly (FUZZ_SECONDS, default 15)
#   tools/dev.sh build       install what is missing and build only
#   tools/dev.sh conformance install what is missing, build, make the oracle (ExecuTorch's
#                            Python and runtime, pinned in tests/conformance/requirements.txt)
#                            and compare the studio with it program by program
#   tools/dev.sh models [models.py options]
#                            install what is missing, build, make the oracle and run the whole model
#                            corpus (torchvision, timm, transformers, torchaudio; tests/conformance/models.py):
#                            a table per library, every row in build/models/models.json
#   tools/dev.sh partition-models [partition.py options]
#                            every model of the models' CI tier, float and PT2E int8, partitioned
#                            by XnnpackPartitioner upstream and in the studio (tests/conformance/partition.py)
#   tools/dev.sh bench-conformance [--from aten|edge] [--only NAME...] [--runs N]
#   tools/dev.sh bench-run [--layers N] [--runs N] [--pte FILE]
#                            ExecuTorch's to_edge + to_executorch against the studio's export, time and peak RSS
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# Debian packages the build, the tests and the studio need.
packages=(build-essential cmake ninja-build pkg-config
          qt6-base-dev libgl-dev libflatbuffers-dev flatbuffers-compiler nlohmann-json3-dev
          libsimdjson-dev libminizip-dev zlib1g-dev libssl-dev
          libgraphviz-dev xvfb xauth
          clang libclang-rt-dev lld unzip  # the sanitizer tree and tools/fuzz.sh: clang, libFuzzer, lld; zip seeds
          python3-venv time)           # the conformance oracle's virtual environment; bench_conformance
# What packaging and its test need (installer/packages.txt, one per line).
mapfile -t extra < "$root/installer/packages.txt"
packages+=("${extra[@]}")

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The oracle's virtual environment: outside the build tree, one per requirements file
# (named by its hash), reused while the requirements are unchanged.
oracle_env() {
  local req="$root/tests/conformance/requirements.txt"
  local hash; hash=$(sha256sum "$req" | cut -c1-16)
  local venv="${LSTUDIO_ORACLE_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lowering-studio/oracle-$hash}"
  if [ ! -f "$venv/.complete" ]; then
    echo "Making the oracle's Python environment in $venv (torch 2.13.0 CPU, executorch 1.5)" >&2
    rm -rf "$venv"
    # torch 2.13.0 CPU is built for Python 3.11: prefer it where several are installed.
    local py; py=$(command -v python3.11 || command -v python3)
    if ! { "$py" -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"; } >&2; then
      echo "conformance: could not make the oracle's environment from $req." >&2
      echo "  It needs python3 (3.11) with venv and pip, and PyPI (torch==2.13.0 CPU and executorch==1.5.1)." >&2
      echo "  Make it by hand with: python3 -m venv $venv && $venv/bin/pip install -r $req && touch $venv/.complete" >&2
      exit 1
    fi
    touch "$venv/.complete"
  fi
  echo "$venv"
}

# Runs a step and says how long it took, so a slow CI run shows where its time went.
timed() {  # timed LABEL COMMAND...
  local label=$1 start=$SECONDS; shift
  "$@"
  echo "time: $label $((SECONDS - start)) s" >&2
}

# ExecuTorch's own Python and runtime against the studio. Two streams that each keep one core
# busy (the oracle and the CLI are single-threaded), run side by side.
conformance_programs() {  # [harness options...]: the corpus, one operator at a time, the fixtures
  local py=$1 conf="$root/tests/conformance" fixtures="${LSTUDIO_FIXTURES:-$root/../shared/fixtures}"; shift
  timed harness "$py" "$conf/harness.py" --work "$root/build/conformance" "$@"
  # to_edge's rules one operator at a time: the studio's file against upstream's, byte for byte.
  timed decompositions "$py" "$conf/decompositions.py" --work "$root/build/decompositions"
  # The studio's interpreter against executorch.runtime on those files (a whole run only).
  if [ $# -eq 0 ]; then
    timed interpreter "$py" "$conf/interpreter.py" --from "$root/build/conformance" \
      --decompositions "$root/build/decompositions" --fixtures "$fixtures/pte" --work "$root/build/interpreter"
  fi
  # Every XNNPACK payload upstream wrote, and the fixtures', decoded by both sides.
  timed payloads "$py" "$conf/payloads.py" --work "$root/build/conformance" "$fixtures/pte"
  # The fixtures' torch.export files through the studio's to_edge, run by ExecuTorch's runtime.
  timed exported "$py" "$conf/exported.py" "$fixtures/pt2"
  # The studio's own samples (bfloat16 included) loaded by torch.export.load and lowered by ExecuTorch.
  timed zoo "$py" "$conf/zoo.py" --work "$root/build/zoo"
  # ETRecords upstream writes with its .pte: the studio's instruction -> module links against its maps.
  timed etrecord "$py" "$conf/etrecord_link.py"
  # Delegates on another device (target_device): copies, device arenas and their fields.
  timed devices "$py" "$conf/devices.py" --work "$root/build/devices"
  # studio_memory_aware_order (beyond ExecuTorch): arenas beside upstream's, files run bit-identical.
  timed memory_order "$py" "$conf/memory_order.py" --work "$root/build/memory_order"
  # XnnpackPartitioner: the studio's partitions against upstream's to_edge_transform_and_lower, node
  # for node, on every corpus program (the models' partitions are in conformance_models).
  timed partition-corpus "$py" "$conf/partition.py" --work "$root/build/partition"
}

conformance_models() {
  local py=$1 conf="$root/tests/conformance"
  # Models as users take them from torchvision, timm, transformers and torchaudio: the CI tier
  # (a fixed list x default and et_greedy, exported and lowered by upstream anew on every run;
  # models_expected.txt lists the rows that do not agree yet). The whole sweep: tools/dev.sh models.
  timed models "$py" "$conf/models.py" --tier ci --work "$root/build/models-ci"
  # Their partitions by XnnpackPartitioner against upstream's to_edge_transform_and_lower: the
  # models above whose upstream partitioning takes seconds (all 45: tools/dev.sh partition-models),
  # and three of them PT2E-quantized, static and dynamic int8.
  timed partition-models "$py" "$conf/partition.py" \
    --work "$root/build/partition-models-ci" --no-corpus --models "$root/build/models-ci" \
    --model-names 'hf_*' 'ta_*' 'tv_*' 'timm_test_*' --quantize static dynamic \
    --quantize-names tv_mobilenet_v3_small timm_test_resnet timm_test_efficientnet
}

# Background steps: `start NAME COMMAND...` runs a command with its output in build/logs/NAME.log;
# `finish NAME` waits for it, prints that log and returns its exit status.
declare -A step_pids
start() {
  local name=$1; shift
  mkdir -p "$root/build/logs"
  "$@" > "$root/build/logs/$name.log" 2>&1 &
  step_pids[$name]=$!
}
finish() {
  local name=$1 rc=0
  wait "${step_pids[$name]}" || rc=$?
  echo "===== $name: $([ $rc -eq 0 ] && echo passed || echo "FAILED (exit $rc)")"
  cat "$root/build/logs/$name.log"
  return $rc
}

# The two conformance streams, started (`finish` each). Never call these in an `||` or `if`:
# bash would then ignore set -e inside them, and a failing step would not stop its stream.
conformance_start() {  # [harness options...]
  local venv; venv=$(oracle_env)
  export LSTUDIO_CLI="$root/build/app/lowering-cli" FLATC; FLATC="$(command -v flatc)"
  start conformance-programs conformance_programs "$venv/bin/python" "$@"
  start conformance-models conformance_models "$venv/bin/python"
}

# The tests with AddressSanitizer and UndefinedBehaviorSanitizer, built by clang with libFuzzer's
# coverage so that the same tree holds the fuzz targets (one build, not two); then every reader
# under libFuzzer for a short while (any finding fails).
sanitized() {
  [ -f build-asan/CMakeCache.txt ] && ! grep -q "^CMAKE_CXX_COMPILER:.*clang" build-asan/CMakeCache.txt &&
    rm -rf build-asan  # a tree gcc configured
  # Line tables are all a sanitizer's report needs, and a fraction of full debug information.
  timed build-asan build build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only -DLSTUDIO_SANITIZE=ON -DLSTUDIO_FUZZ=ON -DLSTUDIO_BUILD_BENCH=OFF
  (cd build-asan && QT_QPA_PLATFORM=offscreen ASAN_OPTIONS=detect_leaks=1 \
     LSAN_OPTIONS="suppressions=$root/tests/lsan.supp" \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 timed ctest-asan ctest --output-on-failure -j2)
  FUZZ_BUILD=build-asan timed fuzz tools/fuzz.sh "${FUZZ_SECONDS:-15}"
}

build() {  # build DIR [cmake options...]
  local dir=$1; shift
  # lld links the tests' and the studio's debug information in a fraction of ld's time.
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld "$@" >/dev/null
  cmake --build "$dir" -j2
}

cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
  build)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLSTUDIO_BUILD_TESTS=ON
    ;;
  run)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    # Without a file, the studio opens the bundled sample.
    [ $# -gt 0 ] || set -- build/samples/mlp.pt2
    if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
      echo "No display found: starting the studio under xvfb-run (invisible)." >&2
      exec xvfb-run -a build/app/lowering-studio "$@"
    fi
    exec build/app/lowering-studio "$@"
    ;;
  test)
    install_missing
    # The release tree: what conformance runs, the benchmarks (built, not run) and the package
    # test; the Qt Test units are built and run once, in the sanitizer tree.
    timed build build build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLSTUDIO_BUILD_TESTS=OFF
    (cd build && QT_QPA_PLATFORM=offscreen timed ctest ctest --output-on-failure -j2)
    # Three streams at once, about a core each: the two conformance streams and the sanitizer tree.
    oracle_env >/dev/null
    start sanitized sanitized
    conformance_start
    status=0
    finish conformance-programs || status=1
    finish conformance-models || status=1
    finish sanitized || status=1
    exit $status
    ;;
  bench-conformance)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    venv=$(oracle_env)
    LSTUDIO_CLI="$root/build/app/lowering-cli" "$venv/bin/python" "$root/bench/bench_conformance.py" "$@"
    ;;
  bench-run)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    venv=$(oracle_env)
    LSTUDIO_CLI="$root/build/app/lowering-cli" "$venv/bin/python" "$root/bench/bench_run.py" "$@"
    ;;
  models)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    venv=$(oracle_env)
    LSTUDIO_CLI="$root/build/app/lowering-cli" FLATC="$(command -v flatc)" \
      "$venv/bin/python" "$root/tests/conformance/models.py" --work "$root/build/models" "$@"
    ;;
  partition-models)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    venv=$(oracle_env)
    # The models' CI tier exported anew, then every one of them (and each PT2E-quantized,
    # static and dynamic) partitioned by upstream and by the studio.
    "$venv/bin/python" "$root/tests/conformance/models.py" --tier ci --export-only --work "$root/build/models-ci" >/dev/null || true
    LSTUDIO_CLI="$root/build/app/lowering-cli" "$venv/bin/python" "$root/tests/conformance/partition.py" \
      --work "$root/build/partition-models" --no-corpus --models "$root/build/models-ci" --quantize static dynamic "$@"
    ;;
  conformance)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    conformance_start "$@"
    status=0
    finish conformance-programs || status=1
    finish conformance-models || status=1
    exit $status
    ;;
  *)
    echo "usage: tools/dev.sh run [FILE] | test | build | conformance [harness options] | bench-conformance [options]" \
      "| bench-run [options] | models [options]" >&2
    exit 2
    ;;
esac
