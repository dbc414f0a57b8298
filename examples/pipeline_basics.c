/* examples/pipeline_basics.c — Plumber on a real JPEG training pipeline through the C API of mlsys_pipeline.h.

   Lists the photographs of a directory (default: the 59 photos in Debian's opencv-doc examples/data), builds
   files → decode → repeat → random-resized-crop → flip → normalize → batch 32, traces it as built (NAIVE: one core,
   no prefetch), prints the per-operator rates and the bottleneck, then lets Plumber configure it (the CPU LP, the
   cache rule, prefetch sizing) and measures again.

   build: make build/examples/pipeline_basics      run: build/examples/pipeline_basics [DIR] */
#define MLSYS_IMPLEMENTATION
#include "mlsys_pipeline.h"

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/usr/share/doc/opencv-doc/examples/data";
  char **paths;
  int64_t n;
  mlsys_pipe *p;
  mlsys_pipe_jpeg_desc jd = {0};
  mlsys_pipe_jpeg_nodes nodes;
  mlsys_pipe_tune_desc td = {0};
  mlsys_pipe_tune_result naive, tuned;
  mlsys_pipe_machine m = {0};
  mlsys_pipe_snapshot w;
  mlsys_pipe_analysis a;

  if (mlsys_pipe_list_images(dir, &paths, &n) || n == 0) {
    fprintf(stderr, "no photographs under %s (%s): install Debian's opencv-doc or pass a directory\n", dir, mlsys_last_error());
    return 1;
  }
  jd.batch = 32;
  jd.drop_remainder = 1;
  if (mlsys_pipe_create(NULL, &p) || mlsys_pipe_jpeg_pipeline(p, (const char *const *)paths, n, &jd, &nodes)) {
    fprintf(stderr, "%s\n", mlsys_last_error());
    return 1;
  }

  /* 1. trace the pipeline as built and read the rates (spec §2.5) */
  mlsys_pipe_machine_detect(&m);
  if (mlsys_pipe_trace(p, nodes.root, 2.0, 0.5, &w, NULL) || mlsys_pipe_analyze(&w, &m, &a)) {
    fprintf(stderr, "%s\n", mlsys_last_error());
    return 1;
  }
  printf("%lld photos from %s, traced for %.1f s as built:\n", (long long)n, dir, w.seconds);
  mlsys_pipe_print_rates(stdout, &w, &a);
  printf("bottleneck: %s\n\n", a.bottleneck >= 0 ? w.op[a.bottleneck].name : "-");
  mlsys_pipe_analysis_free(&a);
  mlsys_pipe_snapshot_free(&w);

  /* 2. measure NAIVE, then let Plumber rewrite the pipeline and measure it */
  td.trace_seconds = 2.0;
  td.warmup_seconds = 0.5;
  td.method = MLSYS_PIPE_TUNE_NAIVE;
  if (mlsys_pipe_tune(p, nodes.root, &td, &naive, NULL)) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
  td.method = MLSYS_PIPE_TUNE_PLUMBER;
  if (mlsys_pipe_tune(p, nodes.root, &td, &tuned, stdout)) { fprintf(stderr, "%s\n", mlsys_last_error()); return 1; }
  printf("\nNAIVE %.2f batches/s -> Plumber %.2f batches/s (%.2fx) using %.2f cores; LP bound %.2f at %.0f cores\n",
         naive.x_measured, tuned.x_measured, naive.x_measured > 0 ? tuned.x_measured / naive.x_measured : 0, tuned.cores_used,
         tuned.x_pred, m.cores);

  mlsys_pipe_tune_result_free(&naive);
  mlsys_pipe_tune_result_free(&tuned);
  mlsys_pipe_destroy(p);
  mlsys_pipe_paths_free(paths, n);
  return 0;
}
