/* ports.h — the port proxy (ports.c). */
#ifndef EMU_PORTS_H
#define EMU_PORTS_H

#include "http.h"

void port_route(http_req *r, const char *sandbox_id, long port);

#endif
