/* release.c — the owner's hold on a sandbox handle. e2b_sbx_new gives its
 * caller one hold; requests take references of their own (e2b_sbx_retain,
 * e2b_sbx_unref in client.c, which knows nothing of kept output). A
 * sandbox's watch (outwatch.c) is a reference too: it lingers for the next
 * reader only while the owner still holds the handle, so the owner's
 * release ends it, at once when no reader waits on it, else when the last
 * one leaves. The dependency runs one way: this file calls outwatch.c and
 * client.c, and nothing below calls up into either. */
#include "internal.h"

void e2b_sbx_release(e2b_sbx *sbx) {
  if (!sbx) return;
  sbx->released = 1;
  e2b_outwatch_orphaned(sbx);
  e2b_sbx_unref(sbx);
}
