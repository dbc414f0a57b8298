/* tests/coll_xml.h — a program's MSCCL XML as the writer emits it, in memory (test_coll_prog.c, test_coll_msccl.c).
   Include after mlsys_collective.h. Free the result with free(). */
#ifndef MLSYS_TESTS_COLL_XML_H
#define MLSYS_TESTS_COLL_XML_H
#include <stdio.h>
#include <stdlib.h>

static char *xml_of(const mlsys_coll_prog *p, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  if (mlsys_coll_prog_write_xml(p, f) != MLSYS_OK) { fclose(f); free(buf); return NULL; }
  fclose(f);
  return buf;
}
#endif
