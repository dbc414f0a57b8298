/* bench/bench_machine.h — what every benchmark prints first: the CPU model (from /proc/cpuinfo) and the UTC date,
   so a number in bench/RESULTS.md can be traced to the machine and day it came from. Include after <stdio.h>. */
#ifndef MLSYS_BENCH_MACHINE_H
#define MLSYS_BENCH_MACHINE_H
#include <stdio.h>
#include <string.h>
#include <time.h>

static void bench_machine(char *model, size_t mlen, char *date, size_t dlen) {
  char line[512];
  FILE *f = fopen("/proc/cpuinfo", "r");
  time_t now = time(NULL);
  snprintf(model, mlen, "unknown");
  if (f) {
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "model name", 10)) {
        char *p = strchr(line, ':');
        if (p) {
          p++;
          while (*p == ' ') p++;
          snprintf(model, mlen, "%s", p);
          model[strcspn(model, "\n")] = 0;
        }
        break;
      }
    fclose(f);
  }
  strftime(date, dlen, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
}

/* /proc/loadavg's three averages ("unknown" when unreadable): how busy the machine was while it measured */
static void bench_loadavg(char *buf, size_t n) {
  FILE *f = fopen("/proc/loadavg", "r");
  double a = 0, b = 0, c = 0;
  snprintf(buf, n, "unknown");
  if (f) {
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, n, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
  }
}
#endif
