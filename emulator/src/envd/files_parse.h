/* files_parse.h — the request-header parsers of GET /files, exposed as pure
 * functions so fuzz/fuzz_files.c can reach them (files.c keeps the logic). */
#ifndef EMU_FILES_PARSE_H
#define EMU_FILES_PARSE_H

#include <stdint.h>

/* A single "bytes=" Range header against a file of `size` bytes:
 * 0 = absent or ignored, 1 = satisfiable [*from, *to], -1 = unsatisfiable. */
int files_parse_range(const char *header, uint64_t size, uint64_t *from, uint64_t *to);
/* Accept-Encoding: 1 gzip, 0 identity, -1 nothing acceptable (406). */
int files_pick_encoding(const char *header);

#endif
