/* wip/xfer_profile.h — Skyplane's network profiler (thesis §4.3.2, spec §3.9) for mlsys_transfer.h: an
   iperf3-like memory-to-memory TCP goodput probe between two hosts. Fragment of mlsys_transfer.h while the parts
   are built separately; at merge time it becomes one section of that header.

   Skyplane profiles every ordered region pair with iperf3 (64 parallel connections, 5 s, CUBIC) and feeds the
   measured throughput_sent grid to its planner. This is the same measurement without iperf3: a server that
   accepts any number of parallel connections and discards what it reads, and a client that streams from N
   connections for a fixed time. The number that matters is GOODPUT: bytes the server says it received, over the
   server's own receive interval, not bytes the client managed to push into its socket buffers (on a slow link the
   send buffers alone hold seconds of data; sent_gbps shows that difference).

   In exactly one C file:

       #define MLSYS_XFER_PROFILE_IMPLEMENTATION      // or MLSYS_IMPLEMENTATION
       #include "wip/xfer_profile.h"                   // link: -lpthread

       mlsys_xfer_profile_server *srv;
       int port;
       mlsys_xfer_profile_serve("127.0.0.1", 0, &port, &srv);        // port 0 → any free port
       mlsys_xfer_profile_result r;
       if (mlsys_xfer_profile_pair("127.0.0.1", port, 8, 2.0, &r) == MLSYS_OK)
         printf("%.2f Gbps goodput, %.2f Gbps into sockets, RTT %.2f ms\n", r.recv_gbps, r.sent_gbps,
                r.connect_ms_min);
       else puts(mlsys_last_error());
       mlsys_xfer_profile_stop(srv);

   SAFETY GUARD: both ends refuse every address that is not loopback (127.0.0.0/8, ::1, "localhost") or private
   IPv4 (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16: the emulated WAN of scripts/xfer-netns.sh). Host names are
   never resolved (no DNS traffic): only numeric addresses and the literal "localhost" are accepted.

   WIRE (all integers big-endian):
     client → server, once per connection: "SKYPROF1" u32 version=1, u32 conn index, u32 nconn, u32 omit_ms,
       u64 session id (32 bytes); then payload until the client shuts down its write side.
     server → client, after EOF: "SKYPROFR" u64 bytes_total, u64 bytes_measured, i64 measure_start_ns,
       i64 last_byte_ns (40 bytes; the two times on the server's monotonic clock, which every connection of one
       server shares, so the client can put the per-connection windows on one time line).

   NOT DONE: UDP, reverse mode (server sends), CPU utilisation (the grid's cpu_utilization column), IPv6 private
   ranges, TLS. The profile of a whole region grid is the planner's business (it calls pair() per ordered pair).
*/
#ifndef MLSYS_XFER_PROFILE_H
#define MLSYS_XFER_PROFILE_H
#include "mlsys_common.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int nconn;          /* parallel TCP connections; 0 → 8 (Skyplane's grid used 64) */
  double seconds;     /* sending time; 0 → 5 (Skyplane's grid) */
  double omit_s;      /* leading seconds left out of recv_gbps (TCP slow start); 0 → min(1, seconds / 5);
                         < 0 → none (iperf3's default) */
  double timeout_s;   /* limit on connect and on any one blocked send/receive; 0 → 10 */
  int buf_bytes;      /* bytes per send() call; 0 → 128 KiB */
} mlsys_xfer_profile_opts;

typedef struct {
  int nconn;                   /* connections that ran */
  double seconds;              /* the client's sending time, first send to last send */
  double omit_s;               /* the omit interval that was applied */
  uint64_t bytes_sent;         /* written into sockets by the client */
  uint64_t bytes_received;     /* counted by the server until EOF (equals bytes_sent on success) */
  uint64_t bytes_measured;     /* the part of bytes_received that arrived after the omit interval */
  double sent_gbps;            /* bytes_sent*8/seconds/1e9: socket-buffer fill included, so optimistic */
  double recv_gbps;            /* goodput: bytes_measured*8 / the server's receive window / 1e9 */
  double recv_window_s;        /* that window: first measured byte of any connection to the last byte of all */
  double connect_ms_min;       /* fastest TCP handshake: one round trip (+ setup cost) */
  double connect_ms_mean;
  double rtt_ms;               /* mean smoothed RTT of the connections at the end of sending (Linux
                                  TCP_INFO; 0 where unavailable) */
} mlsys_xfer_profile_result;

typedef struct mlsys_xfer_profile_server mlsys_xfer_profile_server;

/* Listens on host:port (port 0 → any free port; *bound_port receives the port, may be NULL) and serves every
   connection on its own thread until mlsys_xfer_profile_stop. Refuses non-loopback, non-private hosts. */
MLSYS_DEF mlsys_status mlsys_xfer_profile_serve(const char *host, int port, int *bound_port,
                                                mlsys_xfer_profile_server **out);
MLSYS_DEF int mlsys_xfer_profile_server_port(const mlsys_xfer_profile_server *s);
/* Connections the server has completed (a reply sent), for tests and logs. */
MLSYS_DEF long mlsys_xfer_profile_server_completed(const mlsys_xfer_profile_server *s);
/* Stops listening, cuts every open connection, joins every thread and frees s. NULL is a no-op. */
MLSYS_DEF void mlsys_xfer_profile_stop(mlsys_xfer_profile_server *s);

/* Streams from nconn connections to a profile server for `seconds` (0 → the defaults above) and fills *r. */
MLSYS_DEF mlsys_status mlsys_xfer_profile_pair(const char *host, int port, int nconn, double seconds,
                                               mlsys_xfer_profile_result *r);
MLSYS_DEF mlsys_status mlsys_xfer_profile_pair_ex(const char *host, int port, const mlsys_xfer_profile_opts *o,
                                                  mlsys_xfer_profile_result *r);

/* MLSYS_OK when host may be probed (see SAFETY GUARD); else MLSYS_ERR_ARG naming the host and the rule. */
MLSYS_DEF mlsys_status mlsys_xfer_profile_check_host(const char *host);

#ifdef __cplusplus
}
#endif
#endif /* MLSYS_XFER_PROFILE_H */

/* ================================================================================================================
   Implementation
   ================================================================================================================ */
#if defined(MLSYS_IMPLEMENTATION) && !defined(MLSYS_XFER_PROFILE_IMPLEMENTATION)
#define MLSYS_XFER_PROFILE_IMPLEMENTATION
#endif
#if defined(MLSYS_XFER_PROFILE_IMPLEMENTATION) && !defined(MLSYS__XFER_PROFILE_DONE)
#define MLSYS__XFER_PROFILE_DONE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MLSYS__XFER_PROF_HELLO 32
#define MLSYS__XFER_PROF_REPLY 40
#define MLSYS__XFER_PROF_RECVBUF (256 * 1024)

static void mlsys__xfer_put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}
static void mlsys__xfer_put64(unsigned char *p, uint64_t v) {
  mlsys__xfer_put32(p, (uint32_t)(v >> 32));
  mlsys__xfer_put32(p + 4, (uint32_t)v);
}
static uint32_t mlsys__xfer_get32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static uint64_t mlsys__xfer_get64(const unsigned char *p) {
  return ((uint64_t)mlsys__xfer_get32(p) << 32) | mlsys__xfer_get32(p + 4);
}

/* Nanoseconds on the monotonic clock: the server's timestamps go over the wire as integers. */
static int64_t mlsys__xfer_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The guard. getaddrinfo is deliberately not used: resolving a name is already traffic to a DNS server. */
typedef struct {
  int family;
  struct sockaddr_in v4;
  struct sockaddr_in6 v6;
} mlsys__xfer_addr;

static mlsys_status mlsys__xfer_parse_host(const char *host, int port, mlsys__xfer_addr *a) {
  static const char *rule = "the profiler only talks to loopback (127.0.0.0/8, ::1, localhost) or private "
                            "addresses (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16: emulated namespaces); "
                            "host names are not resolved";
  memset(a, 0, sizeof *a);
  if (!host || !*host) return mlsys_set_error(MLSYS_ERR_ARG, "profile: empty host refused: %s", rule);
  if (port < 0 || port > 65535) return mlsys_set_error(MLSYS_ERR_ARG, "profile: port %d out of range", port);
  const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, h, &a->v4.sin_addr) == 1) {
    uint32_t ip = ntohl(a->v4.sin_addr.s_addr);
    int ok = (ip >> 24) == 127 || (ip >> 24) == 10 || (ip >> 20) == ((172u << 4) | 1u) ||
             (ip >> 16) == ((192u << 8) | 168u);
    if (!ok) return mlsys_set_error(MLSYS_ERR_ARG, "profile: host '%s' refused: %s", host, rule);
    a->family = AF_INET;
    a->v4.sin_family = AF_INET;
    a->v4.sin_port = htons((uint16_t)port);
    return MLSYS_OK;
  }
  if (inet_pton(AF_INET6, h, &a->v6.sin6_addr) == 1) {
    if (!IN6_IS_ADDR_LOOPBACK(&a->v6.sin6_addr))
      return mlsys_set_error(MLSYS_ERR_ARG, "profile: host '%s' refused: %s", host, rule);
    a->family = AF_INET6;
    a->v6.sin6_family = AF_INET6;
    a->v6.sin6_port = htons((uint16_t)port);
    return MLSYS_OK;
  }
  return mlsys_set_error(MLSYS_ERR_ARG, "profile: host '%s' refused: not a numeric address; %s", host, rule);
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_check_host(const char *host) {
  mlsys__xfer_addr a;
  return mlsys__xfer_parse_host(host, 0, &a);
}

static const struct sockaddr *mlsys__xfer_sa(const mlsys__xfer_addr *a, socklen_t *len) {
  if (a->family == AF_INET6) { *len = (socklen_t)sizeof a->v6; return (const struct sockaddr *)&a->v6; }
  *len = (socklen_t)sizeof a->v4;
  return (const struct sockaddr *)&a->v4;
}

static void mlsys__xfer_set_timeouts(int fd, double seconds) {
  struct timeval tv;
  tv.tv_sec = (time_t)seconds;
  tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Reads exactly n bytes; 0 on success, else errno-like (ECONNRESET on a short stream). */
static int mlsys__xfer_read_full(int fd, unsigned char *p, size_t n) {
  while (n) {
    ssize_t k = recv(fd, p, n, 0);
    if (k == 0) return ECONNRESET;
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += k; n -= (size_t)k;
  }
  return 0;
}
static int mlsys__xfer_write_full(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += k; n -= (size_t)k;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------------------------
   Server
   --------------------------------------------------------------------------------------------------------------- */
typedef struct mlsys__xfer_pconn {
  int fd;
  int done;                      /* set by the connection thread as it leaves (under the server mutex) */
  pthread_t th;
  struct mlsys_xfer_profile_server *srv;
  struct mlsys__xfer_pconn *next;
} mlsys__xfer_pconn;

struct mlsys_xfer_profile_server {
  int lfd, port;
  int wake[2];                   /* a byte here wakes the accept loop's poll() to stop */
  pthread_t accept_th;
  pthread_mutex_t mu;
  int stopping;
  long completed;
  mlsys__xfer_pconn *conns;
};

static void *mlsys__xfer_serve_conn(void *arg) {
  mlsys__xfer_pconn *c = (mlsys__xfer_pconn *)arg;
  mlsys_xfer_profile_server *s = c->srv;
  unsigned char hello[MLSYS__XFER_PROF_HELLO], reply[MLSYS__XFER_PROF_REPLY];
  unsigned char *buf = (unsigned char *)mlsys_alloc(MLSYS__XFER_PROF_RECVBUF, 1);
  /* A half-open peer must not pin a thread forever; a stop() cuts the socket anyway. */
  mlsys__xfer_set_timeouts(c->fd, 30);
  if (buf && mlsys__xfer_read_full(c->fd, hello, sizeof hello) == 0 && memcmp(hello, "SKYPROF1", 8) == 0 &&
      mlsys__xfer_get32(hello + 8) == 1) {
    int64_t omit_ns = (int64_t)mlsys__xfer_get32(hello + 20) * 1000000;
    uint64_t total = 0, measured = 0;
    int64_t first = -1, mstart = 0, last = 0;
    int ok = 1;
    for (;;) {
      ssize_t k = recv(c->fd, buf, MLSYS__XFER_PROF_RECVBUF, 0);
      if (k == 0) break;
      if (k < 0) {
        if (errno == EINTR) continue;
        ok = 0;
        break;
      }
      int64_t now = mlsys__xfer_now_ns();
      if (first < 0) { first = now; mstart = now + omit_ns; }
      total += (uint64_t)k;
      if (now >= mstart) measured += (uint64_t)k;
      last = now;
    }
    if (ok) {
      memcpy(reply, "SKYPROFR", 8);
      mlsys__xfer_put64(reply + 8, total);
      mlsys__xfer_put64(reply + 16, measured);
      mlsys__xfer_put64(reply + 24, (uint64_t)mstart);
      mlsys__xfer_put64(reply + 32, (uint64_t)last);
      if (mlsys__xfer_write_full(c->fd, reply, sizeof reply) == 0) {
        pthread_mutex_lock(&s->mu);
        s->completed++;
        pthread_mutex_unlock(&s->mu);
      }
    }
  }
  mlsys_free(buf);
  pthread_mutex_lock(&s->mu);
  c->done = 1;
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Joins and frees finished connections so a long-lived server does not grow. Caller holds no lock. */
static void mlsys__xfer_reap(mlsys_xfer_profile_server *s, int all) {
  for (;;) {
    mlsys__xfer_pconn *victim = NULL, **pp;
    pthread_mutex_lock(&s->mu);
    for (pp = &s->conns; *pp; pp = &(*pp)->next)
      if (all || (*pp)->done) { victim = *pp; *pp = victim->next; break; }
    pthread_mutex_unlock(&s->mu);
    if (!victim) return;
    pthread_join(victim->th, NULL);
    close(victim->fd);
    mlsys_free(victim);
  }
}

static void *mlsys__xfer_accept_loop(void *arg) {
  mlsys_xfer_profile_server *s = (mlsys_xfer_profile_server *)arg;
  for (;;) {
    struct pollfd p[2];
    p[0].fd = s->lfd; p[0].events = POLLIN; p[0].revents = 0;
    p[1].fd = s->wake[0]; p[1].events = POLLIN; p[1].revents = 0;
    int k = poll(p, 2, 1000);
    if (k < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    mlsys__xfer_reap(s, 0);
    if (k <= 0 || !(p[0].revents & POLLIN)) continue;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0) continue;
    mlsys__xfer_pconn *c = (mlsys__xfer_pconn *)mlsys_calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->fd = fd;
    c->srv = s;
    pthread_mutex_lock(&s->mu);
    if (s->stopping || pthread_create(&c->th, NULL, mlsys__xfer_serve_conn, c) != 0) {
      pthread_mutex_unlock(&s->mu);
      close(fd);
      mlsys_free(c);
      continue;
    }
    c->next = s->conns;
    s->conns = c;
    pthread_mutex_unlock(&s->mu);
  }
  return NULL;
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_serve(const char *host, int port, int *bound_port,
                                                mlsys_xfer_profile_server **out) {
  mlsys__xfer_addr a;
  socklen_t len;
  const struct sockaddr *sa;
  int one = 1;
  if (!out) return mlsys_set_error(MLSYS_ERR_ARG, "profile serve: out is NULL");
  *out = NULL;
  mlsys_status st = mlsys__xfer_parse_host(host, port, &a);
  if (st) return st;
  mlsys_xfer_profile_server *s = (mlsys_xfer_profile_server *)mlsys_calloc(1, sizeof *s);
  if (!s) return MLSYS_ERR_NOMEM;
  s->lfd = socket(a.family, SOCK_STREAM, 0);
  s->wake[0] = s->wake[1] = -1;
  if (s->lfd < 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: socket: %s", strerror(errno));
    goto fail;
  }
  setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sa = mlsys__xfer_sa(&a, &len);
  if (bind(s->lfd, sa, len) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: bind %s:%d: %s", host, port, strerror(errno));
    goto fail;
  }
  if (listen(s->lfd, 256) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: listen: %s", strerror(errno));
    goto fail;
  }
  {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(s->lfd, (struct sockaddr *)&ss, &sl);
    s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  if (pipe(s->wake) != 0) {
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: pipe: %s", strerror(errno));
    goto fail;
  }
  pthread_mutex_init(&s->mu, NULL);
  if (pthread_create(&s->accept_th, NULL, mlsys__xfer_accept_loop, s) != 0) {
    pthread_mutex_destroy(&s->mu);
    st = mlsys_set_error(MLSYS_ERR_IO, "profile serve: cannot start the accept thread");
    goto fail;
  }
  if (bound_port) *bound_port = s->port;
  *out = s;
  return MLSYS_OK;
fail:
  if (s->lfd >= 0) close(s->lfd);
  if (s->wake[0] >= 0) { close(s->wake[0]); close(s->wake[1]); }
  mlsys_free(s);
  return st;
}

MLSYS_DEF int mlsys_xfer_profile_server_port(const mlsys_xfer_profile_server *s) { return s ? s->port : 0; }

MLSYS_DEF long mlsys_xfer_profile_server_completed(const mlsys_xfer_profile_server *s) {
  long n;
  if (!s) return 0;
  pthread_mutex_lock((pthread_mutex_t *)&s->mu);
  n = s->completed;
  pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
  return n;
}

MLSYS_DEF void mlsys_xfer_profile_stop(mlsys_xfer_profile_server *s) {
  mlsys__xfer_pconn *c;
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_mutex_unlock(&s->mu);
  {
    ssize_t w = write(s->wake[1], "x", 1);
    (void)w;
  }
  pthread_join(s->accept_th, NULL);
  /* shutdown() wakes a thread blocked in recv() on this socket; close() alone would not. */
  pthread_mutex_lock(&s->mu);
  for (c = s->conns; c; c = c->next) shutdown(c->fd, SHUT_RDWR);
  pthread_mutex_unlock(&s->mu);
  mlsys__xfer_reap(s, 1);
  close(s->lfd);
  close(s->wake[0]);
  close(s->wake[1]);
  pthread_mutex_destroy(&s->mu);
  mlsys_free(s);
}

/* ---------------------------------------------------------------------------------------------------------------
   Client
   --------------------------------------------------------------------------------------------------------------- */
typedef struct {
  /* shared */
  const mlsys__xfer_addr *addr;
  int nconn, buf_bytes;
  double seconds, timeout_s;
  uint32_t omit_ms;
  uint64_t session;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
  int *arrived, *failed;
  double *t_start;               /* the common start of sending, set by the last thread to arrive */
  /* per connection */
  int index, err;
  char what[64];
  double connect_ms, t_end, rtt_ms;
  uint64_t sent;
  unsigned char reply[MLSYS__XFER_PROF_REPLY];
} mlsys__xfer_pclient;

/* Every connection is set up before any sends, so the measured window does not contain handshakes, and a
   failed connection stops the others before they send anything. */
static int mlsys__xfer_barrier(mlsys__xfer_pclient *c, int ok) {
  int go;
  pthread_mutex_lock(c->mu);
  if (!ok) (*c->failed)++;
  if (++*c->arrived == c->nconn) {
    *c->t_start = mlsys_now();
    pthread_cond_broadcast(c->cv);
  } else {
    while (*c->arrived < c->nconn) pthread_cond_wait(c->cv, c->mu);
  }
  go = *c->failed == 0;
  pthread_mutex_unlock(c->mu);
  return go;
}

static void *mlsys__xfer_client_conn(void *arg) {
  mlsys__xfer_pclient *c = (mlsys__xfer_pclient *)arg;
  socklen_t len;
  const struct sockaddr *sa = mlsys__xfer_sa(c->addr, &len);
  unsigned char hello[MLSYS__XFER_PROF_HELLO];
  unsigned char *buf = NULL;
  int fd = socket(c->addr->family, SOCK_STREAM, 0), ok = fd >= 0;
  if (!ok) { c->err = errno; snprintf(c->what, sizeof c->what, "socket"); }
  if (ok) {
    mlsys__xfer_set_timeouts(fd, c->timeout_s);
    double t0 = mlsys_now();
    if (connect(fd, sa, len) != 0) { ok = 0; c->err = errno; snprintf(c->what, sizeof c->what, "connect"); }
    c->connect_ms = (mlsys_now() - t0) * 1e3;
  }
  if (ok) {
    memcpy(hello, "SKYPROF1", 8);
    mlsys__xfer_put32(hello + 8, 1);
    mlsys__xfer_put32(hello + 12, (uint32_t)c->index);
    mlsys__xfer_put32(hello + 16, (uint32_t)c->nconn);
    mlsys__xfer_put32(hello + 20, c->omit_ms);
    mlsys__xfer_put64(hello + 24, c->session);
    if ((c->err = mlsys__xfer_write_full(fd, hello, sizeof hello)) != 0) {
      ok = 0;
      snprintf(c->what, sizeof c->what, "send hello");
    }
  }
  if (ok && !(buf = (unsigned char *)mlsys_calloc((size_t)c->buf_bytes, 1))) {
    ok = 0;
    c->err = ENOMEM;
    snprintf(c->what, sizeof c->what, "buffer");
  }
  if (mlsys__xfer_barrier(c, ok)) {
    double deadline = *c->t_start + c->seconds;
    while (mlsys_now() < deadline) {
      ssize_t k = send(fd, buf, (size_t)c->buf_bytes, MSG_NOSIGNAL);
      if (k < 0) {
        if (errno == EINTR) continue;
        c->err = errno;
        snprintf(c->what, sizeof c->what, "send");
        break;
      }
      c->sent += (uint64_t)k;
    }
    c->t_end = mlsys_now();
#ifdef __linux__
    {
      /* The head of Linux's struct tcp_info (a stable kernel ABI), spelled out because glibc hides the struct
         under _POSIX_C_SOURCE: 8 one-byte fields, then u32 fields of which tcpi_rtt (µs) is the 16th. */
      struct { unsigned char u8[8]; uint32_t u32[16]; } ti;
      socklen_t tl = sizeof ti;
      if (getsockopt(fd, IPPROTO_TCP, 11 /* TCP_INFO */, &ti, &tl) == 0 && tl >= sizeof ti)
        c->rtt_ms = ti.u32[15] / 1e3;
    }
#endif
    if (!c->err) {
      /* The server answers after EOF, i.e. after it has read everything still queued on the way. */
      shutdown(fd, SHUT_WR);
      mlsys__xfer_set_timeouts(fd, c->timeout_s + c->seconds + 60);
      if ((c->err = mlsys__xfer_read_full(fd, c->reply, sizeof c->reply)) != 0)
        snprintf(c->what, sizeof c->what, "read the server's reply");
      else if (memcmp(c->reply, "SKYPROFR", 8) != 0) {
        c->err = EPROTO;
        snprintf(c->what, sizeof c->what, "read the server's reply (bad magic)");
      }
    }
  }
  mlsys_free(buf);
  if (fd >= 0) close(fd);
  return NULL;
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_pair_ex(const char *host, int port, const mlsys_xfer_profile_opts *o,
                                                  mlsys_xfer_profile_result *r) {
  mlsys_xfer_profile_opts d;
  mlsys__xfer_addr a;
  mlsys_status st;
  if (!r) return mlsys_set_error(MLSYS_ERR_ARG, "profile: result pointer is NULL");
  memset(r, 0, sizeof *r);
  memset(&d, 0, sizeof d);
  if (o) d = *o;
  if (d.nconn == 0) d.nconn = 8;
  if (d.seconds == 0) d.seconds = 5;
  if (d.omit_s == 0) d.omit_s = d.seconds / 5 < 1 ? d.seconds / 5 : 1;
  if (d.omit_s < 0) d.omit_s = 0;
  if (d.timeout_s == 0) d.timeout_s = 10;
  if (d.buf_bytes == 0) d.buf_bytes = 128 * 1024;
  if (d.nconn < 1 || d.nconn > 1024)
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: nconn %d out of range [1, 1024]", d.nconn);
  if (!(d.seconds > 0 && d.seconds <= 3600))
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: seconds %g out of range (0, 3600]", d.seconds);
  if (!(d.omit_s < d.seconds))
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: omit %g s leaves nothing of %g s to measure", d.omit_s,
                           d.seconds);
  if (!(d.timeout_s > 0) || d.buf_bytes < 1)
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: timeout_s and buf_bytes must be positive");
  if (port <= 0 || port > 65535) return mlsys_set_error(MLSYS_ERR_ARG, "profile: port %d out of range", port);
  if ((st = mlsys__xfer_parse_host(host, port, &a)) != MLSYS_OK) return st;

  mlsys__xfer_pclient *cs = (mlsys__xfer_pclient *)mlsys_calloc((size_t)d.nconn, sizeof *cs);
  pthread_t *th = (pthread_t *)mlsys_calloc((size_t)d.nconn, sizeof *th);
  if (!cs || !th) { mlsys_free(cs); mlsys_free(th); return MLSYS_ERR_NOMEM; }
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived = 0, failed = 0, started = 0, i;
  double t_start = 0;
  pthread_mutex_init(&mu, NULL);
  pthread_cond_init(&cv, NULL);
  uint64_t session = (uint64_t)mlsys__xfer_now_ns() ^ ((uint64_t)getpid() << 32);
  for (i = 0; i < d.nconn; i++) {
    mlsys__xfer_pclient *c = &cs[i];
    c->addr = &a; c->nconn = d.nconn; c->buf_bytes = d.buf_bytes; c->seconds = d.seconds;
    c->timeout_s = d.timeout_s; c->omit_ms = (uint32_t)(d.omit_s * 1e3 + 0.5); c->session = session;
    c->mu = &mu; c->cv = &cv; c->arrived = &arrived; c->failed = &failed; c->t_start = &t_start;
    c->index = i;
  }
  for (i = 0; i < d.nconn; i++) {
    if (pthread_create(&th[i], NULL, mlsys__xfer_client_conn, &cs[i]) != 0) break;
    started++;
  }
  if (started < d.nconn) {
    /* Stand in for the threads that never started, so the barrier opens and the others give up. */
    pthread_mutex_lock(&mu);
    failed++;
    arrived += d.nconn - started;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  for (i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_cond_destroy(&cv);
  pthread_mutex_destroy(&mu);

  st = MLSYS_OK;
  if (started < d.nconn)
    st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: could not start %d threads", host, port, d.nconn);
  for (i = 0; i < started && st == MLSYS_OK; i++)
    if (cs[i].err)
      st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: connection %d of %d: %s: %s", host, port, i, d.nconn,
                           cs[i].what, strerror(cs[i].err));
  if (st == MLSYS_OK) {
    int64_t wstart = INT64_MAX, wend = INT64_MIN;
    double t_end = 0, rtt = 0;
    r->nconn = d.nconn;
    r->omit_s = d.omit_s;
    r->connect_ms_min = cs[0].connect_ms;
    for (i = 0; i < d.nconn; i++) {
      const mlsys__xfer_pclient *c = &cs[i];
      uint64_t measured = mlsys__xfer_get64(c->reply + 16);
      int64_t ms = (int64_t)mlsys__xfer_get64(c->reply + 24), le = (int64_t)mlsys__xfer_get64(c->reply + 32);
      r->bytes_sent += c->sent;
      r->bytes_received += mlsys__xfer_get64(c->reply + 8);
      r->bytes_measured += measured;
      if (measured > 0) {
        if (ms < wstart) wstart = ms;
        if (le > wend) wend = le;
      }
      if (c->t_end > t_end) t_end = c->t_end;
      if (c->connect_ms < r->connect_ms_min) r->connect_ms_min = c->connect_ms;
      r->connect_ms_mean += c->connect_ms / d.nconn;
      rtt += c->rtt_ms / d.nconn;
    }
    r->rtt_ms = rtt;
    r->seconds = t_end - t_start;
    if (r->seconds > 0) r->sent_gbps = (double)r->bytes_sent * 8 / r->seconds / 1e9;
    if (wend > wstart) {
      r->recv_window_s = (double)(wend - wstart) / 1e9;
      r->recv_gbps = (double)r->bytes_measured * 8 / r->recv_window_s / 1e9;
    }
    if (r->bytes_received != r->bytes_sent)
      st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: server counted %llu bytes, client sent %llu", host, port,
                           (unsigned long long)r->bytes_received, (unsigned long long)r->bytes_sent);
    else if (r->bytes_measured == 0)
      st = mlsys_set_error(MLSYS_ERR_IO, "profile %s:%d: nothing arrived after the %g s omit interval", host,
                           port, d.omit_s);
  }
  mlsys_free(cs);
  mlsys_free(th);
  return st;
}

MLSYS_DEF mlsys_status mlsys_xfer_profile_pair(const char *host, int port, int nconn, double seconds,
                                               mlsys_xfer_profile_result *r) {
  mlsys_xfer_profile_opts o;
  memset(&o, 0, sizeof o);
  o.nconn = nconn;
  o.seconds = seconds;
  if (nconn <= 0) {
    if (r) memset(r, 0, sizeof *r);
    return mlsys_set_error(MLSYS_ERR_ARG, "profile: nconn must be >= 1 (got %d)", nconn);
  }
  return mlsys_xfer_profile_pair_ex(host, port, &o, r);
}
#endif /* MLSYS_XFER_PROFILE_IMPLEMENTATION */
