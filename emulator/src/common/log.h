/* log.h — one line per event on stderr; never pass secrets here. */
#ifndef EMU_LOG_H
#define EMU_LOG_H

void log_set_prefix(const char *prefix);
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
