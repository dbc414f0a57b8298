#!/usr/bin/env bash
# scripts/xfer-netns.sh — an emulated WAN of Linux network namespaces for mlsys_transfer.h (Skyplane) tests.
#
#   xfer-netns.sh check                         exit 0 when namespaces + veth + tc tbf work here; prints what
#                                               works ("netns ok", "tbf ok", "netem ok|missing: why"); else exit 1
#                                               with the reason on stderr (no root / no CAP_NET_ADMIN / no ip)
#   xfer-netns.sh up SPEC [PREFIX] [--owner PID] [--ignore-delay]
#                                               builds it; prints the address table (below); PREFIX defaults to
#                                               "xn<pid>"; --owner PID: a watcher tears it all down when PID exits
#                                               (a test that crashes leaves nothing behind); --ignore-delay: a
#                                               kernel without sch_netem shapes the rates and drops the delays
#                                               instead of failing
#   xfer-netns.sh down PREFIX                   removes everything `up PREFIX` made; idempotent; ends the
#                                               processes still inside those namespaces (by pid)
#   xfer-netns.sh addr PREFIX A B               the address of node B on its link with A
#   xfer-netns.sh exec PREFIX NODE CMD...       runs CMD inside node NODE (ip netns exec PREFIX-NODE CMD...)
#
# SPEC (text; '#' starts a comment; blank lines ignored):
#   subnet 10.77                   optional: /30 link subnets come from 10.77.0.0/16 (10.N or 192.168)
#   node NAME                      optional: nodes are also created by the links that name them
#   link A B [rate=MBIT] [delay=MS] [loss=PCT] [queue=MS]
#                                  the DIRECTED link A→B: rate in Mbit/s (0 or absent: unshaped), one-way delay in
#                                  ms, random loss in percent (netem), queue = bottleneck buffer in ms of the rate
#                                  (default max(20, delay)). If only A→B is given, B→A (the ACK path) gets the
#                                  same delay and no rate limit. NAME: [A-Za-z0-9_]{1,12}.
#
# Each node is a namespace PREFIX-NAME. Each unordered pair that has a link in either direction gets one veth pair
# (a /30: pair k in SPEC order is SUBNET.(k/64).(4(k%64)): the first-named node .+1, the other .+2); the end inside
# A is called to-B. A→B is shaped on A's end, B→A on B's end, so the two directions are independent:
#   delay > 0:  root netem (delay, loss, limit = packets in flight + queue) → child tbf (rate, burst, limit)
#   delay = 0:  root tbf (rate, burst, limit)
# tbf burst = max(32 KiB, 4 ms of the rate) (CONFIG_HZ=250 kernels release tokens in ~4 ms steps; a smaller burst
# caps TCP below the rate), tbf limit = burst + queue ms of the rate. There is no IP forwarding: traffic between
# nodes without a link does not flow, as in Skyplane, where relays forward at the application level.
#
# `up` prints one line per node and per link end:
#   prefix PREFIX
#   node NAME NAMESPACE
#   addr A B ADDR_OF_A ADDR_OF_B    (the A–B link: A's end, B's end; also printed as "addr B A ...")
#   link A B RATE DELAY LOSS        (directed, as shaped)
set -euo pipefail

STATE_ROOT=${XFER_NETNS_STATE:-/run/mlsys-xfer-netns}
SELF=$(readlink -f "$0")

die() { echo "xfer-netns: $*" >&2; exit 1; }

valid_name() { [[ "$1" =~ ^[A-Za-z0-9_]{1,12}$ ]]; }
valid_prefix() { [[ "$1" =~ ^[A-Za-z0-9_]{1,16}$ ]]; }

# ---------------------------------------------------------------------------------------------------------- check
have_netem() {   # $1 = namespace with an interface "$2"; prints nothing, status only
  tc -n "$1" qdisc add dev "$2" root handle 1: netem delay 1ms 2>/dev/null
}

cmd_check() {
  command -v ip >/dev/null || die "the 'ip' command (iproute2) is not installed"
  command -v tc >/dev/null || die "the 'tc' command (iproute2) is not installed"
  local p="xchk$$" why="" err
  if ! err=$(ip netns add "$p-a" 2>&1); then
    die "cannot create a network namespace (needs root: CAP_SYS_ADMIN + CAP_NET_ADMIN): $err"
  fi
  if ! err=$(ip netns add "$p-b" 2>&1); then
    why="cannot create a second network namespace: $err"
  elif ! err=$(ip link add name v0 netns "$p-a" type veth peer name v1 netns "$p-b" 2>&1); then
    why="cannot create a veth pair (needs CAP_NET_ADMIN and CONFIG_VETH): $err"
  elif ! err=$(tc -n "$p-a" qdisc add dev v0 root tbf rate 100mbit burst 32kb limit 64kb 2>&1); then
    why="tc cannot add a tbf qdisc (needs CONFIG_NET_SCH_TBF): $err"
  fi
  local netem="missing: the kernel has no sch_netem (CONFIG_NET_SCH_NETEM): rates only, no delay"
  if [ -z "$why" ]; then
    tc -n "$p-a" qdisc del dev v0 root 2>/dev/null || true
    have_netem "$p-a" v0 && netem="ok"
  fi
  ip netns del "$p-a" 2>/dev/null || true
  ip netns del "$p-b" 2>/dev/null || true
  [ -z "$why" ] || die "$why"
  echo "netns ok"
  echo "veth ok"
  echo "tbf ok"
  echo "netem $netem"
}

# ------------------------------------------------------------------------------------------------------------ up
# Globals filled by parse_spec.
SUBNET=10.77
NODES=()                       # in order of first appearance
declare -A NODE_SEEN=()
PAIRS=()                       # "A B" unordered, A first-named
declare -A PAIR_INDEX=()       # "A B" and "B A" → k
declare -A LINK=()             # "A B" directed → "rate delay loss queue"

add_node() {
  valid_name "$1" || die "$SPEC_FILE:$LINENO_SPEC: node name '$1' must match [A-Za-z0-9_]{1,12}"
  if [ -z "${NODE_SEEN[$1]:-}" ]; then NODE_SEEN[$1]=1; NODES+=("$1"); fi
}

num_ok() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?$ ]]; }

parse_spec() {
  local f=$1 line key a b kv k v rate delay loss queue
  SPEC_FILE=$f
  LINENO_SPEC=0
  [ -r "$f" ] || die "cannot read SPEC '$f'"
  while IFS= read -r line || [ -n "$line" ]; do
    LINENO_SPEC=$((LINENO_SPEC + 1))
    line=${line%%#*}
    read -r -a w <<<"$line" || true
    [ ${#w[@]} -eq 0 ] && continue
    key=${w[0]}
    case "$key" in
      subnet)
        [ ${#w[@]} -eq 2 ] || die "$f:$LINENO_SPEC: usage: subnet 10.N | 192.168"
        [[ "${w[1]}" =~ ^10\.([0-9]{1,3})$ && ${BASH_REMATCH[1]} -le 255 ]] || [ "${w[1]}" = 192.168 ] ||
          die "$f:$LINENO_SPEC: subnet '${w[1]}' must be 10.N or 192.168 (a private /16)"
        SUBNET=${w[1]} ;;
      node)
        [ ${#w[@]} -eq 2 ] || die "$f:$LINENO_SPEC: usage: node NAME"
        add_node "${w[1]}" ;;
      link)
        [ ${#w[@]} -ge 3 ] || die "$f:$LINENO_SPEC: usage: link A B [rate=MBIT] [delay=MS] [loss=PCT] [queue=MS]"
        a=${w[1]}; b=${w[2]}
        [ "$a" != "$b" ] || die "$f:$LINENO_SPEC: a link from '$a' to itself"
        add_node "$a"; add_node "$b"
        rate=0; delay=0; loss=0; queue=""
        for kv in "${w[@]:3}"; do
          k=${kv%%=*}; v=${kv#*=}
          [ "$k" != "$kv" ] && num_ok "$v" || die "$f:$LINENO_SPEC: '$kv' is not KEY=NUMBER"
          case "$k" in
            rate) rate=$v ;; delay) delay=$v ;; loss) loss=$v ;; queue) queue=$v ;;
            *) die "$f:$LINENO_SPEC: unknown link option '$k' (rate, delay, loss, queue)" ;;
          esac
        done
        [ -z "${LINK[$a $b]:-}" ] || die "$f:$LINENO_SPEC: link $a → $b given twice"
        LINK[$a $b]="$rate $delay $loss ${queue:-auto}"
        if [ -z "${PAIR_INDEX[$a $b]:-}" ]; then
          PAIR_INDEX[$a $b]=${#PAIRS[@]}; PAIR_INDEX[$b $a]=${#PAIRS[@]}; PAIRS+=("$a $b")
        fi ;;
      *) die "$f:$LINENO_SPEC: unknown directive '$key' (subnet, node, link)" ;;
    esac
  done <"$f"
  [ ${#NODES[@]} -gt 0 ] || die "$f: no nodes"
  [ ${#PAIRS[@]} -le 16384 ] || die "$f: more than 16384 node pairs"
}

pair_addr() {   # $1 = k, $2 = 1 | 2
  local k=$1
  if [ "$SUBNET" = 192.168 ]; then
    [ "$k" -lt 64 ] || die "subnet 192.168 holds 64 links at most (use subnet 10.N)"
    echo "192.168.200.$((4 * k + $2))"   # 192.168.200.0/24: away from common home LANs
  else
    echo "$SUBNET.$((k / 64)).$((4 * (k % 64) + $2))"
  fi
}

# awk for the arithmetic bash lacks (floating point).
# The parentheses matter: a bare '>' after printf would be awk's output redirection to a file.
calc() { awk "BEGIN { printf \"%d\", ($1) }"; }

# Shapes the directed link $1 → $2 on $1's end of their veth.
shape() {
  local a=$1 b=$2 spec rate delay loss queue ns dev
  spec=${LINK[$a $b]:-}
  if [ -z "$spec" ]; then
    # Only b → a was given: mirror its delay so the round trip is symmetric; leave the ACK path unshaped.
    read -r _ delay _ _ <<<"${LINK[$b $a]}"
    spec="0 $delay 0 auto"
  fi
  read -r rate delay loss queue <<<"$spec"
  if [ "$IGNORE_DELAY" = 1 ] && [ "$NETEM" != ok ]; then delay=0; loss=0; fi
  [ "$queue" = auto ] && queue=$(calc "($delay > 20 ? $delay : 20)")
  ns="$PREFIX-$a"; dev="to-$b"
  local rate_bps burst limit tbf_parent="root"
  rate_bps=$(calc "$rate * 1000000")
  if [ "$(calc "$delay > 0 || $loss > 0")" = 1 ]; then
    [ "$NETEM" = ok ] || die "link $a → $b asks for delay/loss but netem is unavailable ($NETEM); use --ignore-delay"
    # netem holds every packet for the delay: room for the bandwidth-delay product (at 1500 B; GSO packets are
    # larger, so this over-provisions) plus the queue, or netem itself drops before tbf shapes.
    local npk
    npk=$(calc "($rate_bps > 0 ? $rate_bps : 10e9) / 8 / 1500 * ($delay + $queue) / 1000 * 1.5 + 1000")
    local ne="delay ${delay}ms limit $npk"
    [ "$(calc "$loss > 0")" = 1 ] && ne="$ne loss ${loss}%"
    tc -n "$ns" qdisc add dev "$dev" root handle 1: netem $ne
    tbf_parent="parent 1:1 handle 10:"
  fi
  if [ "$rate_bps" -gt 0 ]; then
    burst=$(calc "($rate_bps / 8 * 0.004 > 32768) ? $rate_bps / 8 * 0.004 : 32768")
    limit=$(calc "$burst + $rate_bps / 8 * $queue / 1000")
    tc -n "$ns" qdisc add dev "$dev" $tbf_parent tbf rate "${rate_bps}bit" burst "$burst" limit "$limit"
  fi
  echo "link $a $b $rate $delay $loss"
}

cmd_up() {
  local spec="" owner="" k a b ia ib
  PREFIX=""; IGNORE_DELAY=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --owner) owner=${2:?--owner needs a PID}; shift 2 ;;
      --ignore-delay) IGNORE_DELAY=1; shift ;;
      -*) die "up: unknown option '$1'" ;;
      *) if [ -z "$spec" ]; then spec=$1; elif [ -z "$PREFIX" ]; then PREFIX=$1; else die "up: extra '$1'"; fi
         shift ;;
    esac
  done
  [ -n "$spec" ] || die "usage: up SPEC [PREFIX] [--owner PID] [--ignore-delay]"
  PREFIX=${PREFIX:-xn$$}
  valid_prefix "$PREFIX" || die "PREFIX '$PREFIX' must match [A-Za-z0-9_]{1,16} (no '-': it separates the node)"
  parse_spec "$spec"
  local st="$STATE_ROOT/$PREFIX"
  [ ! -e "$st" ] || die "prefix '$PREFIX' is in use ($st exists; 'down $PREFIX' first)"
  mkdir -p "$st"
  # From here on a failure (or a signal) removes what was made so far.
  trap 'rc=$?; trap - ERR INT TERM EXIT; cmd_down "$PREFIX" >/dev/null 2>&1; exit $rc' ERR INT TERM EXIT
  NETEM=missing
  echo "prefix $PREFIX"
  for a in "${NODES[@]}"; do
    echo "$PREFIX-$a" >>"$st/namespaces"
    ip netns add "$PREFIX-$a"
    ip -n "$PREFIX-$a" link set dev lo up
    echo "node $a $PREFIX-$a"
  done
  for k in "${!PAIRS[@]}"; do
    read -r a b <<<"${PAIRS[$k]}"
    # Both ends are created inside their namespaces, so no name ever exists in the root namespace to collide
    # with a parallel run.
    ip link add name "to-$b" netns "$PREFIX-$a" type veth peer name "to-$a" netns "$PREFIX-$b"
    ia=$(pair_addr "$k" 1); ib=$(pair_addr "$k" 2)
    ip -n "$PREFIX-$a" addr add "$ia/30" dev "to-$b"
    ip -n "$PREFIX-$b" addr add "$ib/30" dev "to-$a"
    ip -n "$PREFIX-$a" link set dev "to-$b" up
    ip -n "$PREFIX-$b" link set dev "to-$a" up
    echo "addr $a $b $ia $ib" | tee -a "$st/addrs"
    echo "addr $b $a $ib $ia" | tee -a "$st/addrs"
  done
  if have_netem "$PREFIX-${PAIRS[0]%% *}" "to-${PAIRS[0]##* }"; then
    NETEM=ok
    tc -n "$PREFIX-${PAIRS[0]%% *}" qdisc del dev "to-${PAIRS[0]##* }" root
  fi
  for k in "${!PAIRS[@]}"; do
    read -r a b <<<"${PAIRS[$k]}"
    shape "$a" "$b"
    shape "$b" "$a"
  done
  if [ -n "$owner" ]; then
    # The watcher must not hold the caller's stdout/stderr open, or a caller reading them (popen) never sees EOF.
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; exec "$2" down "$3"' \
      xfer-netns-watch "$owner" "$SELF" "$PREFIX" </dev/null >/dev/null 2>&1 &
    echo $! >"$st/watcher"
  fi
  trap - ERR INT TERM EXIT
}

# ---------------------------------------------------------------------------------------------------------- down
cmd_down() {
  local prefix=${1:?usage: down PREFIX} st ns p w
  valid_prefix "$prefix" || die "PREFIX '$prefix' must match [A-Za-z0-9_]{1,16}"
  st="$STATE_ROOT/$prefix"
  local list=()
  [ -r "$st/namespaces" ] && mapfile -t list <"$st/namespaces"
  # Also whatever matches PREFIX-NAME, in case the state was lost half-way.
  while read -r ns _; do
    [[ "$ns" =~ ^${prefix}-[A-Za-z0-9_]+$ ]] && list+=("$ns")
  done < <(ip netns list 2>/dev/null)
  for ns in "${list[@]}"; do
    [ -e "/run/netns/$ns" ] || [ -e "/var/run/netns/$ns" ] || continue
    # A namespace outlives its name while a process is inside; end those so the veths really go.
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  if [ -r "$st/watcher" ]; then
    w=$(cat "$st/watcher")
    [ "$w" != "$PPID" ] && [ "$w" != "$$" ] && kill "$w" 2>/dev/null || true
  fi
  rm -rf "$st"
}

cmd_addr() {
  local prefix=${1:?usage: addr PREFIX A B} a=${2:?usage: addr PREFIX A B} b=${3:?usage: addr PREFIX A B} x y ia ib
  [ -r "$STATE_ROOT/$prefix/addrs" ] || die "no emulation '$prefix' is up"
  while read -r _ x y ia ib; do
    if [ "$x" = "$a" ] && [ "$y" = "$b" ]; then echo "$ib"; return 0; fi
  done <"$STATE_ROOT/$prefix/addrs"
  die "no link between '$a' and '$b' in '$prefix'"
}

cmd_exec() {
  local prefix=${1:?usage: exec PREFIX NODE CMD...} node=${2:?usage: exec PREFIX NODE CMD...}
  shift 2
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || die "usage: exec PREFIX NODE CMD..."
  exec ip netns exec "$prefix-$node" "$@"
}

case "${1:-}" in
  check) shift; cmd_check "$@" ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  addr) shift; cmd_addr "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
