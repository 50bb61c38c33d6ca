/* volcontent.h — the volume content API: stat, list, mkdir, read, write,
 * metadata and removal inside one volume, authorized by its own token. */
#ifndef EMU_VOLCONTENT_H
#define EMU_VOLCONTENT_H

#include "http.h"

/* Routes a request whose URL starts with /volumecontent/ (no API key: the
 * volume's token). Leaves r->on_complete unset for an unknown path (404). */
void volcontent_route(http_req *r);

#endif
