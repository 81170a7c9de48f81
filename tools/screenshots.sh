#!/usr/bin/env bash
# Remakes the README's screenshots (resources/screenshots/) with this tree's build, offscreen:
# the samples are written and exported by lowering-cli, the real .pte files are the fixtures
# (read in place). Look at every picture before committing it.
#   tools/screenshots.sh            after tools/dev.sh build
# Two pictures need artifacts only ExecuTorch makes (an ETDump of runs, an ETRecord of an
# XNNPACK-delegated program): tools/screenshot_artifacts.py writes them with the oracle's
# Python, $ORACLE_PYTHON (default: the environment tools/dev.sh made); without it those two
# pictures are left as they are.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
studio=$root/build/app/lowering-studio
cli=$root/build/app/lowering-cli
fixtures=${LSTUDIO_FIXTURES:-$root/../shared/fixtures}
out=$root/resources/screenshots
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

shot() {  # shot NAME SIZE FILE [studio options...]
  local name=$1 size=$2 file=$3
  shift 3
  # Started beside the file, which it is given by name: the log in the picture shows no path.
  (cd "$(dirname "$file")" && QT_QPA_PLATFORM=offscreen "$studio" "$(basename "$file")" --size "$size" "$@" \
     --screenshot "$out/$name.png" >/dev/null 2>&1)
  echo "$out/$name.png"
}

"$cli" sample llama -o "$work/llama.pt2" >/dev/null
"$cli" sample llama --layers 2 -o "$work/llama2.pt2" >/dev/null
"$cli" sample llama --layers 4 -o "$work/llama4.pt2" >/dev/null
"$cli" sample llama --layers 32 -o "$work/llama32.pt2" >/dev/null
"$cli" sample llama --layers 32 --attention static -o "$work/static.pt2" >/dev/null
"$cli" sample mobilenet_v2 -o "$work/mv2.pt2" >/dev/null
"$cli" export "$work/mv2.pt2" -o "$work/mv2.pte" >/dev/null
"$cli" export "$work/llama32.pt2" -o "$work/llama.pte" >/dev/null
"$cli" export "$work/static.pt2" -o "$work/static.pte" >/dev/null
echo '{"partitioner": ["xnnpack"]}' >"$work/xnnpack.json"
cat >"$work/tagging.json" <<'EOF'
{"external_constants": [{"min_bytes": 524288, "file": "weights"}, {"name": "*norm*", "file": "norms"}]}
EOF

shot studio-llama-diff 1366x768 "$work/llama.pt2" --run-to ToOutVarPass --compare
shot studio-pte-mv2 1366x768 "$work/mv2.pte"
shot studio-pte-llama 1366x768 "$work/llama.pte"
shot studio-pte-static 1920x1080 "$work/static.pte"
shot studio-pte-graph 1366x768 "$fixtures/pte/arduino_KeywordSpotting_model.pte"
shot studio-memory-plan 1920x1080 "$work/llama4.pt2" --run-to MemoryPlanningPass --view plan
shot studio-constant-tagging 1366x768 "$work/llama4.pt2" --config "$work/tagging.json" --run-to end --dock constants
shot studio-xnnpack-partition 1366x768 "$work/llama2.pt2" --config "$work/xnnpack.json" --run-to XnnpackPartitioner --select mm
shot studio-xnnpack-to-backend 1366x768 "$work/llama2.pt2" --config "$work/xnnpack.json" --run-to to_backend \
  --select executorch_call_delegate_6
shot studio-pte-delowered 1920x1080 "$fixtures/pte/dnf.pte" --run-to DelowerPtePass

python=${ORACLE_PYTHON:-$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/lowering-studio/oracle-*/bin/python 2>/dev/null | head -1)}
if [ -n "$python" ] && "$python" "$root/tools/screenshot_artifacts.py" "$work" "$work/mv2.pte" >/dev/null 2>&1; then
  shot studio-delegate 1366x768 "$work/conv_etrecord.bin" --select getitem
  shot studio-etdump 1366x768 "$work/mv2.pte" --etdump "$work/mv2.etdp" --debug-buffer "$work/mv2.bin"
else
  echo "studio-delegate.png and studio-etdump.png left as they are (no oracle environment, or it failed)" >&2
fi
