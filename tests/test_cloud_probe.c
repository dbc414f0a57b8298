/* tests/test_cloud_probe.c — the loopback bandwidth probe of mlsys_cloud.h: ring allreduce among forked processes
   over TCP on 127.0.0.1. Correctness, not speed: every run verifies every element of every allreduce (so uneven
   chunks, empty chunks and 4-byte buffers are exercised), the row arithmetic is checked against its formula, bad
   options are named errors, and a timeout kills and reaps every child while leaving the caller's own child alone.
   Sizes stay small, so the whole file runs in a few seconds on two cores. */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include "tests/test.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* No child of this process is left (reaped or not). */
static int no_children(void) {
  errno = 0;
  return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
}

/* Open descriptors of this process (Linux /proc; -1 where there is none): a probe must close all it opened. */
static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int k = 0;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL) k += e->d_name[0] != '.';
  closedir(d);
  return k;
}

static mlsys_cloud_probe_opts small_opts(int n, size_t lo, size_t hi) {
  mlsys_cloud_probe_opts o;
  mlsys_cloud_probe_opts_default(&o);
  o.nranks = n;
  o.min_bytes = lo;
  o.max_bytes = hi;
  o.warmup = 1;
  o.iters = 2;
  o.timeout_s = 60; /* a hang guard only: the work is bounded */
  o.verify = 1;
  return o;
}

TEST(probe_defaults_and_nsizes) {
  mlsys_cloud_probe_opts o;
  mlsys_cloud_probe_opts_default(&o);
  CHECK_EQ_INT(o.nranks, 2);
  CHECK_EQ_INT(o.min_bytes, 4);
  CHECK_EQ_INT(o.max_bytes, 64u << 20);
  CHECK_EQ_INT(o.warmup, 2);
  CHECK_EQ_INT(o.iters, 5);
  CHECK_NEAR(o.timeout_s, 120, 0);
  CHECK_EQ_INT(o.verify, 0);
  CHECK_EQ_INT(o.n_async, 1);
  CHECK_EQ_INT(mlsys_cloud_probe_nsizes(4, 64u << 20), 25);
  CHECK_EQ_INT(mlsys_cloud_probe_nsizes(4, 4), 1);
  CHECK_EQ_INT(mlsys_cloud_probe_nsizes(5, 6), 1);      /* both round up to 8 */
  CHECK_EQ_INT(mlsys_cloud_probe_nsizes(5, 9), 2);      /* 8, 16 */
  CHECK_EQ_INT(mlsys_cloud_probe_nsizes(2, 8), 0);
  CHECK_EQ_INT(mlsys_cloud_probe_nsizes(16, 8), 0);
}

TEST(probe_row_arithmetic) {
  mlsys_cloud_probe_opts o = small_opts(2, 4, 4096);
  mlsys_cloud_probe_row rows[16];
  int nrows = -1, i, fds = count_fds();
  REQUIRE_OK(mlsys_cloud_probe_tcp(&o, rows, 16, &nrows));
  CHECK_EQ_INT(count_fds(), fds);
  REQUIRE(nrows == 11);
  for (i = 0; i < nrows; i++) {
    double s = rows[i].bytes, t = rows[i].t_s;
    int n = rows[i].n;
    CHECK_NEAR(s, 4.0 * (double)(1u << i), 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(rows[i].n_async, 1);
    CHECK(t > 0 && isfinite(t));
    CHECK(rows[i].busbw == 2.0 * s * (n - 1) / ((double)n * t));
    CHECK(rows[i].algbw == s / t);
  }
  CHECK(no_children());
}

/* n = 2, 3, 4 over 4 B .. 1 MiB with every element checked: n = 3 never divides the float count, and 4 and 8 B
   give fewer floats than ranks (empty chunks). */
TEST(probe_ring_verified_n2_n3_n4) {
  int n;
  for (n = 2; n <= 4; n++) {
    mlsys_cloud_probe_opts o = small_opts(n, 4, 1u << 20);
    mlsys_cloud_probe_row rows[32];
    int nrows = -1, i;
    CHECK_OK(mlsys_cloud_probe_tcp(&o, rows, 32, &nrows));
    CHECK_EQ_INT(nrows, 19);
    for (i = 0; i < nrows && i < 19; i++) {
      CHECK_NEAR(rows[i].bytes, 4.0 * (double)(1u << i), 0);
      CHECK_EQ_INT(rows[i].n, n);
      CHECK(rows[i].t_s > 0);
      CHECK(rows[i].busbw > 0);
    }
    CHECK(no_children());
  }
}

/* More ranks than floats, odd world sizes, non-power-of-two bounds (rounded up), and the largest world. */
TEST(probe_ring_verified_odd_and_wide) {
  mlsys_cloud_probe_row rows[16];
  int nrows = -1;
  mlsys_cloud_probe_opts o = small_opts(7, 5, 100); /* 8 .. 128 B */
  CHECK_OK(mlsys_cloud_probe_tcp(&o, rows, 16, &nrows));
  CHECK_EQ_INT(nrows, 5);
  CHECK_NEAR(rows[0].bytes, 8, 0);
  CHECK_NEAR(rows[nrows > 0 ? nrows - 1 : 0].bytes, 128, 0);
  o = small_opts(3, 4, 8);
  o.warmup = 0;
  o.iters = 5;
  CHECK_OK(mlsys_cloud_probe_tcp(&o, rows, 2, &nrows));
  CHECK_EQ_INT(nrows, 2);
  o = small_opts(5, 4096 + 12, 8192); /* 8 KiB, 2048 floats over 5 ranks */
  CHECK_OK(mlsys_cloud_probe_tcp(&o, rows, 1, &nrows));
  CHECK_EQ_INT(nrows, 1);
  o = small_opts(64, 4, 1024);
  o.warmup = 0;
  o.iters = 1;
  CHECK_OK(mlsys_cloud_probe_tcp(&o, rows, 16, &nrows));
  CHECK_EQ_INT(nrows, 9);
  CHECK_EQ_INT(rows[0].n, 64);
  CHECK(no_children());
}

static void check_bad(mlsys_cloud_probe_opts o, int max_rows, mlsys_status want, const char *needle) {
  mlsys_cloud_probe_row rows[64];
  int nrows = 99;
  mlsys_status s = mlsys_cloud_probe_tcp(&o, rows, max_rows, &nrows);
  CHECK_EQ_INT(s, want);
  CHECK_CONTAINS(mlsys_last_error(), needle);
  CHECK_EQ_INT(nrows, 0);
}

TEST(probe_bad_options) {
  mlsys_cloud_probe_opts o = small_opts(2, 4, 64);
  mlsys_cloud_probe_row rows[4];
  int nrows;
  o.nranks = 1;
  check_bad(o, 64, MLSYS_ERR_ARG, "nranks 1");
  o.nranks = 65;
  check_bad(o, 64, MLSYS_ERR_ARG, "nranks 65");
  o = small_opts(2, 128, 64);
  check_bad(o, 64, MLSYS_ERR_ARG, "min_bytes 128 exceeds max_bytes 64");
  o = small_opts(2, 0, 64);
  check_bad(o, 64, MLSYS_ERR_ARG, "at least 4 B");
  o = small_opts(2, 2, 64);
  check_bad(o, 64, MLSYS_ERR_ARG, "at least 4 B");
  o = small_opts(2, 4, 64); /* 5 sizes */
  check_bad(o, 4, MLSYS_ERR_ARG, "max_rows 4 is fewer than the 5 sizes");
  o = small_opts(2, 4, ((size_t)1 << 30) + 1);
  check_bad(o, 64, MLSYS_ERR_TOO_BIG, "1 GiB");
  o = small_opts(2, 4, 64);
  o.iters = 0;
  check_bad(o, 64, MLSYS_ERR_ARG, "iters 0");
  o = small_opts(2, 4, 64);
  o.warmup = -1;
  check_bad(o, 64, MLSYS_ERR_ARG, "warmup -1");
  o = small_opts(2, 4, 64);
  o.timeout_s = 0;
  check_bad(o, 64, MLSYS_ERR_ARG, "timeout_s");
  o.timeout_s = NAN;
  check_bad(o, 64, MLSYS_ERR_ARG, "timeout_s");
  o = small_opts(2, 4, 64);
  o.n_async = 2; /* the NCCL probe's option: the loopback ring runs one allreduce at a time */
  check_bad(o, 64, MLSYS_ERR_ARG, "n_async 2");
  o.n_async = -1;
  check_bad(o, 64, MLSYS_ERR_ARG, "n_async -1");
  CHECK_EQ_INT(mlsys_cloud_probe_tcp(NULL, rows, 4, &nrows), MLSYS_ERR_ARG);
  o = small_opts(2, 4, 4);
  CHECK_EQ_INT(mlsys_cloud_probe_tcp(&o, NULL, 4, &nrows), MLSYS_ERR_ARG);
  CHECK_EQ_INT(mlsys_cloud_probe_tcp(&o, rows, 4, NULL), MLSYS_ERR_ARG);
  CHECK(no_children());
}

/* A child of the caller's own, to show that the probe reaps only its children. */
static pid_t spawn_sleeper(void) {
  pid_t p = fork();
  if (p == 0) {
    pause();
    _exit(0);
  }
  return p;
}
static int reap_sleeper(pid_t p) {
  int st = 0, alive = waitpid(p, NULL, WNOHANG) == 0;
  kill(p, SIGKILL);
  return alive && waitpid(p, &st, 0) == p && WIFSIGNALED(st);
}

/* A deadline that cannot be met (a 64 MiB buffer in 0.1 ms; or 10^5 allreduces of 16 MiB in 0.3 s, which kills the
   ranks in the middle of large transfers): ERR_TIMEOUT, and every child is gone. */
TEST(probe_timeout_reaps_children) {
  mlsys_cloud_probe_row rows[32];
  int nrows = 99, fds = count_fds();
  pid_t mine = spawn_sleeper();
  mlsys_cloud_probe_opts o = small_opts(4, 64u << 20, 64u << 20);
  REQUIRE(mine > 0);
  o.timeout_s = 1e-4;
  o.verify = 0;
  CHECK_EQ_INT(mlsys_cloud_probe_tcp(&o, rows, 32, &nrows), MLSYS_ERR_TIMEOUT);
  CHECK_CONTAINS(mlsys_last_error(), "timed out");
  CHECK_EQ_INT(nrows, 0);
  o = small_opts(2, 16u << 20, 16u << 20);
  o.warmup = 0;
  o.iters = 100000;
  o.timeout_s = 0.3;
  o.verify = 0;
  CHECK_EQ_INT(mlsys_cloud_probe_tcp(&o, rows, 32, &nrows), MLSYS_ERR_TIMEOUT);
  CHECK_CONTAINS(mlsys_last_error(), "timed out");
  CHECK_EQ_INT(count_fds(), fds);
  CHECK(reap_sleeper(mine));   /* still running, not reaped by the probe */
  CHECK(no_children());
}

/* The caller's child survives a successful probe as well. */
TEST(probe_leaves_callers_children) {
  mlsys_cloud_probe_row rows[4];
  int nrows = 0;
  pid_t mine = spawn_sleeper();
  mlsys_cloud_probe_opts o = small_opts(3, 64, 256);
  REQUIRE(mine > 0);
  CHECK_OK(mlsys_cloud_probe_tcp(&o, rows, 4, &nrows));
  CHECK_EQ_INT(nrows, 3);
  CHECK(reap_sleeper(mine));
  CHECK(no_children());
}

TEST(probe_csv_round_trip) {
  mlsys_cloud_probe_row rows[3], back[3];
  char line[512];
  FILE *f = tmpfile();
  int i;
  REQUIRE(f);
  for (i = 0; i < 3; i++) {
    rows[i].bytes = 4.0 * (1 << (5 * i));
    rows[i].n = 2 + i;
    rows[i].n_async = 1;
    rows[i].t_s = 1.0 / 3.0 + i * 1e-7;
    rows[i].busbw = 2.0 * rows[i].bytes * (rows[i].n - 1) / (rows[i].n * rows[i].t_s);
    rows[i].algbw = rows[i].bytes / rows[i].t_s;
  }
  REQUIRE_OK(mlsys_cloud_probe_write_csv(rows, 3, f));
  rewind(f);
  REQUIRE(fgets(line, sizeof line, f));
  CHECK_STR(line, "bytes,n,n_async,t_s,busbw,algbw\n");
  for (i = 0; i < 3; i++) {
    char *p, *e;
    REQUIRE(fgets(line, sizeof line, f));
    p = line;
    back[i].bytes = strtod(p, &e);
    CHECK(*e == ',');
    p = e + 1;
    back[i].n = (int)strtol(p, &e, 10);
    CHECK(*e == ',');
    p = e + 1;
    back[i].n_async = (int)strtol(p, &e, 10);
    CHECK(*e == ',');
    p = e + 1;
    back[i].t_s = strtod(p, &e);
    CHECK(*e == ',');
    p = e + 1;
    back[i].busbw = strtod(p, &e);
    CHECK(*e == ',');
    p = e + 1;
    back[i].algbw = strtod(p, &e);
    CHECK(*e == '\n');
    CHECK(back[i].bytes == rows[i].bytes);
    CHECK_EQ_INT(back[i].n, rows[i].n);
    CHECK_EQ_INT(back[i].n_async, 1);
    CHECK(back[i].t_s == rows[i].t_s);
    CHECK(back[i].busbw == rows[i].busbw);
    CHECK(back[i].algbw == rows[i].algbw);
  }
  CHECK(!fgets(line, sizeof line, f));
  fclose(f);
  CHECK_EQ_INT(mlsys_cloud_probe_write_csv(NULL, 1, stdout), MLSYS_ERR_ARG);
}

TEST_MAIN()
