// tests/cuda/offload_treelstm_ref.h — an independent child-sum Tree-LSTM (Tai et al. 2015) for
// tests/cuda/test_offload_cuda.cu: forward, backward and SGD written straight from the equations, recursive over
// each tree's nodes, in float or double. It shares nothing with kernels/mlsys_offload_kernels.cuh but the data (the
// trees, the leaves' input vectors, the labels, the weights), so it checks the driver's op list (the generator's
// mirrored backward) and, in double, takes finite differences.
//
//   leaf:   iou = W_iou x                     inner: hsum = Σ_k h_k, iou = U_iou hsum, f_k = U_f h_k
//   c = σ(i)·tanh(u) + Σ_k σ(f_k)·c_k          h = σ(o)·tanh(c)      (iou = [i; o; u])
//   root:   z = W_c h;  loss = mean over trees of log Σ_c e^{z_c} − z_label
#ifndef MLSYS_OFFLOAD_TREELSTM_REF_H
#define MLSYS_OFFLOAD_TREELSTM_REF_H

#include <math.h>
#include <vector>

template <typename T> struct tlref_model {
  int D, H;
  std::vector<T> W[4];   // W_iou [3H][D], U_iou [3H][H], U_f [H][H], W_c [5][H], row-major
};

template <typename T> static T tlref_sig(T x) { return (T)1 / ((T)1 + exp(-x)); }

// y[r] = Σ_j W[r][j] x[j]
template <typename T> static void tlref_mv(const std::vector<T> &W, const T *x, int R, int C, T *y) {
  for (int r = 0; r < R; r++) {
    T a = 0;
    for (int j = 0; j < C; j++) a += W[(size_t)r * C + j] * x[j];
    y[r] = a;
  }
}
// gW += gy ⊗ x; gx += Wᵀ gy (gx may be NULL)
template <typename T> static void tlref_mv_back(const std::vector<T> &W, const T *x, const T *gy, int R, int C,
                                                std::vector<T> *gW, T *gx) {
  for (int r = 0; r < R; r++)
    for (int j = 0; j < C; j++) {
      if (gW) (*gW)[(size_t)r * C + j] += gy[r] * x[j];
      if (gx) gx[j] += W[(size_t)r * C + j] * gy[r];
    }
}

// The batch's mean loss; G (4 vectors sized like the weights, zeroed here) receives its gradient when not NULL.
// x[s][i]: tree s node i's input vector (D floats) for a leaf, ignored for inner nodes.
template <typename T>
static T tlref_loss(const tlref_model<T> &m, const mlsys_offload_tree *trees, int n_trees,
                    const std::vector<std::vector<const float *>> &x, const int *label, std::vector<T> *G) {
  const int D = m.D, H = m.H, C = 5;
  T total = 0;
  if (G)
    for (int w = 0; w < 4; w++) G[w].assign(m.W[w].size(), (T)0);
  for (int s = 0; s < n_trees; s++) {
    const mlsys_offload_tree *t = &trees[s];
    int n = t->n, root = 0;
    std::vector<std::vector<int>> kids(n);
    for (int i = 0; i < n; i++) {
      if (t->parent[i] >= 0) kids[t->parent[i]].push_back(i);
      else root = i;
    }
    std::vector<T> iou((size_t)n * 3 * H), c((size_t)n * H), h((size_t)n * H), hsum((size_t)n * H), f((size_t)n * H),
        xin((size_t)n * D);
    for (int i = n - 1; i >= 0; i--) {   // children have larger numbers
      T *io = &iou[(size_t)i * 3 * H];
      if (kids[i].empty()) {
        for (int j = 0; j < D; j++) xin[(size_t)i * D + j] = (T)x[s][i][j];
        tlref_mv(m.W[0], &xin[(size_t)i * D], 3 * H, D, io);
      } else {
        T *hs = &hsum[(size_t)i * H];
        for (int j = 0; j < H; j++) hs[j] = 0;
        for (int k : kids[i])
          for (int j = 0; j < H; j++) hs[j] += h[(size_t)k * H + j];
        tlref_mv(m.W[1], hs, 3 * H, H, io);
        for (int k : kids[i]) tlref_mv(m.W[2], &h[(size_t)k * H], H, H, &f[(size_t)k * H]);   // f of child k
      }
      for (int j = 0; j < H; j++) {
        T cj = tlref_sig(io[j]) * tanh(io[2 * H + j]);
        for (int k : kids[i]) cj += tlref_sig(f[(size_t)k * H + j]) * c[(size_t)k * H + j];
        c[(size_t)i * H + j] = cj;
        h[(size_t)i * H + j] = tlref_sig(io[H + j]) * tanh(cj);
      }
    }
    T z[5], mx, se = 0;
    tlref_mv(m.W[3], &h[(size_t)root * H], C, H, z);
    mx = z[0];
    for (int k = 1; k < C; k++) mx = z[k] > mx ? z[k] : mx;
    for (int k = 0; k < C; k++) se += exp(z[k] - mx);
    total += log(se) + mx - z[label[s]];
    if (!G) continue;
    // backward: parents (smaller numbers) before children
    std::vector<T> gh((size_t)n * H, (T)0), gc((size_t)n * H, (T)0);
    T gz[5];
    for (int k = 0; k < C; k++) gz[k] = (exp(z[k] - mx) / se - (k == label[s] ? (T)1 : (T)0)) / (T)n_trees;
    tlref_mv_back(m.W[3], &h[(size_t)root * H], gz, C, H, &G[3], &gh[(size_t)root * H]);
    for (int i = 0; i < n; i++) {
      const T *io = &iou[(size_t)i * 3 * H];
      std::vector<T> giou((size_t)3 * H);
      for (int j = 0; j < H; j++) {
        T si = tlref_sig(io[j]), so = tlref_sig(io[H + j]), tu = tanh(io[2 * H + j]), tc = tanh(c[(size_t)i * H + j]);
        T ghj = gh[(size_t)i * H + j];
        T gcj = gc[(size_t)i * H + j] + ghj * so * (1 - tc * tc);
        giou[H + j] = ghj * tc * so * (1 - so);
        giou[j] = gcj * tu * si * (1 - si);
        giou[2 * H + j] = gcj * si * (1 - tu * tu);
        for (int k : kids[i]) {
          T sf = tlref_sig(f[(size_t)k * H + j]);
          gc[(size_t)k * H + j] += gcj * sf;
          f[(size_t)k * H + j] = gcj * c[(size_t)k * H + j] * sf * (1 - sf);   // f's gradient now (f not needed again)
        }
      }
      if (kids[i].empty()) {
        tlref_mv_back(m.W[0], &xin[(size_t)i * D], giou.data(), 3 * H, D, &G[0], (T *)NULL);
      } else {
        std::vector<T> ghs((size_t)H, (T)0);
        tlref_mv_back(m.W[1], &hsum[(size_t)i * H], giou.data(), 3 * H, H, &G[1], ghs.data());
        for (int k : kids[i]) {
          tlref_mv_back(m.W[2], &h[(size_t)k * H], &f[(size_t)k * H], H, H, &G[2], &gh[(size_t)k * H]);
          for (int j = 0; j < H; j++) gh[(size_t)k * H + j] += ghs[j];
        }
      }
    }
  }
  return total / (T)n_trees;
}

#endif
