/* templates.h — building script templates at start (templates.c). */
#ifndef EMU_TEMPLATES_H
#define EMU_TEMPLATES_H

/* Builds every registered script template; -1 when any failed. */
int templates_build_all(void);

#endif
