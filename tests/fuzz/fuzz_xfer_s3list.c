/* libFuzzer target for the XML reader of the object stores (mlsys_transfer.h section 3): the S3 ListObjectsV2 and Azure
   List Blobs page parser (mlsys__xfer_parse_list) and the error-field picker (mlsys__xfer_xml_pick).

   For every input, parsed as an S3 page and as an Azure page: a failure must be MLSYS_ERR_PARSE with a message
   "fuzz: byte N: ..." (or naming the element) and an empty page. A success is written back as a page of the
   same flavour (text escaped), parsed again, and must give the same keys, sizes, truncation flag and token.

   Build and run: make build/fuzz/fuzz_xfer_s3list &&
                  ./build/fuzz/fuzz_xfer_s3list -max_total_time=60 tests/fuzz/corpus/fuzz_xfer_s3list */
#define MLSYS_IMPLEMENTATION
#include "mlsys_transfer.h"
#include <stdlib.h>

#define FUZZ_CHECK(x)                                                                                   \
  do {                                                                                                  \
    if (!(x)) {                                                                                         \
      fprintf(stderr, "fuzz_xfer_s3list: check failed at line %d: %s (last error: %s)\n", __LINE__, #x, \
              mlsys_last_error());                                                                      \
      abort();                                                                                          \
    }                                                                                                   \
  } while (0)

static void esc(mlsys__xfer_buf *b, const char *s) {
  for (; *s; s++) {
    const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
    FUZZ_CHECK(e ? mlsys__xfer_buf_str(b, e) : mlsys__xfer_buf_add(b, s, 1));
  }
}

static void write_page(const mlsys__xfer_listpage *p, int azure, mlsys__xfer_buf *b) {
  int i;
  FUZZ_CHECK(mlsys__xfer_buf_str(b, azure ? "<?xml version=\"1.0\"?><EnumerationResults><Blobs>"
                                          : "<ListBucketResult><IsTruncated>"));
  if (!azure) FUZZ_CHECK(mlsys__xfer_buf_str(b, p->truncated ? "true</IsTruncated>" : "false</IsTruncated>"));
  for (i = 0; i < p->objs.n; i++) {
    FUZZ_CHECK(mlsys__xfer_buf_str(b, azure ? "<Blob><Name>" : "<Contents><Key>"));
    esc(b, p->objs.v[i].key);
    FUZZ_CHECK(mlsys__xfer_buf_fmt(b, azure ? "</Name><Properties><Content-Length>%llu</Content-Length></Properties></Blob>"
                                            : "</Key><Size>%llu</Size></Contents>",
                                   (unsigned long long)p->objs.v[i].size));
  }
  if (azure) FUZZ_CHECK(mlsys__xfer_buf_str(b, "</Blobs>"));
  if (p->next) {
    FUZZ_CHECK(mlsys__xfer_buf_str(b, azure ? "<NextMarker>" : "<NextContinuationToken>"));
    esc(b, p->next);
    FUZZ_CHECK(mlsys__xfer_buf_str(b, azure ? "</NextMarker>" : "</NextContinuationToken>"));
  }
  FUZZ_CHECK(mlsys__xfer_buf_str(b, azure ? "</EnumerationResults>" : "</ListBucketResult>"));
}

static void one(const char *data, size_t size, int azure) {
  mlsys__xfer_listpage p, q;
  mlsys_status st = mlsys__xfer_parse_list(data, size, azure, "fuzz", &p);
  int i;
  if (st != MLSYS_OK) {
    FUZZ_CHECK(st == MLSYS_ERR_PARSE);
    FUZZ_CHECK(p.objs.n == 0 && p.objs.v == NULL && p.next == NULL && p.key == NULL);
    FUZZ_CHECK(strncmp(mlsys_last_error(), "fuzz: ", 6) == 0 && mlsys_last_error()[6] != 0);
    return;
  }
  FUZZ_CHECK(p.objs.n >= 0 && (p.objs.n == 0 || p.objs.v != NULL));
  for (i = 0; i < p.objs.n; i++) FUZZ_CHECK(p.objs.v[i].key != NULL && p.objs.v[i].size <= (uint64_t)INT64_MAX);
  {
    mlsys__xfer_buf b = {NULL, 0, 0};
    write_page(&p, azure, &b);
    st = mlsys__xfer_parse_list(b.p, b.n, azure, "fuzz-out", &q);
    if (st != MLSYS_OK) {
      fprintf(stderr, "fuzz_xfer_s3list: written page does not read back: %s\n--- page ---\n%s\n", mlsys_last_error(), b.p);
      abort();
    }
    FUZZ_CHECK(q.objs.n == p.objs.n);
    for (i = 0; i < p.objs.n; i++) {
      FUZZ_CHECK(strcmp(q.objs.v[i].key, p.objs.v[i].key) == 0);
      FUZZ_CHECK(q.objs.v[i].size == p.objs.v[i].size);
    }
    FUZZ_CHECK(!p.next == !q.next);
    if (p.next) FUZZ_CHECK(strcmp(p.next, q.next) == 0);
    FUZZ_CHECK(!azure ? q.truncated == p.truncated : q.truncated == (p.next != NULL));
    mlsys__xfer_listpage_free(&q);
    mlsys__xfer_buf_free(&b);
  }
  mlsys__xfer_listpage_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *c;
  one((const char *)data, size, 0);
  one((const char *)data, size, 1);
  c = mlsys__xfer_xml_pick((const char *)data, size, "Error", "Code");
  MLSYS_FREE(c);
  return 0;
}
