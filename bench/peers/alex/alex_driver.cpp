// bench/peers/alex/alex_driver.cpp — replays one mlsys index workload file (mlsys_index.h, "WORKLOAD FILES") on
// microsoft/ALEX, the real learned index MAPLE is compared with (issue 21). Our code; ALEX's own headers
// (src/core/alex.h, MIT) come from ALEX_DIR at build time (build.sh) and are never copied here.
//
//   alex_driver WORKLOAD [--eif F] [--warmup N]
//
// Bulk-loads the workload's keys (payload mlsys_index_payload_of(key), as ours), then runs its operations in order,
// checking every lookup's payload and every insert's acceptance, and prints one JSON line. --eif sets ALEX's
// expected insert fraction (its default, 1, otherwise). --warmup N first runs the bulk load and the first N
// operations untimed on a throw-away index, as `mlsys index bench` does for its own runs: the first run in a process
// pays for fresh pages that later runs reuse. Memory is counted by the global operator new (see below; the bytes live
// at the end), as mlsys_index_memory counts ours; ALEX's own model_size() and data_size() are printed too.
#ifdef MLSYS_PEER_STDMAP
#include <map>
#else
#include "alex.h"
#endif

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>
#include <string>
#include <vector>

// ALEX takes an allocator parameter, but its fanout tree is written for std::allocator only (a custom one does not
// compile), so memory is counted by replacing the global operator new/delete: the index's bytes are the live bytes
// after the run minus those before the index was made, as malloc_usable_size reports them (which includes malloc's
// rounding, at most 24 bytes per node: far below 0.1 % at these sizes).
static long long g_live = 0, g_peak = 0;

void *operator new(std::size_t n) {
  void *p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  g_live += (long long)malloc_usable_size(p);
  if (g_live > g_peak) g_peak = g_live;
  return p;
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *p) noexcept {
  if (!p) return;
  g_live -= (long long)malloc_usable_size(p);
  std::free(p);
}
void operator delete[](void *p) noexcept { operator delete(p); }
void operator delete(void *p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void *p, std::size_t) noexcept { operator delete(p); }

typedef std::pair<uint64_t, uint64_t> KV;
#ifdef MLSYS_PEER_STDMAP
// The test build (make builds it as build/peer_stdmap; tests/test_index_peer.c): std::map behind ALEX's interface,
// so that CI, which has no ALEX checkout, runs this file's reader, replay and checks and the CLI's peer path.
struct StdMapIndex {
  struct Stats {
    int num_data_nodes = 0, num_model_nodes = 0, num_expand_and_scales = 0, num_expand_and_retrains = 0;
    int num_downward_splits = 0, num_sideways_splits = 0;
  } stats_;
  std::map<uint64_t, uint64_t> m;
  void set_expected_insert_frac(double) {}
  void bulk_load(const KV *v, int n) { m.insert(v, v + n); }
  std::pair<int, bool> insert(uint64_t k, uint64_t p) { return std::make_pair(0, m.emplace(k, p).second); }
  uint64_t *get_payload(uint64_t k) {
    auto it = m.find(k);
    return it == m.end() ? nullptr : &it->second;
  }
  long long model_size() const { return 0; }
  long long data_size() const { return (long long)(m.size() * sizeof(KV)); }
  const Stats &get_stats() const { return stats_; }
};
typedef StdMapIndex Index;
static const char *const kPeer = "std::map (test stand-in)";
#else
// allow_duplicates = false: map semantics, as AlexMap and our index (an insert of a present key is refused)
typedef alex::Alex<uint64_t, uint64_t, alex::AlexCompare, std::allocator<KV>, false> Index;
static const char *const kPeer = "microsoft/ALEX";
#endif

static inline uint64_t payload_of(uint64_t key) { return key * 0x9E3779B97F4A7C15ull ^ 0x5bd1e995ull; }

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  static uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  crc = ~crc;
  while (n--) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

struct Workload {
  std::vector<uint64_t> bulk, key;
  std::vector<uint8_t> op;
  bool exhausted = false;
};

static bool fail(const char *fmt, const char *a, const char *b = "") {
  std::fprintf(stderr, "alex_driver: ");
  std::fprintf(stderr, fmt, a, b);
  std::fprintf(stderr, "\n");
  return false;
}

static bool read_workload(const char *path, Workload &w) {
  FILE *f = std::fopen(path, "rb");
  if (!f) return fail("%s: cannot open: %s", path, std::strerror(errno));
  std::vector<uint8_t> b;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) b.insert(b.end(), chunk, chunk + got);
  std::fclose(f);
  if (b.size() < 44 || std::memcmp(b.data(), "MLSYSIWL", 8)) return fail("%s: not a workload file%s", path);
  uint32_t ver = (uint32_t)le64(b.data() + 8) & 0xffffffffu, flags = (uint32_t)(le64(b.data() + 8) >> 32);
  uint64_t nb = le64(b.data() + 16), no = le64(b.data() + 24), ni = le64(b.data() + 32);
  if (ver != 1) return fail("%s: workload file version is not 1%s", path);
  if (nb >= (1ull << 60) || no >= (1ull << 60) || 40 + 8 * nb + 9 * no + 4 != b.size())
    return fail("%s: the size does not match the header%s", path);
  const uint8_t *t = b.data() + b.size() - 4;
  uint32_t want = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
  if (crc32c(0, b.data(), b.size() - 4) != want) return fail("%s: CRC mismatch%s", path);
  const uint8_t *p = b.data() + 40;
  w.bulk.resize(nb);
  w.key.resize(no);
  w.op.assign(p + 8 * nb + 8 * no, p + 8 * nb + 9 * no);
  for (uint64_t i = 0; i < nb; i++) w.bulk[i] = le64(p + 8 * i);
  for (uint64_t i = 0; i < no; i++) w.key[i] = le64(p + 8 * nb + 8 * i);
  uint64_t cnt = 0;
  for (uint8_t o : w.op) {
    if (o > 1) return fail("%s: an operation code is not 0 or 1%s", path);
    cnt += o;
  }
  for (uint64_t i = 1; i < nb; i++)
    if (w.bulk[i] <= w.bulk[i - 1]) return fail("%s: bulk keys are not sorted and distinct%s", path);
  if (cnt != ni) return fail("%s: insert count does not match the header%s", path);
  w.exhausted = flags & 1;
  return true;
}

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Run {
  double build_s = 0, seconds = 0;
  size_t ops = 0, finds = 0, inserts = 0, wrong = 0;
  long long bytes = 0, peak = 0, model_size = 0, data_size = 0;
  int leaves = 0, model_nodes = 0;
  long long expand = 0, splits = 0;
};

static void run(const Workload &w, size_t n_ops, double eif, Run &r) {
  std::vector<KV> values(w.bulk.size());
  for (size_t i = 0; i < w.bulk.size(); i++) values[i] = KV(w.bulk[i], payload_of(w.bulk[i]));
  long long before = g_live;
  g_peak = g_live;
  double t0 = now();
  {
    Index index;
    index.set_expected_insert_frac(eif);
    index.bulk_load(values.data(), (int)values.size());
    double t1 = now();
    r.build_s = t1 - t0;
    size_t wrong = 0, finds = 0, inserts = 0;
    const uint64_t *key = w.key.data();
    const uint8_t *op = w.op.data();
    for (size_t i = 0; i < n_ops; i++) {
      uint64_t k = key[i];
      if (op[i]) {
        wrong += !index.insert(k, payload_of(k)).second;
        inserts++;
      } else {
        const uint64_t *v = index.get_payload(k);
        wrong += !v || *v != payload_of(k);
        finds++;
      }
    }
    r.seconds = now() - t1;
    r.ops = n_ops;
    r.finds = finds;
    r.inserts = inserts;
    r.wrong = wrong;
    r.bytes = g_live - before;
    r.model_size = index.model_size();
    r.data_size = index.data_size();
    const auto &st = index.get_stats();
    r.leaves = st.num_data_nodes;
    r.peak = g_peak - before;
    r.model_nodes = st.num_model_nodes;
    r.expand = (long long)st.num_expand_and_scales + st.num_expand_and_retrains;
    r.splits = (long long)st.num_downward_splits + st.num_sideways_splits;
  }
}

int main(int argc, char **argv) {
  const char *path = nullptr;
  double eif = 1;
  size_t warmup = 0;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--eif") && i + 1 < argc) {
      char *end;
      eif = std::strtod(argv[++i], &end);
      if (*end || !(eif >= 0 && eif <= 1)) return fail("--eif '%s' must be a number in [0, 1]%s", argv[i]), 2;
    } else if (!std::strcmp(argv[i], "--warmup") && i + 1 < argc) {
      char *end;
      warmup = (size_t)std::strtoull(argv[++i], &end, 10);
      if (*end) return fail("--warmup '%s' is not a count%s", argv[i]), 2;
    } else if (argv[i][0] == '-' || path) {
      std::fprintf(stderr, "usage: alex_driver WORKLOAD [--eif F] [--warmup N]\n");
      return 2;
    } else {
      path = argv[i];
    }
  }
  if (!path) {
    std::fprintf(stderr, "usage: alex_driver WORKLOAD [--eif F] [--warmup N]\n");
    return 2;
  }
  Workload w;
  if (!read_workload(path, w)) return 1;
  if (w.bulk.empty()) return fail("%s: ALEX cannot bulk load zero keys here%s", path), 1;
  if (warmup) {
    Run r;
    run(w, warmup < w.key.size() ? warmup : w.key.size(), eif, r);
  }
  Run r;
  run(w, w.key.size(), eif, r);
  std::printf("{\"peer\": \"%s\", \"eif\": %g, \"n_bulk\": %zu, \"ops\": %zu, \"finds\": %zu, \"inserts\": %zu, "
              "\"wrong\": %zu, \"build_s\": %.6f, \"seconds\": %.6f, \"mops\": %.6g, \"bytes\": %lld, \"peak_bytes\": %lld, "
              "\"model_size\": %lld, \"data_size\": %lld, \"data_nodes\": %d, \"model_nodes\": %d, \"expansions\": %lld, "
              "\"splits\": %lld}\n",
              kPeer, eif, w.bulk.size(), r.ops, r.finds, r.inserts, r.wrong, r.build_s, r.seconds,
              r.seconds > 0 ? (double)r.ops / r.seconds / 1e6 : 0.0, r.bytes, r.peak, r.model_size, r.data_size, r.leaves,
              r.model_nodes, r.expand, r.splits);
  return r.wrong ? 3 : 0;
}
