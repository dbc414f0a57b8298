/* tests/remat_monet_brute.h: shared by tests/test_remat_monet.c and tests/test_remat_monet_catalogue.c: chains
   built in the exporter's convention, and the brute force over MONeT's decisions (every recompute set, keep set,
   implementation, in-place choice and path, priced by the exact simulator), the ILP's oracle on small graphs.
   Include after mlsys_remat.h and tests/test.h. */
#ifndef TESTS_REMAT_MONET_BRUTE_H
#define TESTS_REMAT_MONET_BRUTE_H

/* ---- graphs in the exporter's convention: forward layers, L, then one VJP node per op in reverse order, reading
   the gradients of the op's users and the forward values its PyTorch backward keeps (Conv2d/Linear/MaxPool2d/
   BatchNorm2d/ReLU6: input; ReLU: output; see tests/data/graphs/resnet50_b2.json, mobilenet_v2_b2.json) ---- */
typedef struct { const char *op; double cost; uint64_t mem; int nd; int d[2]; } layer;

static int reads_input(const char *op) {
  return !strcmp(op, "Conv2d") || !strcmp(op, "Linear") || !strcmp(op, "MaxPool2d") || !strcmp(op, "BatchNorm2d") ||
         !strcmp(op, "ReLU6");
}
static int build(const layer *L, int n, uint64_t fixed, mlsys_remat_graph *g) {
  char buf[8192];
  int len = 0, N = 2 * n + 1, loss = n;
  len += snprintf(buf + len, sizeof buf - len, "remat-graph 1\nfixed params=%llu\nnodes %d\n", (unsigned long long)fixed, N);
  for (int i = 0; i < n; i++) {
    len += snprintf(buf + len, sizeof buf - len, "%d F %g %llu - f%d op=%s :", i, L[i].cost, (unsigned long long)L[i].mem, i, L[i].op);
    for (int k = 0; k < L[i].nd; k++) len += snprintf(buf + len, sizeof buf - len, " %d", L[i].d[k]);
    len += snprintf(buf + len, sizeof buf - len, "\n");
  }
  len += snprintf(buf + len, sizeof buf - len, "%d L 1 %llu - loss op=Loss : %d\n", loss, (unsigned long long)L[n - 1].mem, n - 1);
  for (int i = n - 1; i >= 0; i--) {
    int id = loss + (n - i);
    uint64_t gm = 0;
    for (int k = 0; k < L[i].nd; k++) gm += L[L[i].d[k]].mem;
    len += snprintf(buf + len, sizeof buf - len, "%d B %g %llu - g%d op=%sBackward fwd_of=%d :", id,
                    strcmp(L[i].op, "Conv2d") == 0 || strcmp(L[i].op, "Linear") == 0 ? 2 * L[i].cost : L[i].cost,
                    (unsigned long long)gm, i, L[i].op, i);
    if (i == n - 1) len += snprintf(buf + len, sizeof buf - len, " %d", loss);
    for (int j = i + 1; j < n; j++)
      for (int k = 0; k < L[j].nd; k++) if (L[j].d[k] == i) len += snprintf(buf + len, sizeof buf - len, " %d", loss + (n - j));
    if (strcmp(L[i].op, "ReLU") == 0) len += snprintf(buf + len, sizeof buf - len, " %d", i);
    else if (reads_input(L[i].op))
      for (int k = 0; k < L[i].nd; k++) len += snprintf(buf + len, sizeof buf - len, " %d", L[i].d[k]);
    len += snprintf(buf + len, sizeof buf - len, "\n");
  }
  return mlsys_remat_graph_parse(buf, (size_t)len, "test", g);
}

/* ---- the brute force: DP over stages, state = the stored set entering the stage ---- */
#define BF_MAXV 7
typedef struct { int prev, r, ip, so, p; signed char F[BF_MAXV]; } bf_step;
static bf_step bf_trace[16][1 << BF_MAXV];
static int bf_best_state = -1;
static int bf_no_recompute;   /* the ablation (constraint 12): no recomputation, in place wherever possible */
static void bf_schedule(const mlsys_remat_monet_graph *sg, mlsys_remat_monet_schedule *s) {   /* the optimum found */
  int V = sg->V, st = bf_best_state;
  if (mlsys_remat_monet_schedule_alloc(sg->V, sg->T, s) != MLSYS_OK) return;
  for (int t = sg->T - 1; t >= 0; t--) {
    const bf_step *b = &bf_trace[t][st];
    for (int i = 0; i < V; i++) {
      s->R[t * V + i] = (b->r >> i) & 1; s->IP[t * V + i] = (b->ip >> i) & 1; s->F[t * V + i] = b->F[i];
      s->S[(t + 1) * V + i] = (st >> i) & 1;
    }
    s->M[t] = (signed char)(t > 0 ? b->p : 0);
    st = b->prev;
  }
}
static double brute_force(const mlsys_remat_monet_graph *sg, uint64_t budget, int sweep) {
  int V = sg->V, T = sg->T, NS = 1 << V;
  double *best = (double *)malloc(sizeof(double) * NS), *next = (double *)malloc(sizeof(double) * NS), res = INFINITY;
  unsigned char Sin[BF_MAXV], R[BF_MAXV], Sout[BF_MAXV], IP[BF_MAXV];
  signed char F[BF_MAXV];
  char why[200];
  if (V > BF_MAXV) { free(best); free(next); return NAN; }
  for (int s = 0; s < NS; s++) best[s] = INFINITY;
  best[0] = 0;
  for (int t = 0; t < T; t++) {
    int np = t > 0 ? sg->path_off[t + 1] - sg->path_off[t] : 1;
    for (int s = 0; s < NS; s++) next[s] = INFINITY;
    for (int sin = 0; sin < NS; sin++) {
      if (best[sin] == INFINITY) continue;
      for (int i = 0; i < V; i++) Sin[i] = (sin >> i) & 1;
      for (int r = 0; r < NS; r++) {
        int ipcap = 0, nmulti = 0, multi[BF_MAXV];
        for (int i = 0; i < V; i++) {
          R[i] = (r >> i) & 1;
          if (R[i] && sg->inplace_of[i] >= 0) ipcap |= 1 << i;
          if (R[i] && sg->impl_off[i + 1] - sg->impl_off[i] > 1) multi[nmulti++] = i;
        }
        if (t == 0) { int ok = 1; for (int i = 0; i < V; i++) if (sg->parent[i] < 0 && !R[i]) ok = 0; if (!ok) continue; }
        if (bf_no_recompute && t > 0 && r != 0) continue;
        for (int ip = ipcap;; ip = (ip - 1) & ipcap) {
          if (bf_no_recompute && ip != ipcap) { if (ip == 0) break; continue; }
          int nfc = 1;
          for (int i = 0; i < V; i++) IP[i] = (ip >> i) & 1;
          for (int k = 0; k < nmulti; k++) nfc *= sg->impl_off[multi[k] + 1] - sg->impl_off[multi[k]];
          for (int fc = 0; fc < nfc; fc++) {
            int x = fc, avail = sin | r;
            for (int i = 0; i < V; i++) F[i] = R[i] ? 0 : -1;
            for (int k = 0; k < nmulti; k++) {
              int ni = sg->impl_off[multi[k] + 1] - sg->impl_off[multi[k]];
              F[multi[k]] = (signed char)(x % ni); x /= ni;
            }
            for (int so = avail;; so = (so - 1) & avail) {
              for (int i = 0; i < V; i++) Sout[i] = (so >> i) & 1;
              for (int p = 0; p < np; p++) {   /* every path, the new 'c' / 'o' and split ones included */
                uint64_t pk = 0;
                double c = 0;
                if (mlsys__mn_stage(sg, t, Sin, R, Sout, IP, F, p, sweep, &pk, NULL, &c, why, sizeof why) && pk <= budget &&
                    best[sin] + c < next[so]) {
                  bf_step *b = &bf_trace[t][so];
                  next[so] = best[sin] + c;
                  b->prev = sin; b->r = r; b->ip = ip; b->so = so; b->p = p;
                  memcpy(b->F, F, sizeof b->F);
                }
              }
              if (so == 0) break;
            }
          }
          if (ip == 0) break;
        }
      }
    }
    { double *tmp = best; best = next; next = tmp; }
  }
  for (int s = 0; s < NS; s++) if (best[s] < res) { res = best[s]; bf_best_state = s; }
  free(best); free(next);
  return res;
}

static mlsys_remat_monet_opts exact_opts(void) {
  mlsys_remat_monet_opts o;
  memset(&o, 0, sizeof o);
  o.time_limit = NEVER_BINDS; o.mem_unit = 1; o.cost_unit = 1;
  return o;
}

#endif
