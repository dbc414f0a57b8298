#!/usr/bin/env bash
# Local object-store emulators for the transfer tests, bound to 127.0.0.1 only.
#
#   scripts/xfer-services.sh start s3|azure DIR   start npm s3rver (S3) or azurite (blob service only) on a free
#                                                 loopback port with its data in DIR/data; waits until it answers and
#                                                 prints the endpoint: http://127.0.0.1:PORT (s3) or
#                                                 http://127.0.0.1:PORT/devstoreaccount1 (azure)
#   scripts/xfer-services.sh stop DIR             stop the service started in DIR
#
# azurite runs with --disableTelemetry (it would otherwise try to report to Microsoft).
# The npm packages come from scripts/install-deps.sh (into .deps/npm; $MLSYS_NPM_PREFIX overrides the folder).
# Exit status 77 means "cannot run here" (no node, or the package is not installed): tests report it as a skip.
# With $MLSYS_SERVICE_OWNER set to a process id, a watchdog stops the service when that process exits, so a test
# that crashes does not leave an emulator running.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${MLSYS_NPM_PREFIX:-$here/.deps/npm}

die() { echo "xfer-services: $*" >&2; exit 1; }
skip() { echo "xfer-services: $*" >&2; exit 77; }

free_port() {
  # the kernel picks an unused port; a race with another process binding it in between is possible but rare
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();})'
}

answers() {   # any HTTP answer at all (even 400/403) means the server is up
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null)
  [ -n "$code" ] && [ "$code" != 000 ]
}

start() {
  local kind=$1 dir=$2 bin port log ep pid i
  command -v node >/dev/null 2>&1 || skip "node is not installed (Debian: nodejs)"
  command -v curl >/dev/null 2>&1 || skip "curl is not installed"
  case $kind in
    s3) bin=$prefix/node_modules/s3rver/bin/s3rver.js ;;
    azure) bin=$prefix/node_modules/azurite/dist/src/blob/main.js ;;
    *) die "unknown service '$kind' (s3 or azure)" ;;
  esac
  [ -f "$bin" ] || skip "$kind emulator not installed at $bin (run scripts/install-deps.sh)"
  mkdir -p "$dir/data" || die "cannot create $dir/data"
  [ -f "$dir/service.pid" ] && kill -0 "$(cat "$dir/service.pid")" 2>/dev/null && die "a service already runs in $dir"
  log=$dir/service.log
  for attempt in 1 2 3; do
    port=$(free_port) || die "cannot find a free port"
    if [ "$kind" = s3 ]; then
      # s3rver encrypts continuation tokens with DES, which OpenSSL 3 only offers through its legacy provider
      node --openssl-legacy-provider "$bin" --address 127.0.0.1 --port "$port" --directory "$dir/data" --silent >"$log" 2>&1 &
      ep=http://127.0.0.1:$port
    else
      node "$bin" --blobHost 127.0.0.1 --blobPort "$port" --location "$dir/data" --skipApiVersionCheck --disableTelemetry \
        --disableProductStyleUrl --silent >"$log" 2>&1 &
      ep=http://127.0.0.1:$port/devstoreaccount1
    fi
    pid=$!
    echo "$pid" >"$dir/service.pid"
    for i in $(seq 1 100); do
      if answers "http://127.0.0.1:$port/"; then
        if [ -n "${MLSYS_SERVICE_OWNER:-}" ]; then
          ( trap '' HUP; while kill -0 "$MLSYS_SERVICE_OWNER" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
            kill "$pid" 2>/dev/null ) </dev/null >/dev/null 2>&1 &
        fi
        echo "$ep"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    rm -f "$dir/service.pid"
  done
  die "$kind emulator did not start; its log ($log):
$(tail -n 20 "$log" 2>/dev/null)"
}

stop() {
  local dir=$1 pid i
  [ -f "$dir/service.pid" ] || return 0
  pid=$(cat "$dir/service.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$dir/service.pid"
}

case ${1:-} in
  start) [ $# -eq 3 ] || die "usage: $0 start s3|azure DIR"; start "$2" "$3" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  *) die "usage: $0 start s3|azure DIR | stop DIR" ;;
esac
