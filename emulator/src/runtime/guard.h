/* guard.h — no sandbox outlives e2b-local, even one that was SIGKILLed:
 * a guard process the server's death leaves behind kills what its
 * sandboxes left, and every start sweeps what dead servers left. */
#ifndef EMU_GUARD_H
#define EMU_GUARD_H

/* Kills what sandboxes of dead servers left (orphans in e2b-local cgroups,
 * or naming state_dir's sandboxes), then starts this server's guard. */
void guard_start(const char *state_dir);
/* `e2b-local guard --fd N`: reads the state directory from fd N, waits for
 * its EOF (the server's end, however it came) and sweeps. */
int guard_main(int argc, char **argv);

#endif
