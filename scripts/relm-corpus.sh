#!/usr/bin/env bash
# scripts/relm-corpus.sh [OUTDIR] — a deterministic English corpus from pinned Debian 12 packages, for training
# ReLM's GPT-2 in C (docs/relm.md §6.1, issue 24 item 3). Default OUTDIR: build/relm-corpus.
#
# The packages (PKGS below, pinned versions) are fetched with `apt-get download PKG=VERSION` into OUTDIR/debs (a .deb
# already there is reused) and unpacked with `dpkg-deb -x` into OUTDIR/root. The documents, each a file of English
# no one here wrote:
#   - the licences of /usr/share/common-licenses (base-files), regular files only (GPL → GPL-3 etc. are links);
#   - every package's /usr/share/doc/PKG/copyright;
#   - the fortune data files (fortunes, fortunes-min: %-separated text, kept as they are; not the .dat indexes);
#   - the Linux man pages of sections 1, 4, 5 and 7 (manpages), rendered to plain text with groff (settings pinned
#     below; pages that are only a `.so` redirect are skipped, and so are the character set tables iso_8859-*,
#     koi8-*, cp125*, armscii-8);
#   - the plain-text Debian Policy Manual and Developer's Reference (debian-policy, developers-reference).
# Documents are taken in sorted order (C locale) of their path inside the package root. A document is held out when
# the first byte of the sha256 of that path is below 20 (about 7.8 %), so no document is in both parts. train.txt and
# val.txt are the documents of each part concatenated in that order, each ending in a newline and followed by one
# empty line; train.files and val.files list their paths. The script prints the sizes and sha256 of both files and
# compares them with the sums recorded here: a different sum means another Debian point release (or groff) and a
# different corpus, and the script says so (exit 3) — training on it still works, but the recorded checkpoint sum of
# scripts/relm-train-model.sh will not match.
set -euo pipefail
export LC_ALL=C.UTF-8 TZ=UTC

OUT=${1:-build/relm-corpus}
PKGS=(
  "base-files=12.4+deb12u15"
  "debian-policy=4.6.2.0"
  "developers-reference=12.18"
  "fortunes=1:1.99.1-7.3"
  "fortunes-min=1:1.99.1-7.3"
  "manpages=6.03-2"
)
GROFF_VERSION="1.22.4"
# recorded on Debian 12.11 with groff 1.22.4 (2026-11-29)
EXPECT_TRAIN_SHA="e6d9a508354a5ce81a430f5e474b61d499575a871573ea1ada4f88258e3cda98"
EXPECT_VAL_SHA="0cba4c6ccb885001c13fe6542e4b6dde9855b9f96ced4f23e54097007f902b15"

for tool in apt-get dpkg-deb groff sha256sum zcat; do
  command -v "$tool" >/dev/null || { echo "relm-corpus: '$tool' is needed (Debian: apt-get install groff-base dpkg apt)" >&2; exit 1; }
done
gv=$(groff --version 2>/dev/null | head -1 | awk '{print $NF}')
[ "$gv" = "$GROFF_VERSION" ] || echo "relm-corpus: note: groff $gv, the recorded corpus was rendered with $GROFF_VERSION (man pages may differ)" >&2

mkdir -p "$OUT/debs"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/root"
mkdir -p "$OUT/root"

# fetch and unpack
for spec in "${PKGS[@]}"; do
  name=${spec%%=*}
  ver=${spec#*=}
  # `|| true`: no .deb yet (ls fails) or a non-matching last one is not an error under pipefail
  deb=$(ls "$OUT/debs/${name}_"*.deb 2>/dev/null | while read -r f; do
          [ "$(dpkg-deb -f "$f" Package)" = "$name" ] && [ "$(dpkg-deb -f "$f" Version)" = "$ver" ] && echo "$f"; done | head -1) || true
  if [ -z "$deb" ]; then
    (cd "$OUT/debs" && apt-get download "$spec" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
    deb=$(ls "$OUT/debs/${name}_"*.deb 2>/dev/null | while read -r f; do
            [ "$(dpkg-deb -f "$f" Package)" = "$name" ] && [ "$(dpkg-deb -f "$f" Version)" = "$ver" ] && echo "$f"; done | head -1) || true
    if [ -z "$deb" ]; then
      echo "relm-corpus: cannot fetch $spec (apt-get download failed: no network, or this version left the mirror after a" >&2
      echo "  point release; put the .deb in $OUT/debs, or edit PKGS to the current version: the corpus will then differ)" >&2
      exit 1
    fi
  fi
  dpkg-deb -x "$deb" "$OUT/root"
  echo "relm-corpus: $name $ver  $(sha256sum "$deb" | cut -c1-16)…  $(basename "$deb")" >&2
done

# the documents, in sorted order of their path in the package root
R="$OUT/root"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
{
  find "$R/usr/share/common-licenses" -type f
  find "$R/usr/share/doc" -name copyright -type f
  find "$R/usr/share/games/fortunes" -type f ! -name '*.dat'
  find "$R/usr/share/man/man1" "$R/usr/share/man/man4" "$R/usr/share/man/man5" "$R/usr/share/man/man7" -type f -name '*.gz'
  find "$R/usr/share/doc/debian-policy" -maxdepth 1 -type f -name 'policy.txt.gz'
  find "$R/usr/share/developers-reference" -maxdepth 1 -type f -name 'developers-reference.txt.gz'
} | sed "s|^$R/||" | sort >"$list"

ndocs=0
: >"$OUT/train.files"
: >"$OUT/val.files"
: >"$OUT/train.txt"
: >"$OUT/val.txt"
while read -r rel; do
  src="$R/$rel"
  case "$rel" in
    usr/share/man/man7/iso_8859-*|usr/share/man/man7/koi8-*|usr/share/man/man7/cp125*|usr/share/man/man7/armscii-8*)
      continue ;;   # character set tables, not prose
    usr/share/man/*)
      # a page that only redirects to another (.so) has no text of its own
      if zcat "$src" | grep -v '^\.\\"' | grep -v '^[[:space:]]*$' | head -1 | grep -q '^\.so '; then continue; fi
      # plain UTF-8 text, 78 columns, no SGR/overstrike (-P-cbou), tables through tbl, left-adjusted (.ad l) and
      # without hyphenation (-rHY=0) so words stay whole and spaces single, warnings off
      doc=$({ printf '.ad l\n'; zcat "$src"; } | groff -t -man -Tutf8 -P-cbou -rLL=78n -rLT=78n -rHY=0 -ww 2>/dev/null) || { echo "relm-corpus: groff failed on $rel" >&2; exit 1; }
      ;;
    *.gz) doc=$(zcat "$src") ;;
    *) doc=$(cat "$src") ;;
  esac
  [ -n "$doc" ] || continue
  h=$(printf %s "$rel" | sha256sum | cut -c1-2)
  if [ $((16#$h)) -lt 20 ]; then part=val; else part=train; fi
  # $(...) drops trailing newlines: every document ends in exactly one, then one empty line
  printf '%s\n\n' "$doc" >>"$OUT/$part.txt"
  echo "$rel" >>"$OUT/$part.files"
  ndocs=$((ndocs + 1))
done <"$list"

ts=$(sha256sum "$OUT/train.txt" | cut -d' ' -f1)
vs=$(sha256sum "$OUT/val.txt" | cut -d' ' -f1)
printf 'relm-corpus: %d documents: train %d (%d bytes), held out %d (%d bytes)\n' "$ndocs" "$(wc -l <"$OUT/train.files")" \
  "$(stat -c %s "$OUT/train.txt")" "$(wc -l <"$OUT/val.files")" "$(stat -c %s "$OUT/val.txt")"
echo "$ts  $OUT/train.txt"
echo "$vs  $OUT/val.txt"
if [ -z "$EXPECT_TRAIN_SHA" ]; then
  echo "relm-corpus: no sums recorded in the script yet" >&2
elif [ "$ts" = "$EXPECT_TRAIN_SHA" ] && [ "$vs" = "$EXPECT_VAL_SHA" ]; then
  echo "relm-corpus: corpus identical to the recorded one"
else
  echo "relm-corpus: THE CORPUS DIFFERS from the recorded one (train $EXPECT_TRAIN_SHA, val $EXPECT_VAL_SHA):" >&2
  echo "  another Debian point release or groff version; a model trained on it will not match the recorded checkpoint" >&2
  exit 3
fi
