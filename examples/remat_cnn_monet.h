/* examples/remat_cnn_monet.h — SmallCNN's kernels for mlsys_remat_monet_execute: a MONeT plan (mlsys_remat.h
   section 9) run on real tensors with the alternative implementations of examples/remat_cnn_impls.h.

   Dispatch per COMPUTE step (c->impl / c->kind / c->in_place, as the plan chose):
     conv forward     impl 0 "default": the direct loops (cnn_kernel); impl 1 "im2col+GEMM":
                      cnn_conv2d_forward_im2col in the step's workspace (the plan's bytes; the kernel needs
                      cnn_conv_im2col_workspace's, one sample's columns, and fails with a sentence when given fewer)
     linear forward   impl 0: the direct loop; impl 1 (the catalogue's "packed copy of the input"): the input copied
                      into the workspace, then the same loop from the copy
     relu forward     in place: cnn_relu_forward_inplace over the input's buffer; else cnn_kernel
     IntNodes         'm' (relu mask): cnn_relu_forward_mask from the ReLU's output (y > 0 exactly where x > 0);
                      'a' (pool argmax): the window position 2r + s of each maximum, from the pool's int64 indices
                      (the IntNode's only input is its parent, so the indices come from the parent's buffer)
     backward paths   'g': the graph's own deps (cnn_kernel); 'i' / 'o': cnn_relu_backward from the ReLU's input /
                      output; 'm': cnn_relu_backward_mask; 'a': cnn_maxpool2x2_backward_u8;
                      'c' (conv/linear, the faster backward algorithm): conv by cnn_conv2d_backward_params_im2col
                      and cnn_conv2d_backward_input_im2col_t in the step's workspace, linear from a packed copy of
                      its input in the workspace. A split path (MLSYS_REMAT_MONET_SPLIT) arrives as two calls:
                      half 1 writes the parameter gradients (reads x and dy), half 2 writes dx (reads W and dy;
                      x may be freed by then)
   Every one of these is bit-identical to the checkpoint-all reference step (cnn_reference_step) for this model:
   the im2col forward because the weights are finite and no bias is -0.0 (remat_cnn_impls.h section 1), the mask
   and the 8-bit indices by construction (sections 2 and 3), the linear copy and in-place ReLU trivially, the
   im2col backward (dw for finite dy, dx for finite weights: remat_cnn_impls.h) and the split halves, which run
   the same loops as the whole op. So every plan must reproduce the reference's loss and gradients bit for bit.

   Include after examples/remat_cnn_impls.h's prerequisites, in one file: everything is static. */
#ifndef REMAT_CNN_MONET_H
#define REMAT_CNN_MONET_H

#include "examples/remat_cnn_impls.h"

enum { CNN_MN_FWD_IM2COL, CNN_MN_FWD_LINEAR_COPY, CNN_MN_FWD_INPLACE, CNN_MN_FWD_MASK, CNN_MN_FWD_ARGMAX,
       CNN_MN_BWD_G, CNN_MN_BWD_I, CNN_MN_BWD_O, CNN_MN_BWD_M, CNN_MN_BWD_A, CNN_MN_BWD_C, CNN_MN_BWD_HALF1,
       CNN_MN_BWD_HALF2, CNN_MN_NUSES };

typedef struct {
  cnn_model *m;             /* bound to g (cnn_bind) */
  const mlsys_remat_graph *g;
  const mlsys_remat_monet_graph *sg;
  int *solver_of;           /* [g->dag.n] graph node -> solver node */
  long uses[CNN_MN_NUSES];  /* kernel calls per alternative (the tests check every one runs) */
} cnn_monet;

static void cnn_monet_free(cnn_monet *x) {
  mlsys_free(x->solver_of);
  memset(x, 0, sizeof *x);
}

/* m must already be bound to g (cnn_bind); sg built from g. */
static mlsys_status cnn_monet_bind(cnn_monet *x, cnn_model *m, const mlsys_remat_graph *g,
                                   const mlsys_remat_monet_graph *sg) {
  int v;
  memset(x, 0, sizeof *x);
  if (m->n != g->dag.n) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: the model is not bound to the graph");
  x->m = m; x->g = g; x->sg = sg;
  if (!(x->solver_of = (int *)mlsys_alloc((size_t)g->dag.n + 1, sizeof(int)))) return MLSYS_ERR_NOMEM;
  for (v = 0; v < g->dag.n; v++) x->solver_of[v] = -1;
  for (v = 0; v < sg->N; v++)
    if (sg->src[v] >= 0) x->solver_of[sg->src[v]] = v;
  for (v = 0; v < g->dag.n; v++)
    if (x->solver_of[v] < 0) {
      cnn_monet_free(x);
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: graph node %d has no solver node", v);
    }
  return MLSYS_OK;
}

/* The catalogue of this model's real kernels: for conv1, conv2, fc1 and fc2 (graph nodes of m's binding),
   implementation 0 = the direct loops (the graph's cost, no workspace) and implementation 1 = im2col+GEMM for a
   convolution with the workspace cnn_conv_im2col_workspace says (one sample's columns), or the packed copy for a
   linear layer (its input's bytes), at cost_factor times the graph's cost (the catalogue's proxy, 0.7 by default,
   since the graphs are not profiled). The default catalogue model sizes im2col from the input node's bytes
   (9 x the whole batch's input, and nothing for conv1, whose input is fixed memory), which is not what these
   kernels use; with these overrides the plan's workspace is the kernels' exactly. The backward 'c' path gets the
   same cost_factor times the backward node's cost and the workspace of the im2col backward kernels (the larger of
   cnn_conv_im2col_workspace and cnn_conv_im2col_t_workspace) or of the packed input copy. ovr needs room for 4
   entries and impl for 8. Returns the number of overrides. */
static int cnn_monet_overrides(const cnn_model *m, const mlsys_remat_graph *g, double cost_factor,
                               mlsys_remat_monet_override *ovr, mlsys_remat_monet_impl *impl) {
  int v, n = 0;
  if (!(cost_factor > 0)) cost_factor = 0.7;
  for (v = 0; v < g->dag.n && n < 4; v++) {
    const cnn_binding *B = &m->bind[v];
    const cnn_layer *L;
    uint64_t ws;
    if (g->kind[v] != MLSYS_REMAT_F || B->layer < 0) continue;
    L = &m->layer[B->layer];
    if (L->op == CNN_OP_CONV) ws = cnn_conv_im2col_workspace(m->batch, L->c, L->h, L->w, L->k, 3, 3, 1);
    else if (L->op == CNN_OP_LINEAR) ws = (uint64_t)m->batch * cnn_layer_in_count(L) * sizeof(float);
    else continue;
    memset(&ovr[n], 0, sizeof ovr[n]);
    {
      int b;
      for (b = 0; b < g->dag.n; b++)
        if (g->kind[b] == MLSYS_REMAT_B && g->fwd_of && g->fwd_of[b] == v) ovr[n].bwd_cost = cost_factor * g->dag.cost[b];
      ovr[n].bwd_workspace = ws;
      if (L->op == CNN_OP_CONV) {
        uint64_t wt = cnn_conv_im2col_t_workspace(m->batch, L->c, L->h, L->w, L->k, 3, 3, 1);
        if (wt > ws) ovr[n].bwd_workspace = wt;
      }
    }
    memset(impl + 2 * n, 0, 2 * sizeof *impl);
    impl[2 * n].cost = impl[2 * n].recompute_cost = g->dag.cost[v];
    impl[2 * n + 1].cost = impl[2 * n + 1].recompute_cost = cost_factor * g->dag.cost[v];
    impl[2 * n + 1].workspace = impl[2 * n + 1].recompute_workspace = ws;
    ovr[n].node = v;
    ovr[n].nimpl = 2;
    ovr[n].impl = impl + 2 * n;
    n++;
  }
  return n;
}

/* The graph-level kernel (cnn_kernel) with its inputs taken from the live solver values. */
static mlsys_status cnn_monet_graph_kernel(cnn_monet *x, const mlsys_remat_monet_call *c) {
  const mlsys_dag *d = &x->g->dag;
  void *in[4];
  uint64_t inb[4];
  int k, nin = d->in_off[c->src + 1] - d->in_off[c->src];
  if (nin > 4) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: node %d has %d deps", c->src, nin);
  for (k = 0; k < nin; k++) {
    int u = d->in[d->in_off[c->src] + k];
    in[k] = c->value[x->solver_of[u]];
    inb[k] = d->size[u];
    if (!in[k] && inb[k])
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: input %d of node %d is not live", u, c->src);
  }
  return cnn_kernel(x->m, c->src, in, inb, nin, c->output, c->out_bytes, c->commit);
}

/* Conv/Linear backward on path 'c' (im2col / packed input in the workspace) or in halves (c->half: 1 the parameter
   gradients, 2 dx; 0 both). Path 'g' in halves runs the direct loops of cnn_backward, split. */
static mlsys_status cnn_monet_convlin_backward(cnn_monet *x, const mlsys_remat_monet_call *c, const cnn_layer *L) {
  cnn_model *m = x->m;
  const cnn_binding *B = &m->bind[c->src];
  const mlsys_dag *d = &x->g->dag;
  const int N = m->batch, fast = c->kind == 'c', conv = L->op == CNN_OP_CONV;
  const float *dy = (const float *)c->value[x->solver_of[d->in[d->in_off[c->src] + B->dy]]];
  const float *in = B->x >= 0 ? (const float *)c->value[x->solver_of[d->in[d->in_off[c->src] + B->x]]]
                              : (B->layer == 0 ? m->input : NULL);
  float *dx = (float *)c->output;
  if (c->kind != 'g' && c->kind != 'c')
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: path '%c' under '%s'", c->kind, L->name);
  if (dy && B->layer + 1 == CNN_NLAYERS) dy += 1;
  if (!dy || (c->half != 2 && !in) || (c->half != 1 && c->out_bytes && !dx))
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: backward '%s' path '%c' half %d without its inputs",
                           L->name, c->kind, c->half);
  if (c->half == 1 && c->out_bytes)
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: '%s' param-grad half given an output", L->name);
  if (fast && c->workspace_bytes < (conv ? 0 : (uint64_t)N * cnn_layer_in_count(L) * sizeof(float)))
    return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: '%s' packs its input into a workspace of %llu bytes",
                           L->name, (unsigned long long)c->workspace_bytes);
  if (c->half != 2) {   /* parameter gradients (written once: backward nodes always commit) */
    if (conv && fast) {
      if (cnn_conv2d_backward_params_im2col(L->dwt, L->db, dy, in, N, L->c, L->h, L->w, L->k, 3, 1, c->workspace,
                                            (size_t)c->workspace_bytes) != 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: im2col dw of '%s' needs more than %llu bytes", L->name,
                               (unsigned long long)c->workspace_bytes);
    } else if (conv) {
      cnn_conv2d_backward_params(L->dwt, L->db, dy, in, N, L->c, L->h, L->w, L->k, 3, 1);
    } else {
      if (fast) { memcpy(c->workspace, in, (size_t)N * cnn_layer_in_count(L) * sizeof(float)); in = (const float *)c->workspace; }
      cnn_linear_backward_params(L->dwt, L->db, dy, in, N, L->c, L->k);
    }
  }
  if (c->half != 1 && dx) {   /* dx */
    if (conv && fast) {
      if (cnn_conv2d_backward_input_im2col_t(dx, dy, L->wt, N, L->c, L->h, L->w, L->k, 3, 1, c->workspace,
                                             (size_t)c->workspace_bytes) != 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: im2col dx of '%s' needs more than %llu bytes", L->name,
                               (unsigned long long)c->workspace_bytes);
    } else if (conv) {
      cnn_conv2d_backward_input(dx, dy, L->wt, N, L->c, L->h, L->w, L->k, 3, 1);
    } else {
      cnn_linear_backward_input(dx, dy, L->wt, N, L->c, L->k);
    }
  }
  if (c->half != 2) { m->evals[c->src]++; m->commits[c->src] += c->commit != 0; }
  x->uses[fast ? CNN_MN_BWD_C : CNN_MN_BWD_G]++;
  if (c->half) x->uses[c->half == 1 ? CNN_MN_BWD_HALF1 : CNN_MN_BWD_HALF2]++;
  return MLSYS_OK;
}

static mlsys_status cnn_monet_kernel(void *ud, const mlsys_remat_monet_call *c) {
  cnn_monet *x = (cnn_monet *)ud;
  cnn_model *m = x->m;
  const mlsys_remat_monet_graph *sg = x->sg;
  const int N = m->batch;
  if (c->src < 0) {   /* IntNode: from its parent's buffer */
    const int p = sg->parent[c->node], gp = sg->src[p];
    const cnn_layer *L = &m->layer[m->bind[gp].layer];
    const size_t n = (size_t)N * cnn_layer_out_count(L);
    const float *y = (const float *)c->value[p];
    if (!y) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: IntNode %d without its parent", c->node);
    if (c->kind == 'm' && L->op == CNN_OP_RELU) {
      if (c->out_bytes < cnn_relu_mask_bytes(n)) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: mask buffer too small");
      cnn_relu_forward_mask(NULL, (uint8_t *)c->output, y, n);
      x->uses[CNN_MN_FWD_MASK]++;
    } else if (c->kind == 'a' && L->op == CNN_OP_POOL) {
      const int64_t *idx = (const int64_t *)(y + n);
      uint8_t *pos = (uint8_t *)c->output;
      size_t o;
      if (c->out_bytes < n) return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: argmax buffer too small");
      for (o = 0; o < n; o++) {
        const int i = (int)((o / (size_t)L->ow) % (size_t)L->oh), j = (int)(o % (size_t)L->ow);
        const int r = (int)(idx[o] / L->w) - 2 * i, s = (int)(idx[o] % L->w) - 2 * j;
        pos[o] = (uint8_t)(2 * r + s);
      }
      x->uses[CNN_MN_FWD_ARGMAX]++;
    } else {
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: IntNode %d of kind '%c' under '%s'", c->node, c->kind,
                             L->name);
    }
    return MLSYS_OK;
  }
  {
    const cnn_binding *B = &m->bind[c->src];
    const cnn_layer *L = B->layer >= 0 ? &m->layer[B->layer] : NULL;
    const mlsys_dag *d = &x->g->dag;
    if (!B->backward) {
      const float *in = B->x >= 0 ? (const float *)c->value[x->solver_of[d->in[d->in_off[c->src] + B->x]]] : m->input;
      if (L && (c->impl != 0 || c->in_place) && !in)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: '%s' without its input", L->name);
      if (L && c->in_place) {
        if (L->op != CNN_OP_RELU || c->output != (const void *)in)
          return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: '%s' in place over another buffer", L->name);
        cnn_relu_forward_inplace((float *)c->output, (size_t)N * cnn_layer_in_count(L));
        m->evals[c->src]++;
        m->commits[c->src] += c->commit != 0;
        x->uses[CNN_MN_FWD_INPLACE]++;
        return MLSYS_OK;
      }
      if (L && c->impl == 1 && L->op == CNN_OP_CONV) {
        size_t need = cnn_conv_im2col_workspace(N, L->c, L->h, L->w, L->k, 3, 3, 1);
        if (cnn_conv2d_forward_im2col((float *)c->output, in, L->wt, L->b, N, L->c, L->h, L->w, L->k, 3, 1,
                                      c->workspace, (size_t)c->workspace_bytes) != 0)
          return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: im2col '%s' needs %zu bytes of workspace, the plan "
                                 "gives %llu", L->name, need, (unsigned long long)c->workspace_bytes);
        m->evals[c->src]++;
        m->commits[c->src] += c->commit != 0;
        x->uses[CNN_MN_FWD_IM2COL]++;
        return MLSYS_OK;
      }
      if (L && c->impl == 1 && L->op == CNN_OP_LINEAR) {
        size_t bytes = (size_t)N * cnn_layer_in_count(L) * sizeof(float);
        if (c->workspace_bytes < bytes)
          return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: '%s' packs %zu bytes into a workspace of %llu",
                                 L->name, bytes, (unsigned long long)c->workspace_bytes);
        memcpy(c->workspace, in, bytes);
        cnn_linear_forward((float *)c->output, (const float *)c->workspace, L->wt, L->b, N, L->c, L->k);
        m->evals[c->src]++;
        m->commits[c->src] += c->commit != 0;
        x->uses[CNN_MN_FWD_LINEAR_COPY]++;
        return MLSYS_OK;
      }
      if (c->impl != 0)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: node %d has no implementation %d", c->src, c->impl);
      return cnn_monet_graph_kernel(x, c);
    }
    /* backward */
    if (L && (L->op == CNN_OP_CONV || L->op == CNN_OP_LINEAR) && (c->kind == 'c' || c->half != 0))
      return cnn_monet_convlin_backward(x, c, L);
    if (c->half != 0)
      return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: '%s' backward in halves", L ? L->name : "?");
    if (c->kind == 'g') { x->uses[CNN_MN_BWD_G]++; return cnn_monet_graph_kernel(x, c); }
    {
      const size_t nin = (size_t)N * cnn_layer_in_count(L);
      const float *dy = (const float *)c->value[x->solver_of[d->in[d->in_off[c->src] + B->dy]]];
      const int fwd = x->solver_of[x->g->fwd_of[c->src]];
      const void *a = NULL;
      if (B->layer + 1 == CNN_NLAYERS) dy += 1;
      switch (c->kind) {
      case 'i': a = B->layer > 0 ? c->value[x->solver_of[d->in[d->in_off[x->g->fwd_of[c->src]]]]] : NULL; break;
      case 'o': a = c->value[fwd]; break;
      case 'm': case 'a': {
        int v;
        for (v = 0; v < sg->V; v++) if (sg->parent[v] == fwd && sg->int_kind[v] == c->kind) a = c->value[v];
        break;
      }
      default: break;
      }
      if (!dy || !a || !c->output)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: backward '%s' path '%c' without its inputs", L->name,
                               c->kind);
      if ((c->kind == 'i' || c->kind == 'o' || c->kind == 'm') && L->op != CNN_OP_RELU)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: path '%c' under '%s'", c->kind, L->name);
      if (c->kind == 'a' && L->op != CNN_OP_POOL)
        return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: path 'a' under '%s'", L->name);
      switch (c->kind) {
      case 'i': cnn_relu_backward((float *)c->output, dy, (const float *)a, nin); x->uses[CNN_MN_BWD_I]++; break;
      case 'o': cnn_relu_backward((float *)c->output, dy, (const float *)a, nin); x->uses[CNN_MN_BWD_O]++; break;
      case 'm': cnn_relu_backward_mask((float *)c->output, dy, (const uint8_t *)a, nin); x->uses[CNN_MN_BWD_M]++; break;
      case 'a':
        cnn_maxpool2x2_backward_u8((float *)c->output, dy, (const uint8_t *)a, N, L->c, L->h, L->w);
        x->uses[CNN_MN_BWD_A]++;
        break;
      default: return mlsys_set_error(MLSYS_ERR_ARG, "smallcnn monet: unknown path '%c'", c->kind);
      }
      m->evals[c->src]++;
      m->commits[c->src] += c->commit != 0;
      return MLSYS_OK;
    }
  }
}

#endif /* REMAT_CNN_MONET_H */
