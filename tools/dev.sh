#!/usr/bin/env bash
# Sets up a Debian 12 machine for Lowering Studio, builds it, and runs it or its tests.
#   tools/dev.sh run [FILE]  install what is missing, build, start the studio (on the bundled
#                            sample build/samples/mlp.pt2 unless FILE is given)
#   tools/dev.sh test        install what is missing, build, run every test, then
#                            build again with AddressSanitizer + UBSan and run them there,
#                            then run each libFuzzer target briefly (FUZZ_SECONDS, default 45)
#   tools/dev.sh build       install what is missing and build only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# Debian packages the build, the tests and the studio need.
packages=(build-essential cmake ninja-build pkg-config
          qt6-base-dev libgl-dev libflatbuffers-dev flatbuffers-compiler nlohmann-json3-dev
          libsimdjson-dev libminizip-dev zlib1g-dev
          libgraphviz-dev xvfb xauth
          clang libclang-rt-dev unzip)  # tools/fuzz.sh: clang + libFuzzer runtime, zip seeds
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

build() {  # build DIR [cmake options...]
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j2
}

cmd=${1:-run}
[ $# -gt 0 ] && shift
case "$cmd" in
  build)
    install_missing
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
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
    build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    (cd build && QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j2)
    # The same tests with AddressSanitizer and UndefinedBehaviorSanitizer.
    build build-asan -DCMAKE_BUILD_TYPE=Debug -DLSTUDIO_SANITIZE=ON
    (cd build-asan && QT_QPA_PLATFORM=offscreen ASAN_OPTIONS=detect_leaks=1 \
       LSAN_OPTIONS="suppressions=$(pwd)/../tests/lsan.supp" \
       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j2)
    # Every reader under libFuzzer for a short while; any finding fails the run.
    tools/fuzz.sh "${FUZZ_SECONDS:-45}"
    ;;
  *)
    echo "usage: tools/dev.sh run [FILE] | test | build" >&2
    exit 2
    ;;
esac
