/* examples/cloud_profile_cpu.c — Srift's profiling driver (mlsys_cloud_profile) on a real C training step: the
   SmallCNN of examples/remat_cnn_layers.h (two convolutions, two linear layers; forward, softmax cross-entropy,
   backward) timed on this CPU, one thread.

   The seed profiles each DNN once per accelerator: Bmax by search, forward and backward times at B = 1, Bmax/3,
   2Bmax/3 and Bmax, the straggler scale, and when each layer's gradient is ready during the backward pass. Here
   "does not fit" means the step's tensors (activations, their gradients, parameters and gradients) exceed a memory
   limit (default 64 MiB, a stand-in for a device's memory). The program then measures every power of two up to
   Bmax, outside the four samples, and prints the piecewise-linear model's error (MAPE) beside a single line's
   (Eq. 1): the seed's Table 6 on a CPU. With a path it writes the profile as JSON for `mlsys cloud plan --profile`;
   with a fourth, every timed iteration of the powers of two as CSV (type,batch,t_fw,t_bw) for `mlsys cloud fit`.

   Build: make build/examples/cloud_profile_cpu;
   run: build/examples/cloud_profile_cpu [OUT.json|- [MEM_MIB [TYPE [TIMINGS.csv]]]] */
#define MLSYS_IMPLEMENTATION
#include "mlsys_cloud.h"
#include "examples/remat_cnn_layers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPARAM_LAYERS 4 /* conv1, conv2, fc1, fc2: the layers with parameters (allreduced) */

typedef struct {
  uint64_t mem_limit;
  cnn_model m;
  int batch; /* the model's batch; rebuilt when it changes */
} prof_ctx;

/* bytes the step holds at once: every activation and its gradient, the parameters and their gradients */
static uint64_t step_bytes(const cnn_model *m, int N) {
  uint64_t b = 2 * (uint64_t)m->nparams * sizeof(float) + (uint64_t)N * m->classes * sizeof(float);
  int i;
  for (i = 0; i < CNN_NLAYERS; i++)
    b += cnn_forward_bytes(&m->layer[i], N) + (uint64_t)N * cnn_layer_in_count(&m->layer[i]) * sizeof(float);
  return b;
}

static int step(void *ud, int batch, double *t_fw, double *t_bw, double *stamps) {
  prof_ctx *c = (prof_ctx *)ud;
  void *act[CNN_NLAYERS];
  float *g[CNN_NLAYERS + 1];
  double t0, t1;
  int i, k = 0, ok = 1;
  if (batch > 4096) return 1;
  if (c->batch != batch) {
    cnn_model_free(&c->m);
    c->batch = 0;
    if (cnn_model_init(&c->m, batch, 1) != MLSYS_OK) return -1;
    c->batch = batch;
  }
  if (step_bytes(&c->m, batch) > c->mem_limit) return 1;
  memset(act, 0, sizeof act);
  memset(g, 0, sizeof g);
  for (i = 0; i < CNN_NLAYERS; i++) {
    act[i] = mlsys_alloc((size_t)cnn_forward_bytes(&c->m.layer[i], batch), 1);
    g[i] = (float *)mlsys_alloc((size_t)batch * cnn_layer_in_count(&c->m.layer[i]), sizeof(float));
    ok &= act[i] && g[i];
  }
  g[CNN_NLAYERS] = (float *)mlsys_alloc((size_t)batch * c->m.classes, sizeof(float));
  ok &= g[CNN_NLAYERS] != NULL;
  if (ok) {
    t0 = mlsys_now();
    for (i = 0; i < CNN_NLAYERS; i++) cnn_forward(&c->m, i, i ? (const float *)act[i - 1] : c->m.input, act[i]);
    c->m.loss = cnn_softmax_xent_forward(g[CNN_NLAYERS], (const float *)act[CNN_FC2], c->m.labels, batch, c->m.classes);
    t1 = mlsys_now();
    *t_fw = t1 - t0;
    for (i = CNN_NLAYERS - 1; i >= 0; i--) {
      cnn_backward(&c->m, i, g[i + 1], i ? (const float *)act[i - 1] : c->m.input, act[i], i ? g[i] : NULL, 1);
      if (c->m.layer[i].nw && stamps) stamps[k++] = mlsys_now() - t1; /* this layer's gradient is ready */
    }
    *t_bw = mlsys_now() - t1;
  }
  for (i = 0; i <= CNN_NLAYERS; i++) {
    if (i < CNN_NLAYERS) mlsys_free(act[i]);
    mlsys_free(g[i]);
  }
  if (!ok) {
    mlsys_set_error(MLSYS_ERR_NOMEM, "smallcnn: out of memory at batch %d", batch);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *out = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL, *type = argc > 3 ? argv[3] : "local-cpu";
  FILE *tf = NULL;
  prof_ctx c;
  mlsys_cloud_profile_opts o = {NPARAM_LAYERS, 0, 1, 2, 10};
  mlsys_cloud_cprof p;
  double rf[NPARAM_LAYERS], gb[NPARAM_LAYERS], x[4], y[4], sx = 0, sy = 0, sxx = 0, sxy = 0, a, b;
  double mf = 0, mb = 0, mt = 0, ml = 0;
  int i, k = 0, B, n = 0;
  memset(&c, 0, sizeof c);
  c.mem_limit = (uint64_t)(argc > 2 ? atof(argv[2]) : 64) * 1048576;
  if (mlsys_cloud_profile(step, &c, &o, &p, rf) != MLSYS_OK) {
    fprintf(stderr, "cloud_profile_cpu: %s\n", mlsys_last_error());
    return 1;
  }
  for (i = CNN_NLAYERS - 1; i >= 0; i--) /* gradient bytes in backward order, as the stamps */
    if (c.m.layer[i].nw) gb[k++] = (double)(c.m.layer[i].nw + c.m.layer[i].nb) * sizeof(float);
  p.grad_bytes = gb;
  printf("SmallCNN on this CPU, memory limit %.0f MiB: Bmax %d; fw+bw %.2f ms at 1, %.1f ms at Bmax; sigma_rel %.3f\n",
         c.mem_limit / 1048576.0, p.bmax, 1e3 * (p.t_fw[0] + p.t_bw[0]), 1e3 * (p.t_fw[p.npts - 1] + p.t_bw[p.npts - 1]),
         p.sigma_rel);
  printf("gradients ready at %.2f %.2f %.2f %.2f of the backward (fc2, fc1, conv2, conv1)\n", rf[0], rf[1], rf[2], rf[3]);
  /* Eq. 1's single line through the same samples, least squares, on fw+bw */
  for (i = 0; i < p.npts; i++) {
    x[i] = p.b[i], y[i] = p.t_fw[i] + p.t_bw[i];
    sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  }
  b = p.npts > 1 ? (p.npts * sxy - sx * sy) / (p.npts * sxx - sx * sx) : 0;
  a = (sy - b * sx) / p.npts;
  printf("\n%8s %10s %10s %10s %10s %10s\n", "batch", "fw ms", "bw ms", "PWL err", "line err", "");
  if (argc > 4) {
    if (!(tf = fopen(argv[4], "w"))) {
      fprintf(stderr, "cloud_profile_cpu: cannot write %s\n", argv[4]);
      return 1;
    }
    fprintf(tf, "type,batch,t_fw,t_bw\n");
  }
  for (B = 1; B <= p.bmax; B *= 2) { /* out of sample: powers of two, 10 timed runs each after 2 warm-ups */
    double fw = 0, bw = 0, f1, b1, tot, pf, pb;
    int it;
    for (it = 0; it < 12; it++) {
      if (step(&c, B, &f1, &b1, NULL) != 0) return 1;
      if (it >= 2) fw += f1 / 10, bw += b1 / 10;
      if (it >= 2 && tf) fprintf(tf, "%s,%d,%.9g,%.9g\n", type, B, f1, b1);
    }
    tot = fw + bw;
    pf = mlsys_cloud_cprof_fw(&p, B), pb = mlsys_cloud_cprof_bw(&p, B);
    mf += fabs(pf - fw) / fw, mb += fabs(pb - bw) / bw, mt += fabs(pf + pb - tot) / tot, ml += fabs(a + b * B - tot) / tot;
    printf("%8d %10.3f %10.3f %9.1f%% %9.1f%%\n", B, 1e3 * fw, 1e3 * bw, 100 * fabs(pf + pb - tot) / tot,
           100 * fabs(a + b * B - tot) / tot);
    n++;
  }
  printf("MAPE over %d batches: PWL forward %.1f%%, backward %.1f%%, fw+bw %.1f%%; one line (Eq. 1) fw+bw %.1f%%\n", n,
         100 * mf / n, 100 * mb / n, 100 * mt / n, 100 * ml / n);
  printf("(the seed's Table 6 on GPUs: 7.6%% / 5.5%% / 4.4%%)\n");
  if (tf && fclose(tf) != 0) {
    fprintf(stderr, "cloud_profile_cpu: writing %s failed\n", argv[4]);
    return 1;
  }
  if (tf) printf("wrote %s (every timed iteration above)\n", argv[4]);
  if (out) {
    mlsys_cloud_dnn d;
    char names[1][32];
    FILE *f = fopen(out, "w");
    memset(&d, 0, sizeof d);
    snprintf(d.dnn, sizeof d.dnn, "smallcnn");
    snprintf(names[0], sizeof names[0], "%s", type);
    d.ntypes = 1, d.type_name = names, d.prof = &p, d.nlayers = NPARAM_LAYERS, d.grad_bytes = gb, d.ready_frac = rf;
    if (!f || mlsys_cloud_dnn_write(&d, f) != MLSYS_OK || fclose(f) != 0) {
      fprintf(stderr, "cloud_profile_cpu: cannot write %s\n", out);
      return 1;
    }
    printf("wrote %s (instance type \"%s\")\n", out, type);
  }
  cnn_model_free(&c.m);
  return 0;
}
