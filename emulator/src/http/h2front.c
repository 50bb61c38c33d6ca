/* h2front.c — the HTTPS listener served by nghttpx (h2front.h). */
#define _GNU_SOURCE
#include "h2front.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define NGHTTPX "/usr/sbin/nghttpx"

struct h2front {
  int fd;
  unsigned port;
  pid_t pid;
  char *dir, *cert, *key;
};

static int listen_on(const char *host, uint16_t port, unsigned *bound) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0) return -1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof sa;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 512) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
    close(fd);
    return -1;
  }
  *bound = ntohs(sa.sin_port);
  return fd;
}

static int write_leaf(h2front *f, const tls_leaf *leaf, const char *dir) {
  f->dir = xasprintf("%s/h2front", dir);
  f->cert = xasprintf("%s/cert.pem", f->dir);
  f->key = xasprintf("%s/key.pem", f->dir);
  if (mkdir_p(f->dir, 0700) != 0) return -1;
  if (write_file(f->key, leaf->key_pem, strlen(leaf->key_pem), 0600) != 0) return -1;
  return write_file(f->cert, leaf->cert_pem, strlen(leaf->cert_pem), 0600);
}

/* nghttpx's options: HTTP/2 and HTTP/1.1 offered by ALPN; requests to the
 * plain listener with Host as the client sent it; a Forwarded header whose
 * for= token is fresh for each client connection (what netstats.c counts
 * connections by; one the client sent is dropped); no Via; timeouts as long
 * as a command may stream quietly (nghttpx's default cuts at one minute). */
static char **front_argv(const h2front *f, const char *host, uint16_t backend_port) {
  const char *fhost = strcmp(host, "0.0.0.0") == 0 ? "*" : strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
  char **a = xcalloc(24, sizeof *a);
  int n = 0;
  a[n++] = xstrdup(NGHTTPX);
  a[n++] = xasprintf("--frontend=%s,%u", fhost, f->port);
  a[n++] = xasprintf("--backend=127.0.0.1,%u;;proto=http/1.1", backend_port);
  a[n++] = xstrdup(f->key);
  a[n++] = xstrdup(f->cert);
  const char *fixed[] = {"--conf=/dev/null", "--log-level=WARN", "--single-process", "--workers=1", "--no-ocsp", "--no-via", "--npn-list=h2,http/1.1",
                         "--add-forwarded=for,proto", "--forwarded-for=obfuscated", "--strip-incoming-forwarded",
                         "--frontend-read-timeout=24h", "--frontend-http2-read-timeout=24h",
                         "--backend-read-timeout=24h", "--backend-write-timeout=24h", "--frontend-write-timeout=24h",
                         "--frontend-keep-alive-timeout=1h", NULL};
  for (int i = 0; fixed[i]; i++) a[n++] = xstrdup(fixed[i]);
  return a;
}

static char **front_env(int fd) {
  size_t n = 0;
  while (environ[n]) n++;
  char **e = xcalloc(n + 2, sizeof *e);
  for (size_t i = 0; i < n; i++) e[i] = environ[i];
  e[n] = xasprintf("NGHTTPX_ACCEPT_1=tcp,%d", fd);
  return e;
}

/* Between fork and exec only async-signal-safe calls: nghttpx dies with
 * e2b-local, with its signals unblocked (serve() blocks them), and keeps
 * the listening socket across exec. */
static pid_t spawn(char **argv, char **envp, int fd) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(125);
  int fl = fcntl(fd, F_GETFD);
  if (fl < 0 || fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) < 0) _exit(125);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) dup2(devnull, 0);
  execve(argv[0], argv, envp);
  _exit(127);
}

h2front *h2front_start(const char *host, uint16_t port, uint16_t backend_port, const tls_leaf *leaf,
                       const char *dir) {
  h2front *f = xcalloc(1, sizeof *f);
  f->pid = -1;
  f->fd = listen_on(host, port, &f->port);
  if (f->fd < 0) {
    log_msg("cannot listen on %s:%u (--tls-listen): %s", host, port, strerror(errno));
    h2front_stop(f);
    return NULL;
  }
  if (write_leaf(f, leaf, dir) != 0) {
    log_msg("--h2: cannot write the certificate for nghttpx under %s: %s", dir, strerror(errno));
    h2front_stop(f);
    return NULL;
  }
  char **argv = front_argv(f, host, backend_port), **envp = front_env(f->fd);
  f->pid = access(NGHTTPX, X_OK) == 0 ? spawn(argv, envp, f->fd) : -1;
  for (int i = 0; argv[i]; i++) free(argv[i]);
  free(argv);
  size_t n = 0;
  while (envp[n]) n++;
  free(envp[n - 1]);
  free(envp);
  if (f->pid < 0) {
    log_msg("--h2: cannot start %s (Debian's nghttp2-proxy): %s", NGHTTPX, strerror(errno));
    h2front_stop(f);
    return NULL;
  }
  /* nghttpx holds the socket now: should it die, clients are refused, not
   * left waiting in a backlog nobody accepts from. */
  close(f->fd);
  f->fd = -1;
  return f;
}

unsigned h2front_port(const h2front *f) { return f ? f->port : 0; }

void h2front_stop(h2front *f) {
  if (!f) return;
  if (f->pid > 0) {
    kill(f->pid, SIGTERM);
    while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (f->fd >= 0) close(f->fd);
  if (f->key) unlink(f->key);
  if (f->cert) unlink(f->cert);
  if (f->dir) rmdir(f->dir);
  free(f->key);
  free(f->cert);
  free(f->dir);
  free(f);
}
