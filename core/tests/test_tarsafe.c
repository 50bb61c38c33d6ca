/* Tests for tarsafe.c, the tar filter between a sandbox's tar and the host's:
 * what passes comes out rewritten (modes, owners) at any split of the input;
 * devices, FIFOs, escaping names and links, long names hiding "..", and
 * writes through a symlink of the same archive are refused, naming the entry. */
#include "codec.h"
#include "testing.h"

#include <stdlib.h>

typedef struct {
  uint8_t data[1 << 16];
  size_t len;
} archive;

static void octal(uint8_t *f, size_t len, unsigned long long v) {
  f[len - 1] = 0;
  for (size_t i = len - 1; i-- > 0; v >>= 3) f[i] = (uint8_t)('0' + (v & 7));
}

/* Appends a header (ustar) and `size` bytes of data of `fill`. */
static void member(archive *a, const char *name, char type, unsigned mode, const char *link, size_t size, char fill) {
  uint8_t *h = a->data + a->len;
  memset(h, 0, 512);
  memcpy(h, name, strnlen(name, 100));
  octal(h + 100, 8, mode);
  octal(h + 108, 8, 4242);
  octal(h + 116, 8, 4242);
  octal(h + 124, 12, size);
  octal(h + 136, 12, 1700000000);
  h[156] = (uint8_t)type;
  if (link) memcpy(h + 157, link, strnlen(link, 100));
  memcpy(h + 257, "ustar\0" "00", 8);
  memcpy(h + 265, "evil", 4);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  a->len += 512;
  memset(a->data + a->len, fill, size);
  a->len += (size + 511) / 512 * 512;
}

/* An extension member ('L', 'K', 'x') whose data is text. */
static void ext(archive *a, char type, const char *text) {
  size_t n = strlen(text) + (type == 'x' ? 0 : 1);
  member(a, "././@LongLink", type, 0644, NULL, n, 0);
  memcpy(a->data + a->len - (n + 511) / 512 * 512, text, strlen(text));
}

static void end(archive *a) {
  memset(a->data + a->len, 0, 1024);
  a->len += 1024;
}

static int collect(void *ud, const void *p, size_t n) {
  archive *out = ud;
  if (out->len + n > sizeof out->data) return -1;
  memcpy(out->data + out->len, p, n);
  out->len += n;
  return 0;
}

/* Runs a through the filter in pieces of `step`: 0, or -1 with *why set. */
static int for_sandbox; /* filter() calls e2b_tarsafe_for_sandbox */

static int filter(const archive *a, size_t step, archive *out, char *why, size_t why_len) {
  e2b_tarsafe *t = e2b_tarsafe_new();
  if (for_sandbox) e2b_tarsafe_for_sandbox(t);
  out->len = 0;
  int r = 0;
  for (size_t off = 0; off < a->len && !r; off += step)
    r = e2b_tarsafe_feed(t, a->data + off, a->len - off < step ? a->len - off : step, collect, out);
  if (!r) r = e2b_tarsafe_finish(t);
  snprintf(why, why_len, "%s", r ? e2b_tarsafe_error(t) : "");
  e2b_tarsafe_free(t);
  return r;
}

static archive in, out;
static char why[512];

static void passes_files_rewritten_at_any_split(void) {
  in.len = 0;
  member(&in, "./", '5', 0755, NULL, 0, 0);
  member(&in, "./bin/sh", '0', 04755, NULL, 700, 'A');
  member(&in, "dir", '5', 03777, NULL, 0, 0);
  member(&in, "dir/up", '2', 0777, "../bin/sh", 0, 0);
  member(&in, "dir/h", '1', 0644, "bin/sh", 0, 0);
  end(&in);
  archive first;
  CHECK(filter(&in, in.len, &first, why, sizeof why) == 0);
  for (size_t step = 1; step < 1500; step += 97) {
    CHECK(filter(&in, step, &out, why, sizeof why) == 0);
    CHECK_MEM(out.data, out.len, first.data, first.len);
  }
  /* "./" is dropped: bin/sh is the first header, mode 0755, owners 0, data kept */
  CHECK_STR((char *)first.data, "bin/sh");
  CHECK_STR((char *)first.data + 100, "0000755");
  CHECK_STR((char *)first.data + 108, "0000000");
  CHECK_STR((char *)first.data + 265, "");
  CHECK(first.data[512] == 'A' && first.data[512 + 699] == 'A' && first.data[512 + 700] == 0);
  CHECK_STR((char *)first.data + 512 * 3 + 100, "0000777"); /* dir: setgid and sticky gone */
  CHECK(first.len == 512 * 6 + 1024);
}

static void refuses(const char *want) {
  CHECK(filter(&in, 100, &out, why, sizeof why) != 0);
  CHECK_STR(why, want);
}

static void refuses_devices_fifos_and_unknown_types(void) {
  const char types[] = {'3', '4', '6', 'S', 'V'};
  const char *whys[] = {"a character device", "a block device", "a FIFO", "a sparse file (unsupported)",
                        "an entry of a type other than file, directory or link"};
  for (int i = 0; i < 5; i++) {
    char want[128];
    in.len = 0;
    member(&in, "dev", types[i], 06777, NULL, 0, 0);
    end(&in);
    snprintf(want, sizeof want, "refused dev: %s", whys[i]);
    refuses(want);
  }
}

static void refuses_names_out(void) {
  in.len = 0;
  member(&in, "/etc/passwd", '0', 0644, NULL, 1, 'x');
  end(&in);
  refuses("refused /etc/passwd: an absolute name");
  in.len = 0;
  member(&in, "a/../../x", '0', 0644, NULL, 1, 'x');
  end(&in);
  refuses("refused a/../../x: a '..' component");
}

/* The long name is checked, not the ustar name it stands for. */
static void reads_long_names(void) {
  char name[300];
  memset(name, 'a', 150);
  strcpy(name + 150, "/../x");
  in.len = 0;
  ext(&in, 'L', name);
  member(&in, "aaaa", '0', 0644, NULL, 1, 'x');
  end(&in);
  CHECK(filter(&in, 7, &out, why, sizeof why) != 0);
  CHECK(strstr(why, "/../x: a '..' component") != NULL);
  in.len = 0;
  ext(&in, 'x', "16 path=../evil\n");
  member(&in, "fine", '0', 0644, NULL, 1, 'x');
  end(&in);
  refuses("refused ../evil: a '..' component");
  in.len = 0;
  ext(&in, 'x', "20 linkpath=/etc/pw\n");
  member(&in, "l", '2', 0777, "fine", 0, 0);
  end(&in);
  refuses("refused l: a symlink (an absolute target)");
}

static void refuses_links_out(void) {
  in.len = 0;
  member(&in, "a/b/s", '2', 0777, "../../..", 0, 0);
  end(&in);
  refuses("refused a/b/s: a symlink (a target outside the directory)");
  in.len = 0;
  member(&in, "s", '2', 0777, "d/../..", 0, 0);
  end(&in);
  refuses("refused s: a symlink (a target with '..' after a name)");
  in.len = 0;
  member(&in, "s", '2', 0777, "d", 0, 0);
  member(&in, "s/x", '0', 0644, NULL, 1, 'x');
  end(&in);
  refuses("refused s/x: a path through a symlink of the archive");
  in.len = 0;
  member(&in, "s", '2', 0777, ".", 0, 0);
  member(&in, "h", '1', 0644, "s", 0, 0);
  end(&in);
  refuses("refused h: a hard link (it replaces a symlink of the archive)");
  in.len = 0;
  member(&in, "h", '1', 0644, "../x", 0, 0);
  end(&in);
  refuses("refused h: a hard link (a '..' component)");
}

/* For a sandbox's own tar: any target kept as written; paths through a
 * symlink and hard links to one still refused. */
static void keeps_symlinks_as_written_when_asked(void) {
  for_sandbox = 1;
  in.len = 0;
  member(&in, "a/abs", '2', 0777, "/etc/passwd", 0, 0);
  member(&in, "a/up", '2', 0777, "../../..", 0, 0);
  end(&in);
  CHECK(filter(&in, 100, &out, why, sizeof why) == 0);
  CHECK_STR((char *)out.data + 157, "/etc/passwd");
  CHECK_STR((char *)out.data + 512 + 157, "../../..");
  in.len = 0;
  member(&in, "s", '2', 0777, "/etc", 0, 0);
  member(&in, "s/x", '0', 0644, NULL, 1, 'x');
  end(&in);
  refuses("refused s/x: a path through a symlink of the archive");
  in.len = 0;
  member(&in, "s", '2', 0777, "/etc", 0, 0);
  member(&in, "h", '1', 0644, "s", 0, 0);
  end(&in);
  refuses("refused h: a hard link (it replaces a symlink of the archive)");
  in.len = 0;
  member(&in, "s", '2', 0777, "", 0, 0);
  end(&in);
  refuses("refused s: a symlink (an empty target)");
  for_sandbox = 0;
}

/* A directory's mode: the host unpacking it must get back in (0700 added);
 * a sandbox's own tar keeps it as written, as E2B's builder's does. */
static void keeps_a_directory_mode_only_for_a_sandbox(void) {
  for (int sbx = 0; sbx <= 1; sbx++) {
    for_sandbox = sbx;
    in.len = 0;
    member(&in, "d", '5', 0500, NULL, 0, 0);
    end(&in);
    CHECK(filter(&in, 100, &out, why, sizeof why) == 0);
    CHECK_STR((char *)out.data + 100, sbx ? "0000500" : "0000700");
  }
  for_sandbox = 0;
}

static void refuses_broken_archives(void) {
  in.len = 0;
  member(&in, "f", '0', 0644, NULL, 10, 'x');
  refuses("refused the archive at byte 1024: the archive ends without its end-of-archive marker");
  in.data[148] ^= 1;
  end(&in);
  CHECK(filter(&in, 512, &out, why, sizeof why) != 0);
  CHECK(strstr(why, "bad checksum") != NULL);
}

int main(void) {
  RUN(passes_files_rewritten_at_any_split);
  RUN(refuses_devices_fifos_and_unknown_types);
  RUN(refuses_names_out);
  RUN(reads_long_names);
  RUN(refuses_links_out);
  RUN(keeps_symlinks_as_written_when_asked);
  RUN(keeps_a_directory_mode_only_for_a_sandbox);
  RUN(refuses_broken_archives);
  return TESTING_DONE();
}
