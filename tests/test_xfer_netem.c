/* tests/test_xfer_netem.c — the Skyplane profiler (mlsys_transfer.h section 4) on loopback, and on an emulated WAN built
   by scripts/xfer-netns.sh from real rows of Skyplane's throughput grid.

   The WAN is the thesis's Fig 4.1 route: azure:canadacentral → gcp:asia-northeast1-a direct, and the overlay via
   azure:westus2. Link rates are the grid's throughput_sent (PREMIUM tiers, bits/s) scaled by 20 Mbit/s per Gbps
   (1/50) so a 2-core box carries them; each shaped link must measure within 15 % of its rate. One-way delays
   (80/30/50 ms) are illustrative (the grid has no latency column) and need sch_netem; the handshake time must
   show them. Tests that need namespaces skip with the reason `xfer-netns.sh check` gives (no root, no
   CAP_NET_ADMIN, no netem).

   Code runs inside a namespace by fork() + setns(2) on /run/netns/NAME: the child is single-threaded at that
   point, so the whole child (and every thread the profiler starts in it) lives in that namespace. */
#define _GNU_SOURCE
#define MLSYS_IMPLEMENTATION
#include "mlsys_common.h"
#include "mlsys_transfer.h"
#include "tests/test.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------- loopback */

TEST(profile_loopback_goodput) {
  mlsys_xfer_profile_server *srv;
  int port = 0;
  REQUIRE_OK(mlsys_xfer_profile_serve("127.0.0.1", 0, &port, &srv));
  CHECK(port > 0 && port == mlsys_xfer_profile_server_port(srv));
  mlsys_xfer_profile_result r;
  mlsys_status st = mlsys_xfer_profile_pair("127.0.0.1", port, 8, 2.0, &r);
  CHECK_OK(st);
  printf("    loopback, 8 connections, 2 s: goodput %.2f Gbps (window %.2f s), into sockets %.2f Gbps, "
         "handshake %.3f ms, srtt %.3f ms\n",
         r.recv_gbps, r.recv_window_s, r.sent_gbps, r.connect_ms_min, r.rtt_ms);
  CHECK_EQ_INT(r.nconn, 8);
  CHECK_MSG(r.recv_gbps > 0, "loopback goodput %.3f Gbps", r.recv_gbps);   /* data moved: a speed is no verdict */
  /* Exact byte accounting: everything written arrives, and the server says so. */
  CHECK(r.bytes_sent > 0 && r.bytes_received == r.bytes_sent);
  CHECK(r.bytes_measured > 0 && r.bytes_measured < r.bytes_received);   /* the omit interval was left out */
  CHECK_NEAR(r.omit_s, 0.4, 1e-9);                                       /* default: seconds / 5 */
  CHECK(r.seconds >= 2.0 && r.seconds < 60);   /* at least the run asked for; the upper bound is a hang guard */
  CHECK(r.connect_ms_min >= 0);
  mlsys_xfer_profile_stop(srv);
  /* stop() joined every connection thread, so all 8 replies are counted by now — checked through a second
     server since srv is freed; here: a fresh server starts at zero */
  REQUIRE_OK(mlsys_xfer_profile_serve("localhost", 0, &port, &srv));
  CHECK_EQ_INT(mlsys_xfer_profile_server_completed(srv), 0);
  mlsys_xfer_profile_opts o;
  memset(&o, 0, sizeof o);
  o.nconn = 3; o.seconds = 0.3; o.omit_s = -1;                           /* no omit: iperf3's default */
  CHECK_OK(mlsys_xfer_profile_pair_ex("localhost", port, &o, &r));
  CHECK(r.bytes_measured == r.bytes_received && r.omit_s == 0);
  CHECK_EQ_INT(mlsys_xfer_profile_server_completed(srv), 3);
  o.congestion = "no_such_cc";
  CHECK_EQ_INT(mlsys_xfer_profile_pair_ex("localhost", port, &o, &r), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "congestion control 'no_such_cc'");
  mlsys_xfer_profile_stop(srv);
  /* Nobody listens there now. */
  CHECK_EQ_INT(mlsys_xfer_profile_pair("127.0.0.1", port, 2, 0.2, &r), MLSYS_ERR_IO);
  CHECK_CONTAINS(mlsys_last_error(), "connect");
}

TEST(profile_refuses_public_hosts) {
  static const char *bad[] = {"8.8.8.8", "example.com", "localhost.example.com", "172.32.0.1", "172.15.255.255",
                              "192.169.0.1", "11.0.0.1", "0.0.0.0", "fe80::1", "::ffff:8.8.8.8", "", "127.0.0.1x"};
  static const char *good[] = {"127.0.0.1", "127.5.6.7", "localhost", "::1", "10.77.0.2", "172.16.0.1",
                               "172.31.255.254", "192.168.200.2"};
  mlsys_xfer_profile_result r;
  mlsys_xfer_profile_server *srv = NULL;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ_INT(mlsys_xfer_profile_check_host(bad[i]), MLSYS_ERR_ARG);
    CHECK_EQ_INT(mlsys_xfer_profile_pair(bad[i], 5201, 8, 1.0, &r), MLSYS_ERR_ARG);
    CHECK_CONTAINS(mlsys_last_error(), "refused");
    CHECK_EQ_INT(mlsys_xfer_profile_serve(bad[i], 0, NULL, &srv), MLSYS_ERR_ARG);
    CHECK(srv == NULL);
  }
  CHECK_EQ_INT(mlsys_xfer_profile_pair("8.8.8.8", 5201, 8, 1.0, &r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "'8.8.8.8' refused");
  CHECK_EQ_INT(mlsys_xfer_profile_pair("example.com", 5201, 8, 1.0, &r), MLSYS_ERR_ARG);
  CHECK_CONTAINS(mlsys_last_error(), "not a numeric address");
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK_OK(mlsys_xfer_profile_check_host(good[i]));
  CHECK_EQ_INT(mlsys_xfer_profile_pair("127.0.0.1", 5201, 0, 1.0, &r), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_profile_pair("127.0.0.1", 0, 1, 1.0, &r), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_xfer_profile_pair("127.0.0.1", 5201, 1, -1.0, &r), MLSYS_ERR_ARG);
}

/* A client that connects and then goes silent must not keep stop() waiting. */
TEST(profile_stop_cuts_idle_connections) {
  mlsys_xfer_profile_server *srv;
  int port = 0;
  REQUIRE_OK(mlsys_xfer_profile_serve("127.0.0.1", 0, &port, &srv));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(0x7f000001);
  CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
  CHECK(write(fd, "SKYPROF1", 8) == 8);   /* half a hello, then nothing */
  usleep(100000);
  double t0 = mlsys_now();
  mlsys_xfer_profile_stop(srv);
  /* stop cuts the idle client instead of waiting for it (which would be forever): the bound is a hang guard */
  CHECK_MSG(mlsys_now() - t0 < 60, "stop took %.2f s", mlsys_now() - t0);
  close(fd);
}

/* --------------------------------------------------------------------------------------------- namespaces */

#define SCRIPT "scripts/xfer-netns.sh"
#define SCALE_MBIT_PER_GBPS 20.0

static char g_prefix[32];
static pid_t g_kids[16];
static int g_nkids;

static void ns_teardown(void) {
  for (int i = 0; i < g_nkids; i++)
    if (g_kids[i] > 0) {
      kill(g_kids[i], SIGTERM);
      waitpid(g_kids[i], NULL, 0);
    }
  g_nkids = 0;
  if (g_prefix[0]) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s down %s", SCRIPT, g_prefix);
    if (system(cmd) != 0) fprintf(stderr, "test_xfer_netem: '%s' failed\n", cmd);
    g_prefix[0] = 0;
  }
}

/* Runs cmd, returns its exit status and its merged output (trailing newline trimmed). */
static int run_capture(const char *cmd, char *out, size_t cap) {
  char full[1024];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  size_t n = 0;
  if (!p) { snprintf(out, cap, "popen failed"); return -1; }
  while (n + 1 < cap && fgets(out + n, (int)(cap - n), p)) n += strlen(out + n);
  out[n] = 0;
  while (n && out[n - 1] == '\n') out[--n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* "" when the emulation works (netem tells whether delays work too), else the reason. */
static int g_checked, g_netns_ok, g_netem_ok;
static char g_check_out[1024];
static void ns_check(void) {
  if (g_checked) return;
  g_checked = 1;
  g_netns_ok = run_capture(SCRIPT " check", g_check_out, sizeof g_check_out) == 0;
  g_netem_ok = g_netns_ok && strstr(g_check_out, "netem ok") != NULL;
  atexit(ns_teardown);
}

/* throughput_sent (bits/s) of src → dst, PREMIUM tier at both ends, from Skyplane's grid; 0 when absent. */
static double grid_bps(const char *src, const char *dst, char *source, size_t cap) {
  /* The repo's copy (PREMIUM rows only, no tier columns; tests/data/skyplane/README.md): in every clone. */
  static const char *paths[] = {"tests/data/skyplane/throughput_premium.csv"};
  for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
    FILE *f = fopen(paths[k], "r");
    if (!f) continue;
    char line[2048];
    int c_src = -1, c_st = -1, c_dst = -1, c_dt = -1, c_tp = -1, lineno = 0;
    double found = 0;
    while (fgets(line, sizeof line, f)) {
      char *field[32], *save = NULL;
      int n = 0;
      lineno++;
      line[strcspn(line, "\r\n")] = 0;
      for (char *t = strtok_r(line, ",", &save); t && n < 32; t = strtok_r(NULL, ",", &save)) field[n++] = t;
      if (lineno == 1) {
        for (int i = 0; i < n; i++) {
          if (!strcmp(field[i], "src_region")) c_src = i;
          if (!strcmp(field[i], "src_tier")) c_st = i;
          if (!strcmp(field[i], "dst_region")) c_dst = i;
          if (!strcmp(field[i], "dst_tier")) c_dt = i;
          if (!strcmp(field[i], "throughput_sent")) c_tp = i;
        }
        if (c_src < 0 || c_dst < 0 || c_tp < 0) break;
        continue;
      }
      if (n <= c_tp || n <= c_dt || n <= c_st || n <= c_src || n <= c_dst) continue;
      if (!strcmp(field[c_src], src) && !strcmp(field[c_dst], dst) &&
          (c_st < 0 || !strcmp(field[c_st], "PREMIUM")) && (c_dt < 0 || !strcmp(field[c_dt], "PREMIUM"))) {
        found = strtod(field[c_tp], NULL);
        snprintf(source, cap, "%.80s line %d", paths[k], lineno);
        break;
      }
    }
    fclose(f);
    if (found > 0) return found;
  }
  return 0;
}

typedef struct {
  const char *from, *to, *src_region, *dst_region;
  double delay_ms;
  double bps, mbit;   /* the grid's throughput_sent and the emulated rate */
  char source[128];
} wan_link;

static wan_link g_links[3] = {
    {"src", "dst", "azure:canadacentral", "gcp:asia-northeast1-a", 80, 0, 0, ""},
    {"src", "relay", "azure:canadacentral", "azure:westus2", 30, 0, 0, ""},
    {"relay", "dst", "azure:westus2", "gcp:asia-northeast1-a", 50, 0, 0, ""},
};

static int g_cubic = -1;
static void detect_cubic(void) {
  char buf[256] = "";
  FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_congestion_control", "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
  }
  g_cubic = strstr(buf, "cubic") != NULL;
}

/* Builds the three-node WAN; SKIPs (through the caller's longjmp) when this machine cannot. */
static void wan_up(int want_delay) {
  char spec_path[] = "/tmp/xfer_netem_specXXXXXX", cmd[512], out[4096];
  ns_teardown();   /* whatever a failed test before this one left */
  ns_check();
  if (g_cubic < 0) detect_cubic();
  if (!g_netns_ok) SKIP("%s check: %.200s", SCRIPT, g_check_out);
  if (want_delay && !g_netem_ok) SKIP("link delay needs sch_netem, which this kernel lacks (%s check)", SCRIPT);
  for (int i = 0; i < 3; i++) {
    wan_link *l = &g_links[i];
    l->bps = grid_bps(l->src_region, l->dst_region, l->source, sizeof l->source);
    REQUIRE(l->bps > 0);
    l->mbit = l->bps / 1e9 * SCALE_MBIT_PER_GBPS;
  }
  int fd = mkstemp(spec_path);
  REQUIRE(fd >= 0);
  FILE *f = fdopen(fd, "w");
  REQUIRE(f);
  fprintf(f, "# Fig 4.1 route, written by tests/test_xfer_netem.c\nnode src\nnode relay\nnode dst\n");
  for (int i = 0; i < 3; i++) {
    fprintf(f, "link %s %s rate=%.3f", g_links[i].from, g_links[i].to, g_links[i].mbit);
    if (g_netem_ok) fprintf(f, " delay=%g", g_links[i].delay_ms);
    fprintf(f, "   # %s -> %s, %.0f bit/s (%s)\n", g_links[i].src_region, g_links[i].dst_region, g_links[i].bps,
            g_links[i].source);
  }
  fclose(f);
  snprintf(g_prefix, sizeof g_prefix, "xt%d", (int)getpid());
  snprintf(cmd, sizeof cmd, "%s up %s %s --owner %d", SCRIPT, spec_path, g_prefix, (int)getpid());
  int rc = run_capture(cmd, out, sizeof out);
  unlink(spec_path);
  if (rc != 0) {
    g_prefix[0] = 0;   /* up removed what it made */
    test__fail(__FILE__, __LINE__, "%s: %s", cmd, out);
    longjmp(test__env, 1);
  }
}

/* The address of node b on its link with a. */
static void wan_addr(const char *a, const char *b, char *addr, size_t cap) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s addr %s %s %s", SCRIPT, g_prefix, a, b);
  if (run_capture(cmd, addr, cap) != 0) {
    test__fail(__FILE__, __LINE__, "%s: %s", cmd, addr);
    longjmp(test__env, 1);
  }
}

/* fork() a child inside namespace PREFIX-node; returns the pid in the parent and 0 in the child. */
static pid_t ns_fork(const char *node) {
  char path[128];
  snprintf(path, sizeof path, "/run/netns/%s-%s", g_prefix, node);
  pid_t p = fork();
  if (p != 0) {
    if (p > 0 && g_nkids < 16) g_kids[g_nkids++] = p;
    return p;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(98);
  close(fd);
  return 0;
}

/* A profile server in `node`, bound to addr; returns its port and the write end that keeps it alive. */
static int server_in(const char *node, const char *addr, int *keepalive) {
  int portp[2], ctl[2], port = 0;
  REQUIRE(pipe(portp) == 0 && pipe(ctl) == 0);
  pid_t p = ns_fork(node);
  REQUIRE(p >= 0);
  if (p == 0) {
    mlsys_xfer_profile_server *srv;
    close(portp[0]);
    close(ctl[1]);
    if (mlsys_xfer_profile_serve(addr, 0, &port, &srv) != MLSYS_OK) port = -1;
    if (write(portp[1], &port, sizeof port) != (ssize_t)sizeof port) _exit(97);
    char c;
    while (read(ctl[0], &c, 1) > 0) {}   /* until the parent closes ctl (or dies) */
    if (port > 0) mlsys_xfer_profile_stop(srv);
    _exit(0);
  }
  close(portp[1]);
  close(ctl[0]);
  if (read(portp[0], &port, sizeof port) != (ssize_t)sizeof port) port = -1;
  close(portp[0]);
  *keepalive = ctl[1];
  return port;
}

typedef struct {
  mlsys_status st;
  mlsys_xfer_profile_result r;
  char err[1024];
} ns_result;

static ns_result profile_from(const char *node, const char *addr, int port, const mlsys_xfer_profile_opts *o) {
  ns_result res;
  int rp[2];
  memset(&res, 0, sizeof res);
  if (pipe(rp) != 0) { res.st = MLSYS_ERR_IO; return res; }
  pid_t p = ns_fork(node);
  if (p == 0) {
    close(rp[0]);
    res.st = mlsys_xfer_profile_pair_ex(addr, port, o, &res.r);
    snprintf(res.err, sizeof res.err, "%s", mlsys_last_error());
    _exit(write(rp[1], &res, sizeof res) == (ssize_t)sizeof res ? 0 : 97);
  }
  close(rp[1]);
  if (p < 0 || read(rp[0], &res, sizeof res) != (ssize_t)sizeof res) {
    res.st = MLSYS_ERR_IO;
    snprintf(res.err, sizeof res.err, "the client child in %s died", node);
  }
  close(rp[0]);
  if (p > 0) {
    waitpid(p, NULL, 0);
    g_nkids--;   /* it was the last one forked */
  }
  return res;
}

/* Measures one directed link: server at `to`, client at `from`. */
static ns_result measure(const wan_link *l, double seconds, int nconn) {
  char addr[64];
  int keep = -1;
  wan_addr(l->from, l->to, addr, sizeof addr);
  int port = server_in(l->to, addr, &keep);
  REQUIRE(port > 0);
  mlsys_xfer_profile_opts o;
  memset(&o, 0, sizeof o);
  o.nconn = nconn;
  o.seconds = seconds;
  o.omit_s = 1.0;
  o.congestion = g_cubic ? "cubic" : NULL;   /* Skyplane's grid was measured with CUBIC */
  ns_result res = profile_from(l->from, addr, port, &o);
  close(keep);
  return res;
}

TEST(netns_links_reach_grid_rates) {
  wan_up(0);
  for (int i = 0; i < 3; i++) {
    const wan_link *l = &g_links[i];
    ns_result res = measure(l, 4.0, 8);
    CHECK_MSG(res.st == MLSYS_OK, "%s -> %s: %s", l->from, l->to, res.err);
    double meas_mbit = res.r.recv_gbps * 1e3;
    printf("    %-5s -> %-5s  %-21s -> %-21s grid %5.2f Gbps  shaped %7.2f Mbit/s  measured %7.2f Mbit/s "
           "(%+5.1f %%; into sockets %.1f)  handshake %.2f ms  [%s]\n",
           l->from, l->to, l->src_region, l->dst_region, l->bps / 1e9, l->mbit, meas_mbit,
           (meas_mbit / l->mbit - 1) * 100, res.r.sent_gbps * 1e3, res.r.connect_ms_min, l->source);
    /* tbf caps the link at any machine speed (goodput is ~4.4 % under the frame rate); the floor is generous: a
       loaded machine moves fewer bytes, and the link's accuracy is a measurement (docs/transfer-netns.md) */
    CHECK_MSG(meas_mbit <= l->mbit * 1.02 && meas_mbit >= l->mbit * 0.5, "%s -> %s: measured %.2f Mbit/s vs shaped %.2f",
              l->from, l->to, meas_mbit, l->mbit);
  }
  /* The overlay of Fig 4.1: the relay path's bottleneck beats the direct link (the grid's 2.0x). */
  double overlay = fmin(g_links[1].mbit, g_links[2].mbit);
  CHECK_MSG(overlay / g_links[0].mbit > 1.8, "overlay %.1f vs direct %.1f", overlay, g_links[0].mbit);
  ns_teardown();
}

TEST(netns_link_delay_shows_in_handshake) {
  wan_up(1);
  for (int i = 0; i < 3; i++) {
    const wan_link *l = &g_links[i];
    ns_result res = measure(l, 2.0, 4);
    CHECK_MSG(res.st == MLSYS_OK, "%s -> %s: %s", l->from, l->to, res.err);
    double rtt = 2 * l->delay_ms;
    printf("    %-5s -> %-5s  one-way %g ms: handshake min %.2f ms mean %.2f ms, srtt %.2f ms, goodput %.2f "
           "Mbit/s of %.2f\n",
           l->from, l->to, l->delay_ms, res.r.connect_ms_min, res.r.connect_ms_mean, res.r.rtt_ms,
           res.r.recv_gbps * 1e3, l->mbit);
    CHECK_MSG(res.r.connect_ms_min >= rtt - 0.5 && res.r.connect_ms_min <= rtt + 15, "%s -> %s: handshake %.2f ms, "
              "expected %.0f ms", l->from, l->to, res.r.connect_ms_min, rtt);
  }
  ns_teardown();
}

/* down is idempotent, and nothing with the prefix is left behind. */
TEST(netns_down_leaves_nothing) {
  char out[4096], cmd[256], prefix[32];
  wan_up(0);
  snprintf(prefix, sizeof prefix, "%s", g_prefix);
  ns_teardown();
  snprintf(cmd, sizeof cmd, "%s down %s", SCRIPT, prefix);
  CHECK_EQ_INT(run_capture(cmd, out, sizeof out), 0);   /* a second time: nothing to do, still fine */
  CHECK_EQ_INT(run_capture("ip netns list", out, sizeof out), 0);
  CHECK_MSG(strstr(out, prefix) == NULL, "left behind: %.1000s", out);
}

TEST_MAIN()
