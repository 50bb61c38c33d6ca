/* envd.h — pieces of the per-sandbox envd API shared by its handlers. */
#ifndef EMU_ENVD_H
#define EMU_ENVD_H

#include "http.h"

/* /files (files.c): set up r for GET or POST. */
void files_route(http_req *r);
/* Signed /files URLs built on E2B_SANDBOX_URL carry no sandbox id: the
 * signature itself identifies the sandbox whose token made it (malloc'd id). */
char *files_sandbox_by_signature(struct MHD_Connection *c, const char *method);

#endif
