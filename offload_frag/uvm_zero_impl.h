/* ================================================================================================================
   UVM and ZeRO-Offload simulators (spec §4.2, §4.4)
   ================================================================================================================ */
/* Page states. PIN marks the pages of the op being served: they are never evicted for it. */
enum { MLSYS__UVM_FREE, MLSYS__UVM_HOST, MLSYS__UVM_FRESH, MLSYS__UVM_GPU, MLSYS__UVM_PIN = 0x80 };

/* A chunk's place in the LRU-by-migration order. Migration times only grow, so the order is a FIFO: a chunk that
   migrates again is appended with its new time and its older entry goes stale (time mismatch). */
typedef struct {
  int64_t chunk, stamp;
} mlsys__uvm_ent;

typedef struct {
  const mlsys_offload_trace *tr;
  const mlsys_offload_facts *f;
  int64_t page, ppc, cap;      /* page bytes, pages per chunk, resident capacity in pages */
  int64_t npages, nchunk;
  int64_t *p0, *w0;            /* first page of each tensor / of each op's workspace */
  unsigned char *st;           /* [npages] */
  int64_t *nres, *stamp;       /* [nchunk] resident pages, migration time */
  int64_t *mark, mark_now;     /* [n_t] tensors already seen in the current op */
  mlsys__uvm_ent *q;
  int64_t qh, qn, qcap, seq;
  int64_t resident, peak, in_pages, out_pages;
  int n_faults, n_evict;
  double mig_us;
} mlsys__uvm;

static int mlsys__uvm_persist(const mlsys__uvm *u, int t) {
  int k = u->tr->t[t].kind;
  return k == MLSYS_OFFLOAD_T_PARAM || k == MLSYS_OFFLOAD_T_OPT || u->f->first_write[t] < 0;
}

static int64_t mlsys__uvm_np(const mlsys__uvm *u, int64_t bytes) { return bytes / u->page + (bytes % u->page != 0); }

static void mlsys__uvm_free(mlsys__uvm *u) {
  mlsys_free(u->p0);
  mlsys_free(u->w0);
  mlsys_free(u->st);
  mlsys_free(u->nres);
  mlsys_free(u->stamp);
  mlsys_free(u->mark);
  mlsys_free(u->q);
}

/* Pages [a, a+n) leave the GPU with no copy (a dead tensor or a finished workspace). */
static void mlsys__uvm_release(mlsys__uvm *u, int64_t a, int64_t n) {
  int64_t p;
  for (p = a; p < a + n; p++) {
    if (u->st[p] == MLSYS__UVM_GPU) {
      u->nres[p / u->ppc]--;
      u->resident--;
    }
    u->st[p] = MLSYS__UVM_FREE;
  }
}

/* The ranges an op touches, in migration order: distinct inputs, distinct outputs not read, workspace. Fills
   a[]/n[] (room for n_in + n_out + 1) and returns their count. */
static int mlsys__uvm_ranges(mlsys__uvm *u, int i, int64_t *a, int64_t *n) {
  const mlsys_offload_op *o = &u->tr->op[i];
  int j, k = 0;
  u->mark_now++;
  for (j = 0; j < o->n_in + o->n_out; j++) {
    int t = u->tr->ids[j < o->n_in ? o->in0 + j : o->out0 + j - o->n_in];
    if (u->mark[t] == u->mark_now) continue;
    u->mark[t] = u->mark_now;
    a[k] = u->p0[t];
    n[k++] = mlsys__uvm_np(u, u->tr->t[t].bytes);
  }
  a[k] = u->w0[i];
  n[k++] = mlsys__uvm_np(u, o->workspace);
  return k;
}

/* Serve and run op i. Returns the pages it touches when they exceed the capacity (it cannot run), else 0. */
static int64_t mlsys__uvm_op(mlsys__uvm *u, int i, double fault_us, double h2d, double d2h, int64_t *a, int64_t *n) {
  const mlsys_offload_op *o = &u->tr->op[i];
  int64_t need = 0, host = 0, fresh = 0, over, ev = 0, pos, p;
  int j, k;
  /* tensors first written here, and the workspace, come into existence: no data anywhere yet */
  for (j = 0; j < o->n_out; j++) {
    int t = u->tr->ids[o->out0 + j];
    if (!mlsys__uvm_persist(u, t) && u->f->first_write[t] == i && u->st[u->p0[t]] == MLSYS__UVM_FREE)
      memset(u->st + u->p0[t], MLSYS__UVM_FRESH, (size_t)mlsys__uvm_np(u, u->tr->t[t].bytes));
  }
  k = mlsys__uvm_ranges(u, i, a, n);
  memset(u->st + a[k - 1], MLSYS__UVM_FRESH, (size_t)n[k - 1]);
  for (j = 0; j < k; j++)
    for (p = a[j]; p < a[j] + n[j]; p++) {
      unsigned char s = u->st[p];
      need++;
      if (s == MLSYS__UVM_HOST) host++;
      else if (s != MLSYS__UVM_GPU) fresh++;
      u->st[p] = (unsigned char)(s | MLSYS__UVM_PIN);
    }
  if (need > u->cap) {
    for (j = 0; j < k; j++)
      for (p = a[j]; p < a[j] + n[j]; p++) u->st[p] &= (unsigned char)~MLSYS__UVM_PIN;
    return need;
  }
  /* room: evict chunks in migration order, each writing back its resident pages this op does not touch. Enough
     exist: need <= cap, so resident - (need - host - fresh) >= over. */
  over = u->resident + host + fresh - u->cap;
  for (pos = u->qh; over > 0 && pos < u->qn; pos++) {
    int64_t c = u->q[pos].chunk, hi, got = 0;
    if (u->stamp[c] != u->q[pos].stamp || u->nres[c] == 0) {
      if (pos == u->qh) u->qh++;
      continue;
    }
    hi = (c + 1) * u->ppc < u->npages ? (c + 1) * u->ppc : u->npages;
    for (p = c * u->ppc; p < hi; p++)
      if (u->st[p] == MLSYS__UVM_GPU) {
        u->st[p] = MLSYS__UVM_HOST;
        got++;
      }
    if (got) u->n_evict++;
    u->nres[c] -= got;
    u->resident -= got;
    over -= got;
    ev += got;
    if (u->nres[c] == 0 && pos == u->qh) u->qh++;
  }
  if (host || ev) {
    u->n_faults++;
    u->mig_us += fault_us + (double)(host * u->page) / h2d + (double)(ev * u->page) / d2h;
  }
  u->in_pages += host;
  u->out_pages += ev;
  /* migrate/populate; a chunk's time is that of the last page moved into it */
  for (j = 0; j < k; j++)
    for (p = a[j]; p < a[j] + n[j]; p++) {
      unsigned char s = (unsigned char)(u->st[p] & ~MLSYS__UVM_PIN);
      int64_t c = p / u->ppc;
      u->st[p] = MLSYS__UVM_GPU;
      if (s == MLSYS__UVM_GPU) continue;
      /* a new time unless c is already the newest; an empty chunk may have lost its entry, so it gets one */
      if (u->nres[c] == 0 || u->stamp[c] != u->seq) {
        u->stamp[c] = ++u->seq;
        if (u->qn == u->qcap) {   /* compact the consumed head before growing */
          if (u->qh > 0) {
            memmove(u->q, u->q + u->qh, (size_t)(u->qn - u->qh) * sizeof *u->q);
            u->qn -= u->qh;
            u->qh = 0;
          }
          if (u->qn * 2 > u->qcap) {
            mlsys__uvm_ent *nq = (mlsys__uvm_ent *)mlsys_realloc_array(u->q, (size_t)u->qcap * 2, sizeof *u->q);
            if (!nq) return -1;
            u->q = nq;
            u->qcap *= 2;
          }
        }
        u->q[u->qn].chunk = c;
        u->q[u->qn++].stamp = u->seq;
      }
      u->nres[c]++;
      u->resident++;
    }
  if (u->resident > u->peak) u->peak = u->resident;
  /* run, then drop the workspace and the tensors whose last use this was */
  mlsys__uvm_release(u, a[k - 1], n[k - 1]);
  for (j = 0; j < o->n_in + o->n_out; j++) {
    int t = u->tr->ids[(j < o->n_in ? o->in0 + j : o->out0 + j - o->n_in)];
    if (!mlsys__uvm_persist(u, t) && u->f->last_use[t] == i) mlsys__uvm_release(u, u->p0[t], mlsys__uvm_np(u, u->tr->t[t].bytes));
  }
  return 0;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_uvm(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                             const mlsys_offload_uvm_opts *o, mlsys_offload_simres *r) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys__uvm u;
  mlsys_status st = MLSYS_OK;
  int64_t pos = 0, *a = NULL, *n = NULL, chunk, fixed;
  double fault_us, oversub;
  int iters, it, i, t, maxio = 0, over_cap = 0;
  if (!tr || !r) return mlsys_set_error(MLSYS_ERR_ARG, "UVM simulation: NULL %s", tr ? "result" : "trace");
  memset(r, 0, sizeof *r);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  memset(&u, 0, sizeof u);
  u.page = o && o->fault_page ? o->fault_page : 65536;
  chunk = o && o->evict_chunk ? o->evict_chunk : 2 * 1024 * 1024;
  fault_us = !o || o->fault_us == 0 ? 30.0 : o->fault_us < 0 ? 0.0 : o->fault_us;
  oversub = o && o->oversub_max ? o->oversub_max : 2.0;
  iters = o && o->iterations ? o->iterations : 2;
  if (u.page <= 0 || chunk <= 0 || chunk % u.page)
    return mlsys_set_error(MLSYS_ERR_ARG, "UVM: the eviction chunk (%lld bytes) must be a positive multiple of the fault page (%lld)",
                           (long long)chunk, (long long)u.page);
  if (!(oversub > 0) || isnan(fault_us) || iters < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "UVM: oversubscription cap %g, fault time %g µs, %d iterations", oversub, fault_us, iters);
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  u.tr = tr;
  u.f = &f;
  u.ppc = chunk / u.page;
  fixed = tr->fixed_bytes;
  u.cap = hw->gpu_bytes > fixed ? (hw->gpu_bytes - fixed) / u.page : 0;
  r->compute_us = f.compute_us;
  r->feasible = 1;
  if ((double)f.peak_bytes > oversub * (double)hw->gpu_bytes) {
    over_cap = 1;
    mlsys__offload_infeasible(r, "footprint %lld bytes exceeds UVM cap of %gx the GPU's %lld bytes", (long long)f.peak_bytes, oversub,
                              (long long)hw->gpu_bytes);
  }
  /* layout: persistent tensors in id order, then op by op what it writes first, then its workspace */
  u.p0 = (int64_t *)mlsys_alloc((size_t)tr->n_t + 1, sizeof(int64_t));
  u.w0 = (int64_t *)mlsys_alloc((size_t)tr->n_op + 1, sizeof(int64_t));
  u.mark = (int64_t *)mlsys_calloc((size_t)tr->n_t + 1, sizeof(int64_t));
  if (!u.p0 || !u.w0 || !u.mark) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "UVM: out of memory"); goto done; }
  for (t = 0; t < tr->n_t; t++) {
    u.p0[t] = -1;
    if (mlsys__uvm_persist(&u, t)) { u.p0[t] = pos; pos += mlsys__uvm_np(&u, tr->t[t].bytes); }
  }
  for (i = 0; i < tr->n_op; i++) {
    const mlsys_offload_op *op = &tr->op[i];
    int j;
    for (j = 0; j < op->n_out; j++) {
      t = tr->ids[op->out0 + j];
      if (u.p0[t] < 0) { u.p0[t] = pos; pos += mlsys__uvm_np(&u, tr->t[t].bytes); }
    }
    u.w0[i] = pos;
    pos += mlsys__uvm_np(&u, op->workspace);
    if (op->n_in + op->n_out > maxio) maxio = op->n_in + op->n_out;
  }
  for (t = 0; t < tr->n_t; t++)
    if (u.p0[t] < 0) u.p0[t] = 0;   /* unreachable: a non-persistent tensor has a first write */
  /* a byte of state per page: 2^28 pages is 16 TiB at 64 KiB */
  if (pos > ((int64_t)1 << 28)) {
    st = mlsys_set_error(MLSYS_ERR_TOO_BIG, "UVM: %lld pages of %lld bytes to track; use a larger fault page", (long long)pos,
                         (long long)u.page);
    goto done;
  }
  u.npages = pos;
  u.nchunk = pos / u.ppc + 1;
  u.qcap = 1024;
  u.st = (unsigned char *)mlsys_calloc((size_t)pos + 1, 1);
  u.nres = (int64_t *)mlsys_calloc((size_t)u.nchunk, sizeof(int64_t));
  u.stamp = (int64_t *)mlsys_calloc((size_t)u.nchunk, sizeof(int64_t));
  u.q = (mlsys__uvm_ent *)mlsys_alloc((size_t)u.qcap, sizeof *u.q);
  a = (int64_t *)mlsys_alloc((size_t)maxio + 1, sizeof(int64_t));
  n = (int64_t *)mlsys_alloc((size_t)maxio + 1, sizeof(int64_t));
  if (!u.st || !u.nres || !u.stamp || !u.q || !a || !n) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "UVM: out of memory"); goto done; }
  for (t = 0; t < tr->n_t; t++)   /* persistent tensors start on the host */
    if (mlsys__uvm_persist(&u, t)) memset(u.st + u.p0[t], MLSYS__UVM_HOST, (size_t)mlsys__uvm_np(&u, tr->t[t].bytes));
  for (it = 0; it < iters; it++) {
    if (it == iters - 1) {   /* report the last iteration only */
      u.in_pages = u.out_pages = 0;
      u.n_faults = u.n_evict = 0;
      u.mig_us = 0;
      u.peak = u.resident;
    }
    for (i = 0; i < tr->n_op; i++) {
      int64_t big = mlsys__uvm_op(&u, i, fault_us, h.h2d, h.d2h, a, n);
      if (big < 0) { st = mlsys_set_error(MLSYS_ERR_NOMEM, "UVM: out of memory"); goto done; }
      if (big > 0) {   /* r holds only compute_us so far */
        if (!over_cap)
          mlsys__offload_infeasible(r, "op %d (%s) touches %lld bytes of %lld-byte pages, more than the %lld UVM can keep resident", i,
                                    mlsys_offload_op_name(tr, i), (long long)(big * u.page), (long long)u.page,
                                    (long long)(u.cap * u.page));
        goto done;
      }
    }
    for (t = 0; t < tr->n_t; t++)   /* results of the iteration (unread gradients) die at its end */
      if (!mlsys__uvm_persist(&u, t)) mlsys__uvm_release(&u, u.p0[t], mlsys__uvm_np(&u, tr->t[t].bytes));
  }
  r->migration_us = u.mig_us;
  r->time_us = r->compute_us + u.mig_us;
  r->bytes_h2d = u.in_pages * u.page;
  r->bytes_d2h = u.out_pages * u.page;
  r->n_faults = u.n_faults;
  r->n_evictions = u.n_evict;
  r->peak_bytes = fixed + u.peak * u.page;
done:
  mlsys_free(a);
  mlsys_free(n);
  mlsys__uvm_free(&u);
  mlsys_offload_facts_free(&f);
  return st;
}

/* ---- ZeRO-Offload ---- */
static int mlsys__zero_has(const char *s, const char *w) {
  size_t i, j, n = strlen(w);
  for (i = 0; s[i]; i++) {
    for (j = 0; j < n && s[i + j] && tolower((unsigned char)s[i + j]) == w[j]; j++) {}
    if (j == n) return 1;
  }
  return 0;
}

/* §4.4: the optimizer step runs on the CPU, so these ops leave the GPU's time and memory */
static int mlsys__zero_is_optim(const mlsys_offload_trace *tr, int i) {
  const char *nm = mlsys_offload_op_name(tr, i);
  const mlsys_offload_op *o = &tr->op[i];
  int j;
  if (mlsys__zero_has(nm, "adam") || mlsys__zero_has(nm, "sgd") || mlsys__zero_has(nm, "optim")) return 1;
  for (j = 0; j < o->n_out; j++)
    if (tr->t[tr->ids[o->out0 + j]].kind == MLSYS_OFFLOAD_T_OPT) return 1;
  return 0;
}

MLSYS_DEF mlsys_status mlsys_offload_sim_zero(const mlsys_offload_trace *tr, const mlsys_offload_hw *hw,
                                              const mlsys_offload_zero_opts *o, mlsys_offload_simres *r) {
  mlsys__offload_hwn h;
  mlsys_offload_facts f;
  mlsys_status st;
  double thr, frac, tfb = 0, tbwd = 0, M, d2h, adam, h2d, exposed_d2h, cpu;
  int64_t *delta, base, live = 0, peak, pbytes = 0;
  int i, t, nparam = 0, peak_op = -1, pb;
  if (!tr || !r) return mlsys_set_error(MLSYS_ERR_ARG, "ZeRO-Offload simulation: NULL %s", tr ? "result" : "trace");
  memset(r, 0, sizeof *r);
  if ((st = mlsys__offload_hw_norm(tr, hw, &h))) return st;
  thr = !o || o->cpu_adam_params_per_us == 0 ? 1000.0 : o->cpu_adam_params_per_us;
  frac = !o || o->overlap_bwd_frac == 0 ? 1.0 : o->overlap_bwd_frac < 0 ? 0.0 : o->overlap_bwd_frac;
  pb = o && o->param_bytes ? o->param_bytes : 2;
  if (!(thr > 0) || !(frac <= 1) || pb < 0)
    return mlsys_set_error(MLSYS_ERR_ARG, "ZeRO-Offload: CPU Adam throughput %g parameters/µs (must be > 0), backward overlap %g (must be <= 1), %d bytes a parameter",
                           thr, frac, pb);
  if ((st = mlsys_offload_trace_facts(tr, &f))) return st;
  if (!(delta = (int64_t *)mlsys_calloc((size_t)tr->n_op + 2, sizeof(int64_t)))) {
    mlsys_offload_facts_free(&f);
    return mlsys_set_error(MLSYS_ERR_NOMEM, "ZeRO-Offload: out of memory");
  }
  /* facts' live-byte curve with OPT left on the CPU, read at the GPU's ops only */
  base = tr->fixed_bytes;
  for (t = 0; t < tr->n_t; t++) {
    int k = tr->t[t].kind;
    if (k == MLSYS_OFFLOAD_T_PARAM) { nparam++; pbytes += tr->t[t].bytes; }
    if (k == MLSYS_OFFLOAD_T_OPT) continue;
    if (k == MLSYS_OFFLOAD_T_PARAM || f.first_write[t] < 0) base += tr->t[t].bytes;
    else if (f.last_use[t] >= 0) {
      delta[f.first_write[t]] += tr->t[t].bytes;
      delta[f.last_use[t] + 1] -= tr->t[t].bytes;
    }
  }
  peak = base;
  for (i = 0; i < tr->n_op; i++) {
    live += delta[i];
    if (mlsys__zero_is_optim(tr, i)) continue;
    tfb += tr->op[i].time_us;
    if (tr->op[i].is_bwd) tbwd += tr->op[i].time_us;
    if (base + live + tr->op[i].workspace > peak) { peak = base + live + tr->op[i].workspace; peak_op = i; }
  }
  mlsys_free(delta);
  mlsys_offload_facts_free(&f);
  r->feasible = 1;
  if (!nparam) {
    mlsys__offload_infeasible(r, "ZeRO-Offload does not apply: no parameters in the trace");
    return MLSYS_OK;
  }
  M = (double)pbytes / pb;
  d2h = 2 * M / h.d2h;
  adam = M / thr;
  h2d = 2 * M / h.h2d;
  r->compute_us = tfb;
  r->bytes_d2h = r->bytes_h2d = (int64_t)(2 * M);   /* fp16 gradients out, fp16 parameters in */
  r->peak_bytes = peak;
  if (o && o->dpu) {
    double cpu_side = d2h + adam + h2d, tail = cpu_side > tfb ? cpu_side - tfb : 0;
    r->time_us = tfb + tail;
    cpu = tail > 0 ? tail * adam / cpu_side : 0;
    r->other_us = cpu;
    r->migration_us = tail - cpu;
  } else {
    exposed_d2h = d2h - frac * tbwd > 0 ? d2h - frac * tbwd : 0;
    r->other_us = adam;
    r->migration_us = exposed_d2h + h2d;
    r->time_us = tfb + exposed_d2h + adam + h2d;
  }
  if (peak > hw->gpu_bytes) {
    if (peak_op >= 0)
      mlsys__offload_infeasible(r, "ZeRO-Offload needs %lld GPU bytes at op %d (%s) (fp16 parameters and activations; optimizer state on the CPU), the GPU has %lld",
                                (long long)peak, peak_op, mlsys_offload_op_name(tr, peak_op), (long long)hw->gpu_bytes);
    else
      mlsys__offload_infeasible(r, "ZeRO-Offload needs %lld GPU bytes for the fp16 parameters and resident tensors, the GPU has %lld",
                                (long long)peak, (long long)hw->gpu_bytes);
  }
  return MLSYS_OK;
}
