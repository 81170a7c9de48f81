#!/usr/bin/env bash
# Builds the packages in a build directory and checks what the .deb would install.
#
#   installer/test-package.sh BUILD_DIR PROJECT_VERSION [gui|nogui]
#
# Run by CTest as the test "package". Builds the "package" target, unpacks the .deb with
# dpkg-deb -x into a temporary root (nothing is installed on the machine), and checks the
# control fields, the executables, the desktop entry, the MIME types, the icons, the manual
# page and the .tar.gz. Exit status 0 when every check passes, 1 otherwise.
# The tools it needs are in installer/packages.txt.
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR PROJECT_VERSION [gui|nogui]" >&2
  exit 2
fi
build=$(cd "$1" 2>/dev/null && pwd) || { echo "package: no build directory $1" >&2; exit 1; }
version=$2
gui=${3:-gui}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cmake=${CMAKE:-cmake}
fixture="$root/../shared/fixtures/pte/add.pte"
export LC_ALL=C.UTF-8 QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}

passed=0
failed=0
pass() { echo "ok   - $*"; passed=$((passed + 1)); }
fail() { echo "FAIL - $*"; failed=$((failed + 1)); }
skip() { echo "skip - $*"; }
finish() {
  echo "package: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
abort() { fail "$*"; finish; exit 1; }
indent() { sed 's/^/       /'; }

# --- tools -----------------------------------------------------------------------------------
missing=()
for t in dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev desktop-file-validate:desktop-file-utils \
         xmllint:libxml2-utils man:man-db groff:groff-base lexgrog:man-db \
         update-mime-database:shared-mime-info mimetype:libfile-mimeinfo-perl \
         rsvg-convert:librsvg2-bin tar:tar ldd:libc-bin; do
  command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t%%:*} (Debian package ${t#*:})")
done
if [ ${#missing[@]} -gt 0 ]; then
  abort "missing tools: ${missing[*]}; install the packages in installer/packages.txt"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lstudio-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- build the packages ----------------------------------------------------------------------
pkgdir="$build/packages"
rm -f "$pkgdir"/lowering-studio[-_]*.deb "$pkgdir"/lowering-studio[-_]*.tar.gz "$pkgdir"/lowering-studio[-_]*.sha256
if ! "$cmake" --build "$build" --target package >"$tmp/package.log" 2>&1; then
  tail -n 30 "$tmp/package.log" | indent
  abort "cmake --build $build --target package failed (output above)"
fi
shopt -s nullglob
debs=("$pkgdir"/lowering-studio_*.deb)
tgzs=("$pkgdir"/lowering-studio-*.tar.gz)
shopt -u nullglob
if [ ${#debs[@]} -ne 1 ] || [ ${#tgzs[@]} -ne 1 ]; then
  ls -l "$pkgdir" 2>&1 | indent
  abort "expected one .deb and one .tar.gz in $pkgdir, found ${#debs[@]} and ${#tgzs[@]}"
fi
deb=${debs[0]}
tgz=${tgzs[0]}
pass "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) and $(basename "$tgz") ($(du -k "$tgz" | cut -f1) KiB)"

# --- control fields --------------------------------------------------------------------------
pkg_version=$(dpkg-deb -f "$deb" Version)
case "$pkg_version" in
  "$version" | "$version"+*) pass "package version $pkg_version is project version $version" ;;
  *) fail "package version $pkg_version does not start with the project version $version" ;;
esac
depends=$(dpkg-deb -f "$deb" Depends)
if [[ "$depends" == *libc6* ]] && { [ "$gui" != gui ] || [[ "$depends" == *libqt6widgets6* ]]; }; then
  pass "Depends computed by dpkg-shlibdeps: $depends"
else
  fail "Depends lacks libc6 or libqt6widgets6 (dpkg-shlibdeps not run?): '$depends'"
fi

# --- unpack ----------------------------------------------------------------------------------
pkgroot="$tmp/root"
if ! dpkg-deb -x "$deb" "$pkgroot"; then
  abort "dpkg-deb -x $(basename "$deb") failed"
fi
usr="$pkgroot/usr"
expected=(bin/lowering-cli share/man/man1/lowering-cli.1.gz share/doc/lowering-studio/README.md
          share/doc/lowering-studio/tests/conformance/README.md share/doc/lowering-studio/bench/README.md
          share/doc/lowering-studio/resources/screenshots/studio-llama-diff.png)
if [ "$gui" = gui ]; then
  expected+=(bin/lowering-studio share/applications/lowering-studio.desktop
             share/mime/packages/lowering-studio.xml share/icons/hicolor/scalable/apps/lowering-studio.svg)
  for s in 16 22 24 32 48 64 128 256; do expected+=("share/icons/hicolor/${s}x${s}/apps/lowering-studio.png"); done
fi
absent=()
for f in "${expected[@]}"; do [ -f "$usr/$f" ] || absent+=("/usr/$f"); done
if [ ${#absent[@]} -eq 0 ]; then
  pass "the .deb holds all ${#expected[@]} expected files under /usr"
else
  fail "missing from the .deb: ${absent[*]}"
fi

# --- executables -----------------------------------------------------------------------------
cli="$usr/bin/lowering-cli"
studio="$usr/bin/lowering-studio"
unresolved=$(for b in "$cli" "$studio"; do [ -f "$b" ] && ldd "$b" | grep 'not found'; done)
if [ -z "$unresolved" ]; then
  pass "every shared library the executables need is on this machine"
else
  fail "unresolved shared libraries:"; echo "$unresolved" | indent
fi
if [ -x "$cli" ]; then
  out=$("$cli" --version 2>&1)
  if [ "$out" = "lowering-cli $version" ]; then
    pass "lowering-cli --version: $out"
  else
    fail "lowering-cli --version printed '$out', expected 'lowering-cli $version'"
  fi
  if [ -f "$fixture" ]; then
    if "$cli" inspect "$fixture" >"$tmp/inspect.txt" 2>&1 && grep -q 'identifier ET12' "$tmp/inspect.txt"; then
      pass "lowering-cli inspect $(basename "$fixture") ($(wc -l <"$tmp/inspect.txt") lines)"
    else
      fail "lowering-cli inspect $fixture:"; head -n 20 "$tmp/inspect.txt" | indent
    fi
  else
    skip "lowering-cli inspect: no fixture at $fixture (the folder ../shared/fixtures beside the repository)"
  fi
  # The exit codes the manual page documents.
  "$cli" >/dev/null 2>&1; rc_usage=$?
  "$cli" inspect "$usr/share/man/man1/lowering-cli.1.gz" >/dev/null 2>&1; rc_bad=$?
  if [ "$rc_usage" -eq 2 ] && [ "$rc_bad" -eq 3 ]; then
    pass "exit codes: 2 without a command, 3 for a file that is not a program"
  else
    fail "exit codes: $rc_usage without a command (expected 2), $rc_bad for a bad file (expected 3)"
  fi
fi
if [ "$gui" = gui ] && [ -x "$studio" ]; then
  out=$("$studio" --version 2>/dev/null)
  if [ "$out" = "Lowering Studio $version" ]; then
    pass "lowering-studio --version: $out"
  else
    fail "lowering-studio --version printed '$out', expected 'Lowering Studio $version'"
  fi
fi

# --- desktop entry, MIME types, icons --------------------------------------------------------
if [ "$gui" = gui ]; then
  desktop="$usr/share/applications/lowering-studio.desktop"
  mimexml="$usr/share/mime/packages/lowering-studio.xml"
  if [ -f "$desktop" ]; then
    if out=$(desktop-file-validate "$desktop" 2>&1) && [ -z "$out" ]; then
      pass "desktop-file-validate lowering-studio.desktop"
    else
      fail "desktop-file-validate lowering-studio.desktop:"; echo "$out" | indent
    fi
    exec_bin=$(sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$desktop")
    icon=$(sed -n 's/^Icon=//p' "$desktop")
    if [ -x "$usr/bin/$exec_bin" ] && grep -q '^Exec=.* %f$' "$desktop" \
       && [ -f "$usr/share/icons/hicolor/scalable/apps/$icon.svg" ]; then
      pass "desktop entry: Exec=$exec_bin %f and Icon=$icon are in the package"
    else
      fail "desktop entry: Exec '$exec_bin' (with %f) or Icon '$icon' not in the package"
    fi
  fi
  if [ -f "$mimexml" ]; then
    if out=$(xmllint --noout "$mimexml" 2>&1); then
      pass "xmllint lowering-studio.xml"
    else
      fail "xmllint lowering-studio.xml:"; echo "$out" | indent
    fi
    # Every type the desktop entry claims is defined.
    undefined=()
    for t in $(sed -n 's/^MimeType=//p' "$desktop" | tr ';' ' '); do
      grep -q "<mime-type type=\"$t\">" "$mimexml" || undefined+=("$t")
    done
    if [ ${#undefined[@]} -eq 0 ]; then
      pass "the MIME types of the desktop entry are all defined"
    else
      fail "MimeType entries without a definition: ${undefined[*]}"
    fi
    # Compile the package's MIME database in the temporary root, as the shared-mime-info
    # trigger does after installation, and classify files by name and by content.
    if out=$(XDG_DATA_DIRS="$usr/share:/usr/share" update-mime-database "$usr/share/mime" 2>&1) && [ -z "$out" ]; then
      pass "update-mime-database accepts lowering-studio.xml"
    else
      fail "update-mime-database:"; echo "$out" | indent
    fi
    mkdir -p "$tmp/home" "$tmp/samples"
    printf '\034\000\000\000ET12\000\000\000\000\020\000\030\000' >"$tmp/samples/program"
    printf '\104\000\000\000FT01FH01\050\000\000\000' >"$tmp/samples/data"
    : >"$tmp/samples/model.pte"
    : >"$tmp/samples/weights.ptd"
    : >"$tmp/samples/model.pt2"
    checks=("program application/x-executorch-program" "data application/x-executorch-data"
            "model.pte application/x-executorch-program" "weights.ptd application/x-executorch-data"
            "model.pt2 application/x-pytorch-export")
    wrong=()
    for c in "${checks[@]}"; do
      f=${c%% *}; want=${c#* }
      got=$(XDG_DATA_HOME="$tmp/home" XDG_DATA_DIRS="$usr/share:/usr/share" mimetype --brief "$tmp/samples/$f" 2>&1)
      [ "$got" = "$want" ] || wrong+=("$f: $got, expected $want")
    done
    if [ ${#wrong[@]} -eq 0 ]; then
      pass "MIME types: .pte/.ptd/.pt2 by name, programs and data files by their magic at byte 4"
    else
      fail "MIME types: ${wrong[*]}"
    fi
  fi
  bad=()
  for s in 16 22 24 32 48 64 128 256; do
    png="$usr/share/icons/hicolor/${s}x${s}/apps/lowering-studio.png"
    [ -f "$png" ] || continue
    # PNG signature, then IHDR: width and height as 32-bit big-endian at bytes 16 and 20.
    sig=$(od -An -tx1 -N8 "$png" | tr -d ' \n')
    read -r w h < <(od -An -tu1 -j16 -N8 "$png" | awk '{print $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}')
    [ "$sig" = 89504e470d0a1a0a ] && [ "$w" = "$s" ] && [ "$h" = "$s" ] || bad+=("${s}x${s}: ${w}x${h}")
  done
  svg="$usr/share/icons/hicolor/scalable/apps/lowering-studio.svg"
  if [ ${#bad[@]} -eq 0 ] && [ -f "$svg" ] && xmllint --noout "$svg" 2>/dev/null; then
    pass "icons: scalable SVG and PNGs 16..256 of their nominal size"
  else
    fail "icons: bad PNG sizes (${bad[*]:-none}) or an invalid SVG"
  fi
fi

# --- manual page -----------------------------------------------------------------------------
man1="$usr/share/man/man1/lowering-cli.1.gz"
if [ -f "$man1" ]; then
  MANWIDTH=80 man --warnings=all -l "$man1" >"$tmp/man.txt" 2>"$tmp/man.err"
  rc=$?
  zcat "$man1" | groff -man -Tutf8 -ww -z >>"$tmp/man.err" 2>&1
  if [ $rc -eq 0 ] && [ ! -s "$tmp/man.err" ] && grep -q 'LOWERING-CLI(1)' "$tmp/man.txt"; then
    pass "man -l lowering-cli.1.gz renders without warnings ($(wc -l <"$tmp/man.txt") lines)"
  else
    fail "man -l lowering-cli.1.gz (exit $rc):"; indent <"$tmp/man.err"
  fi
  if lexgrog "$man1" >/dev/null 2>&1; then
    pass "lexgrog finds the NAME line (whatis, apropos)"
  else
    fail "lexgrog cannot parse the NAME section of lowering-cli.1"
  fi
  # The manual page covers every command, option and option value the usage text names:
  # commands are the words that start a line indented by two spaces, options the words
  # starting with - after a blank or [, values the words of a|b|c lists.
  if [ -x "$cli" ]; then
    "$cli" --help >"$tmp/help.txt"
    commands=$(sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' "$tmp/help.txt")
    words=$( { grep -oE -- '(^|[[:space:][])--?[a-z][a-z-]*' "$tmp/help.txt" | tr -d ' [\t'
               grep -oE -- '[a-z][a-z-]*(\|[a-z][a-z-]*)+' "$tmp/help.txt" | tr '|' '\n'
             } | sort -u)
    undocumented=()
    for c in $commands; do   # a command heads a paragraph of its own
      grep -qE -- "^ +$c( |\$)" "$tmp/man.txt" || undocumented+=("$c")
    done
    for w in $words; do
      grep -qF -- "$w" "$tmp/man.txt" || undocumented+=("$w")
    done
    if ! grep -q '0 ok, 2 usage error, 3 ' "$tmp/help.txt"; then
      undocumented+=("(the exit codes of --help changed)")
    fi
    if [ ${#undocumented[@]} -eq 0 ]; then
      pass "the manual page names all $(echo $commands $words | wc -w) commands, options and values of lowering-cli --help"
    else
      fail "lowering-cli --help names what the manual page lacks: ${undocumented[*]}"
    fi
  fi
fi

# --- the .tar.gz holds the same files --------------------------------------------------------
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./usr/||' | sort >"$tmp/deb.list"
tar -tzf "$tgz" | grep -v '/$' | cut -d/ -f2- | sort >"$tmp/tgz.list"
if cmp -s "$tmp/deb.list" "$tmp/tgz.list"; then
  pass "$(basename "$tgz") holds the same $(wc -l <"$tmp/deb.list") files"
else
  fail "the .tar.gz and the .deb differ:"; diff "$tmp/deb.list" "$tmp/tgz.list" | indent
fi

finish
