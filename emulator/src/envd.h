/* envd.h — pieces of the per-sandbox envd API shared by its handlers. */
#ifndef EMU_ENVD_H
#define EMU_ENVD_H

#include "http.h"

/* /files (files.c): set up r for GET or POST. */
void files_route(http_req *r);

#endif
