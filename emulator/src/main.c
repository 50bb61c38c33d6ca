/* main.c — e2b-local command line: serve, exec, and the hidden agent mode. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "envdver.h"
#include "codec.h"
#include "egress.h"
#include "guard.h"
#include "log.h"
#include "h2front.h"
#include "netstats.h"
#include "proc.h"
#include "runtime.h"
#include "sandbox.h"
#include "sandbox_limits.h"
#include "server.h"
#include "store.h"
#include "sudo.h"
#include "envd_watch.h"
#include "templates.h"
#include "tplbuild.h"
#include "tls_ca.h"
#include "tree.h"
#include "util.h"

typedef struct options {
  char host[64];
  int port;
  char tls_host[64];
  int tls_port; /* -1: not given (the default follows --listen) */
  int tls_given;
  int no_tls;
  int h2; /* --h2: nghttpx serves the HTTPS port (h2front.h) */
  const char *state;
  const char *api_key;
  const char *domain;
  const char *admin_token;
  const char *templates[32];
  int ntemplates;
  const char *api_key_file;
  const char *egress_ca_file; /* trusted for upstreams of intercepted HTTPS (beside the system's) */
  const char *api;            /* --api live | self-hosted | self-hosted-no-connect */
  const char *envd_version;   /* --envd-version: the envd sandboxes report and act as */
  long sandbox_pids;          /* all sandboxes' processes and threads; 0: the default */
  long uid_base;              /* --sandbox-uid-base: the first sandbox's host uid; 0: the default */
  int latency_ms;             /* --latency: a remote service's delay (netstats.h) */
  int no_isolation, no_freezer, log_requests;
  char **cmd; /* exec */
} options;

static void usage(FILE *f) {
  fprintf(f,
          "usage: e2b-local serve [OPTIONS]\n"
          "       e2b-local exec [OPTIONS] -- CMD ARGS...\n"
          "       e2b-local --version | --help\n"
          "\n"
          "serve: run a local E2B-compatible server until SIGINT/SIGTERM; prints\n"
          "       E2B_API_URL, E2B_SANDBOX_URL (plain HTTP), E2B_DOMAIN (HTTPS, the\n"
          "       SDK's own URL shapes), E2B_API_KEY, E2B_LOCAL_ADMIN_TOKEN and the CA\n"
          "       to trust (NODE_EXTRA_CA_CERTS, E2B_CA_FILE) once it accepts requests.\n"
          "exec:  run one for the duration of CMD, with those variables (and\n"
          "       E2B_LOCAL_BIN, this program's path) in CMD's environment; exits with\n"
          "       CMD's status.\n"
          "\n"
          "options:\n"
          "  --listen HOST:PORT   IPv4 address to listen on (default 127.0.0.1:3000 for\n"
          "                       serve, a free port for exec)\n"
          "  --tls-listen HOST:PORT\n"
          "                       where HTTPS is served, with a certificate for\n"
          "                       e2b.localhost and *.e2b.localhost from e2b-local's own CA\n"
          "                       (DIR/tls/ca.pem; default: --listen's address, port 3443,\n"
          "                       or a free port when --listen's port is 0)\n"
          "  --h2                 the HTTPS listener speaks HTTP/2 beside HTTP/1.1 (ALPN):\n"
          "                       nghttpx (Debian's nghttp2-proxy) serves it and forwards\n"
          "                       to the plain listener; for measuring clients (off)\n"
          "  --no-tls             plain HTTP only (E2B_DOMAIN is then localhost:PORT)\n"
          "  --api-key KEY        the API key clients must send (visible in the process\n"
          "                       list: prefer --api-key-file or E2B_LOCAL_API_KEY)\n"
          "  --api-key-file FILE  read the API key from FILE\n"
          "                       (default: E2B_LOCAL_API_KEY; with --state, the key kept\n"
          "                       in DIR/api_key (mode 0600) from the first start; else\n"
          "                       a random key per start)\n"
          "  --domain D           the domain sandbox hosts live under (default\n"
          "                       e2b.localhost:TLSPORT: <port>-<id>.e2b.localhost:TLSPORT)\n"
          "  --state DIR          keep sandboxes, snapshots, volumes, the API key and the CA\n"
          "                       across restarts (running sandboxes come back paused);\n"
          "                       default: a temporary directory removed at exit\n"
          "  --template NAME=DIR|NAME=SCRIPT\n"
          "                       register a template: a directory (home/user, root, tmp\n"
          "                       seed the sandbox; other top-level directories are\n"
          "                       mounted read-only) or a setup script run once as root in\n"
          "                       a fresh sandbox at start (repeatable, at most 32)\n"
          "  --admin-token TOKEN  token of the admin API (/_e2b_local/faults; default:\n"
          "                       random, handed to CMD by exec)\n"
          "  --api live|self-hosted|self-hosted-no-connect\n"
          "                       the API to serve: E2B's live API (default), or E2B built\n"
          "                       from e2b-dev/infra, without POST /v2/sandboxes and\n"
          "                       /v2/sandboxes/{id}/connect, and with -no-connect as it\n"
          "                       was before its connect route (only /resume; October\n"
          "                       2025) (default: E2B_LOCAL_API)\n"
          "  --envd-version V     the envd version sandboxes report (envdVersion), and act\n"
          "                       as: what envd gained after V is refused or ignored as\n"
          "                       envd V does (default: E2B_LOCAL_ENVD_VERSION, else\n"
          "                       " ENVD_VERSION_CURRENT ")\n"
          "  --latency MS         answer as a server MS milliseconds of round trip away\n"
          "                       would: each answer waits MS, and a new connection MS\n"
          "                       more (2*MS over HTTPS: TCP, then the TLS handshake);\n"
          "                       0 to 10000, default 0\n"
          "  --log-requests       log one line per request: method, path, status, time\n"
          "                       (never a query string, key or token)\n"
          "  --egress-ca-file FILE\n"
          "                       a CA (PEM) the egress proxy trusts beside the system\n"
          "                       store when it opens HTTPS to a host with network.rules\n"
          "                       (default: E2B_LOCAL_EGRESS_CA_FILE)\n"
          "  --sandbox-pids N     processes and threads all sandboxes together may hold\n"
          "                       (each also has its own cap of 1024); default: three\n"
          "                       quarters of the host's pid_max, so the host and the\n"
          "                       server always keep the rest\n"
          "  --sandbox-uid-base N with a root server, each running sandbox has host uids\n"
          "                       of its own, a block of 65536 from N + k*65536 (its root\n"
          "                       is the first, its user the first + 1000), up to 2^31;\n"
          "                       use ids no host user or container has; default\n"
          "                       1879048192 (0x70000000)\n"
          "  --no-isolation       run sandboxes as plain child processes (no bubblewrap)\n"
          "  --no-freezer         pause with SIGSTOP/SIGCONT instead of the cgroup freezer\n"
          "  --version            print the version and exit\n"
          "  --help, -h           print this help and exit\n");
}

static void version(void) { printf("e2b-local %s\n", E2B_LOCAL_VERSION); }

/* --sandbox-uid-base: a whole block below 2^31, above the host's usual ids. */
static long parse_uid_base(const char *s) {
  char *end;
  long n = strtol(s, &end, 0);
  if (!*s || *end || n < (long)IDS_BLOCK || n > 0x80000000L - (long)IDS_BLOCK) {
    fprintf(stderr, "e2b-local: invalid --sandbox-uid-base '%s' (expected %u to %ld)\n", s, IDS_BLOCK,
            0x80000000L - (long)IDS_BLOCK);
    return -1;
  }
  return n;
}

static int parse_listen(const char *s, char host[64], int *port_out) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s || (size_t)(colon - s) >= 64) return -1;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || port < 0 || port > 65535) return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  *port_out = (int)port;
  return 0;
}

/* The options that only set a flag or keep one string, a row each: how many
 * arguments a took (1, or 2 with its value val), 0 when it is none of them
 * (or lacks its value: val NULL). */
static int simple_option(options *o, const char *a, const char *val) {
  const struct {
    const char *name;
    int *flag;
  } flags[] = {{"--no-tls", &o->no_tls},
               {"--h2", &o->h2},
               {"--log-requests", &o->log_requests},
               {"--no-isolation", &o->no_isolation},
               {"--no-freezer", &o->no_freezer}};
  const struct {
    const char *name;
    const char **to;
  } strings[] = {{"--state", &o->state},
                 {"--api-key", &o->api_key},
                 {"--api-key-file", &o->api_key_file},
                 {"--admin-token", &o->admin_token},
                 {"--domain", &o->domain},
                 {"--egress-ca-file", &o->egress_ca_file},
                 {"--api", &o->api},
                 {"--envd-version", &o->envd_version}};
  for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
    if (strcmp(a, flags[k].name) == 0) {
      *flags[k].flag = 1;
      return 1;
    }
  }
  for (size_t k = 0; val && k < sizeof strings / sizeof *strings; k++) {
    if (strcmp(a, strings[k].name) == 0) {
      *strings[k].to = val;
      return 2;
    }
  }
  return 0;
}

static const char *const API_NAMES[] = {"live", "self-hosted", "self-hosted-no-connect"};

/* Which of E2B's APIs to serve: its index in API_NAMES (live when not
 * said), or -1. */
static int api_mode(const options *o) {
  for (int i = 0; o->api && i < 3; i++)
    if (strcmp(o->api, API_NAMES[i]) == 0) return i;
  return o->api ? -1 : 0;
}

/* --api, else E2B_LOCAL_API. */
static int check_api(options *o) {
  if (!o->api && getenv("E2B_LOCAL_API") && *getenv("E2B_LOCAL_API")) o->api = getenv("E2B_LOCAL_API");
  if (api_mode(o) >= 0) return 0;
  fprintf(stderr, "e2b-local: invalid --api '%s' (expected live, self-hosted or self-hosted-no-connect)\n", o->api);
  return -1;
}

/* --envd-version, else E2B_LOCAL_ENVD_VERSION. */
static int check_envd_version(options *o) {
  const char *env = getenv("E2B_LOCAL_ENVD_VERSION");
  if (!o->envd_version && env && *env) o->envd_version = env;
  if (!o->envd_version || envd_version_set(o->envd_version) == 0) return 0;
  fprintf(stderr, "e2b-local: invalid --envd-version '%s' (expected MAJOR.MINOR.PATCH, at most %s)\n",
          o->envd_version, ENVD_VERSION_CURRENT);
  return -1;
}

static int parse_args(int argc, char **argv, int exec_mode, options *o) {
  snprintf(o->host, sizeof o->host, "127.0.0.1");
  o->port = exec_mode ? 0 : 3000;
  o->tls_port = -1;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    int has_val = i + 1 < argc;
    int took = simple_option(o, a, has_val ? argv[i + 1] : NULL);
    if (took) {
      i += took - 1;
    } else if (strcmp(a, "--") == 0 && exec_mode) {
      o->cmd = &argv[i + 1];
      break;
    } else if (strcmp(a, "--listen") == 0 && has_val) {
      if (parse_listen(argv[++i], o->host, &o->port)) {
        fprintf(stderr, "e2b-local: invalid --listen '%s' (expected HOST:PORT)\n", argv[i]);
        return -1;
      }
    } else if (strcmp(a, "--tls-listen") == 0 && has_val) {
      if (parse_listen(argv[++i], o->tls_host, &o->tls_port)) {
        fprintf(stderr, "e2b-local: invalid --tls-listen '%s' (expected HOST:PORT)\n", argv[i]);
        return -1;
      }
      o->tls_given = 1;
    } else if (strcmp(a, "--sandbox-pids") == 0 && has_val) {
      char *end;
      long n = strtol(argv[++i], &end, 10);
      long host = limits_host_tasks();
      if (*end || n < 64 || (host > 0 && n >= host)) {
        fprintf(stderr, "e2b-local: invalid --sandbox-pids '%s' (expected 64 to %ld)\n", argv[i],
                host > 0 ? host - 1 : LONG_MAX);
        return -1;
      }
      o->sandbox_pids = n;
    } else if (strcmp(a, "--sandbox-uid-base") == 0 && has_val) {
      if ((o->uid_base = parse_uid_base(argv[++i])) < 0) return -1;
    } else if (strcmp(a, "--latency") == 0 && has_val) {
      char *end;
      long ms = strtol(argv[++i], &end, 10);
      if (!*argv[i] || *end || ms < 0 || ms > 10000) {
        fprintf(stderr, "e2b-local: invalid --latency '%s' (expected 0 to 10000 milliseconds)\n", argv[i]);
        return -1;
      }
      o->latency_ms = (int)ms;
    } else if (strcmp(a, "--version") == 0) {
      version();
      exit(0);
    } else if (strcmp(a, "--template") == 0 && has_val) {
      if (o->ntemplates == 32) {
        fprintf(stderr, "e2b-local: at most 32 --template options\n");
        return -1;
      }
      o->templates[o->ntemplates++] = argv[++i];
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "e2b-local: unknown or incomplete option '%s'\n", a);
      usage(stderr);
      return -1;
    }
  }
  if (!o->egress_ca_file && getenv("E2B_LOCAL_EGRESS_CA_FILE") && *getenv("E2B_LOCAL_EGRESS_CA_FILE"))
    o->egress_ca_file = getenv("E2B_LOCAL_EGRESS_CA_FILE");
  if (check_api(o) != 0 || check_envd_version(o) != 0) return -1;
  if (o->tls_port < 0) { /* beside --listen: a free port when it takes one */
    snprintf(o->tls_host, sizeof o->tls_host, "%s", o->host);
    o->tls_port = o->port == 0 ? 0 : 3443;
  }
  if (exec_mode && (!o->cmd || !o->cmd[0])) {
    fprintf(stderr, "e2b-local exec: missing command after --\n");
    return -1;
  }
  return 0;
}

/* Thousands of streams need thousands of descriptors. */
static void raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* Reads a key (the first line of path): NULL when absent, unreadable or empty. */
static char *read_key(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char line[512] = "";
  char *got = fgets(line, sizeof line, f);
  fclose(f);
  line[strcspn(line, "\r\n")] = '\0';
  return got && *line ? xstrdup(line) : NULL;
}

/* Writes a new key into state_dir/api_key, readable by its owner only. */
static char *new_key(const char *state_dir) {
  char hex[41];
  if (e2b_random_hex(hex, 40) != 0) return NULL;
  char *key = xasprintf("e2b_%s", hex);
  if (!state_dir) return key;
  char *path = xasprintf("%s/api_key", state_dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || dprintf(fd, "%s\n", key) < 0) log_msg("cannot keep the API key in %s: %s", path, strerror(errno));
  if (fd >= 0) close(fd);
  free(path);
  return key;
}

/* --api-key, --api-key-file, E2B_LOCAL_API_KEY, the key kept in --state, or a
 * new one (kept there when there is a --state). */
static char *choose_api_key(const options *o, const char *state_dir) {
  if (o->api_key) return xstrdup(o->api_key);
  if (o->api_key_file) {
    char *key = read_key(o->api_key_file);
    if (!key) log_msg("cannot read an API key from %s (--api-key-file)", o->api_key_file);
    return key;
  }
  const char *env = getenv("E2B_LOCAL_API_KEY");
  if (env && *env) return xstrdup(env);
  if (state_dir) {
    char *path = xasprintf("%s/api_key", state_dir);
    char *kept = read_key(path);
    free(path);
    if (kept) return kept;
  }
  return new_key(state_dir);
}

#define MAX_ENV 8

typedef struct running {
  server *srv, *tls_srv;
  h2front *front; /* --h2: the HTTPS listener instead of tls_srv */
  tls_ca *ca;
  tls_leaf leaf; /* the HTTPS listener's certificate, in memory only */
  char *state_dir;
  int state_is_temp;
  char *api_key;
  char *admin_token;
  char *env[MAX_ENV]; /* "NAME=value", what serve prints and exec sets */
  int nenv;
} running;

/* The names the HTTPS certificate covers: e2b.localhost and its sandbox
 * hosts (one label deep, as <port>-<id> is), loopback, and --domain's. */
static size_t tls_names(const options *o, const char *names[8], char dom[2][300]) {
  size_t n = 0;
  names[n++] = "e2b.localhost";
  names[n++] = "*.e2b.localhost";
  names[n++] = "localhost";
  names[n++] = "127.0.0.1";
  if (o->domain) {
    int len = (int)strcspn(o->domain, ":");
    snprintf(dom[0], sizeof dom[0], "%.*s", len, o->domain);
    snprintf(dom[1], sizeof dom[1], "*.%.*s", len, o->domain);
    names[n++] = dom[0];
    names[n++] = dom[1];
  }
  if (strcmp(o->tls_host, "0.0.0.0") != 0 && strcmp(o->tls_host, "127.0.0.1") != 0 &&
      strcmp(o->tls_host, "localhost") != 0)
    names[n++] = o->tls_host;
  return n;
}

/* The CA kept in DIR/tls: the HTTPS listener's, and what sandboxes trust
 * for the HTTPS the egress proxy intercepts (hosts with network.rules). */
static int open_ca(running *run) {
  char err[256];
  char *dir = xasprintf("%s/tls", run->state_dir);
  run->ca = tls_ca_open(dir, err, sizeof err);
  free(dir);
  if (!run->ca) log_msg("cannot set up e2b-local's CA: %s (--no-tls serves plain HTTP only)", err);
  return run->ca ? 0 : -1;
}

/* The HTTPS listener's port, 0 when there is none. */
static unsigned https_port(const running *run) {
  return run->front ? h2front_port(run->front) : run->tls_srv ? server_port(run->tls_srv) : 0;
}

/* The HTTPS listener: a fresh leaf from the CA. */
static int start_tls(const options *o, running *run) {
  char err[256];
  if (!run->ca && open_ca(run) != 0) return -1;
  const char *names[8];
  char dom[2][300];
  size_t n = tls_names(o, names, dom);
  if (tls_ca_issue(run->ca, names, n, 397, &run->leaf, err, sizeof err) != 0) {
    log_msg("cannot set up HTTPS: %s", err);
    return -1;
  }
  if (o->h2) {
    char *dir = xasprintf("%s/tls", run->state_dir);
    run->front = h2front_start(o->tls_host, (uint16_t)o->tls_port, (uint16_t)server_port(run->srv), &run->leaf, dir);
    free(dir);
    netstats_set_front(run->front != NULL);
  } else {
    run->tls_srv = server_start(o->tls_host, (uint16_t)o->tls_port, &run->leaf);
  }
  if (https_port(run)) egress_set_tls_port((uint16_t)https_port(run));
  return https_port(run) ? 0 : -1;
}

static void add_env(running *run, const char *name, const char *value) {
  if (run->nenv < MAX_ENV) run->env[run->nenv++] = xasprintf("%s=%s", name, value);
}

/* The domain, the base URL and the variables serve prints and exec sets. */
static void publish(const options *o, running *run, unsigned port) {
  const char *host = strcmp(o->host, "0.0.0.0") == 0 || strcmp(o->host, "localhost") == 0 ? "127.0.0.1" : o->host;
  if (o->domain)
    snprintf(g_server.domain, sizeof g_server.domain, "%s", o->domain);
  else if (https_port(run))
    snprintf(g_server.domain, sizeof g_server.domain, "e2b.localhost:%u", https_port(run));
  else
    snprintf(g_server.domain, sizeof g_server.domain, "localhost:%u", port);
  snprintf(g_server.base_url, sizeof g_server.base_url, "http://%s:%u", host, port);
  if (https_port(run)) { /* first: whoever reads these lines has the CA before the URLs */
    add_env(run, "NODE_EXTRA_CA_CERTS", tls_ca_cert_file(run->ca));
    add_env(run, "E2B_CA_FILE", tls_ca_cert_file(run->ca));
  }
  add_env(run, "E2B_API_URL", g_server.base_url);
  add_env(run, "E2B_SANDBOX_URL", g_server.base_url);
  add_env(run, "E2B_DOMAIN", g_server.domain);
  add_env(run, "E2B_API_KEY", run->api_key);
  add_env(run, "E2B_LOCAL_ADMIN_TOKEN", run->admin_token);
  const char *isolation = runtime_isolated() ? "bubblewrap isolation" : "no isolation";
  if (https_port(run))
    log_msg("listening on %s and https://%s:%u%s (state %s, %s)", g_server.base_url, o->tls_host, https_port(run),
            run->front ? " (HTTP/2 and HTTP/1.1, nghttpx)" : "", run->state_dir, isolation);
  else
    log_msg("listening on %s (state %s, %s)", g_server.base_url, run->state_dir, isolation);
}

static int start_all(const options *o, running *run) {
  runtime_init(o->no_isolation, o->no_freezer, o->sandbox_pids);
  /* Before any sandbox boots: template setup scripts may use the network. */
  sandbox_listen(&egress_sandbox_listener);
  sandbox_listen(&watch_sandbox_listener);
  egress_init();
  if (o->state) {
    if (mkdir_p(o->state, 0700) != 0) {
      log_msg("cannot create state directory %s: %s", o->state, strerror(errno));
      return -1;
    }
    run->state_dir = xstrdup(o->state);
  } else {
    char tmpl[] = "/tmp/e2b-local.XXXXXX";
    if (!mkdtemp(tmpl)) {
      log_msg("cannot create a temporary state directory: %s", strerror(errno));
      return -1;
    }
    run->state_dir = xstrdup(tmpl);
    run->state_is_temp = 1;
  }
  guard_start(run->state_dir); /* before any sandbox boots: restored ones, template builds */
  runtime_own_ids(run->state_dir, o->uid_base ? (uint32_t)o->uid_base : IDS_DEFAULT_BASE);
  if (!(run->api_key = choose_api_key(o, run->state_is_temp ? NULL : run->state_dir))) return -1;
  g_server.api_key = run->api_key;
  g_server.log_requests = o->log_requests;
  netstats_set_latency(o->latency_ms);
  g_server.self_hosted = api_mode(o);
  if (o->admin_token && *o->admin_token) {
    run->admin_token = xstrdup(o->admin_token);
  } else {
    char hex[41];
    if (e2b_random_hex(hex, 40) != 0) return -1;
    run->admin_token = xstrdup(hex);
  }
  g_server.admin_token = run->admin_token;
  /* before any sandbox boots (restored ones, template builds): they get the CA */
  if (runtime_isolated() && (open_ca(run) != 0 || (egress_set_ca(run->ca, o->egress_ca_file) != 0 && o->egress_ca_file)))
    return -1;
  if (store_init(run->state_dir) != 0 || tplbuild_init(run->state_dir) != 0 ||
      sandbox_registry_init(run->state_dir) != 0) {
    log_msg("cannot initialise the state directory %s", run->state_dir);
    return -1;
  }
  for (int i = 0; i < o->ntemplates; i++) {
    char err[256];
    if (store_register_template(o->templates[i], err, sizeof err) != 0) {
      log_msg("%s", err);
      return -1;
    }
  }
  if (templates_build_all() != 0) return -1;
  run->srv = server_start(o->host, (uint16_t)o->port, NULL);
  if (!run->srv) return -1;
  unsigned port = server_port(run->srv);
  egress_set_control_port((uint16_t)port);
  int tls = !o->no_tls && (o->tls_given || server_tls_supported());
  if (!o->no_tls && !tls) log_msg("this libmicrohttpd has no TLS: serving plain HTTP only");
  if (tls && start_tls(o, run) != 0) return -1;
  publish(o, run, port);
  return 0;
}

static void stop_all(running *run) {
  /* a temporary state dir dies with us; a --state dir keeps its sandboxes (paused) */
  tplbuild_stop(); /* template builds start no more steps */
  sandbox_registry_shutdown(!run->state_is_temp); /* their streams end */
  tplbuild_shutdown(); /* template builds end with their sandboxes */
  h2front_stop(run->front);
  server_stop(run->tls_srv);
  server_stop(run->srv);
  tls_leaf_free(&run->leaf);
  egress_shutdown(); /* every sandbox is gone: no more connections come in */
  tls_ca_close(run->ca); /* after the proxy: it issues from the CA */
  proc_wait_all_readers();
  runtime_shutdown();
  store_shutdown();
  watch_shutdown();
  if (run->state_is_temp && run->state_dir) rm_rf(run->state_dir);
  free(run->state_dir);
  free(run->api_key);
  free(run->admin_token);
  for (int i = 0; i < run->nenv; i++) {
    memset(run->env[i], 0, strlen(run->env[i])); /* the key and token among them */
    free(run->env[i]);
  }
  log_msg("stopped");
}

static int serve(const options *o, const sigset_t *sigs) {
  running run = {0};
  if (start_all(o, &run) != 0) {
    stop_all(&run);
    return 1;
  }
  for (int i = 0; i < run.nenv; i++) printf("%s\n", run.env[i]);
  fflush(stdout);
  int sig = 0;
  while (sig != SIGINT && sig != SIGTERM) sigwait(sigs, &sig);
  log_msg("received %s, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  stop_all(&run);
  return 0;
}

/* Node trusts one extra CA file: when the caller already names one, CMD
 * gets a bundle of theirs and e2b-local's CA, kept beside the CA. */
static void bundle_node_extra_ca(running *run) {
  const char *theirs = getenv("NODE_EXTRA_CA_CERTS");
  if (!https_port(run) || !theirs || !*theirs) return;
  sbuf b = {0};
  char *path = xasprintf("%s/tls/node-extra-ca.pem", run->state_dir);
  int ok = sbuf_append_file(&b, theirs) == 0;
  if (ok) sbuf_append(&b, "\n", 1);
  ok = ok && sbuf_append_file(&b, tls_ca_cert_file(run->ca)) == 0 && write_file_atomic(path, b.data, b.len, 0600) == 0;
  for (int i = 0; ok && i < run->nenv; i++) {
    if (strncmp(run->env[i], "NODE_EXTRA_CA_CERTS=", 20) != 0) continue;
    free(run->env[i]);
    run->env[i] = xasprintf("NODE_EXTRA_CA_CERTS=%s", path);
  }
  if (!ok) log_msg("cannot bundle NODE_EXTRA_CA_CERTS (%s) with e2b-local's CA: CMD gets the CA alone", theirs);
  sbuf_free(&b);
  free(path);
}

static int exec_cmd(const options *o, const sigset_t *sigs) {
  running run = {0};
  if (start_all(o, &run) != 0) {
    stop_all(&run);
    return 1;
  }
  /* stdout belongs to CMD: the variables go only into its environment */
  fflush(stdout);
  bundle_node_extra_ca(&run);
  pid_t child = fork();
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    for (int i = 0; i < run.nenv; i++) putenv(run.env[i]);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
      self[n] = '\0';
      setenv("E2B_LOCAL_BIN", self, 1); /* so CMD can start another of the same build */
    }
    execvp(o->cmd[0], o->cmd);
    fprintf(stderr, "e2b-local exec: cannot run %s: %s\n", o->cmd[0], strerror(errno));
    _exit(127);
  }
  int status = 0, code = 1;
  if (child > 0) {
    for (;;) {
      int sig = 0;
      sigwait(sigs, &sig);
      if (sig == SIGINT || sig == SIGTERM) {
        kill(child, sig); /* the command decides; we follow its exit */
        continue;
      }
      pid_t r = waitpid(child, &status, WNOHANG);
      if (r == child) break;
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    log_msg("cannot fork: %s", strerror(errno));
  }
  stop_all(&run);
  return code;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "agent") == 0) return agent_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "guard") == 0) return guard_main(argc, argv);
  const char *name = strrchr(argv[0], '/');
  if (strcmp(name ? name + 1 : argv[0], "sudo") == 0) return sudo_main(argc, argv); /* in a sandbox */
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    version();
    return 0;
  }
  if (argc < 2 || (strcmp(argv[1], "serve") != 0 && strcmp(argv[1], "exec") != 0)) {
    usage(argc < 2 ? stderr : (strcmp(argv[1], "--help") == 0 ? stdout : stderr));
    return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  int exec_mode = strcmp(argv[1], "exec") == 0;
  options o = {0};
  if (parse_args(argc, argv, exec_mode, &o) != 0) return 2;
  /* Blocked before any thread exists, so only sigwait() sees them. SIGCHLD
   * stays blocked too: sandbox runtimes reap their own children by pid. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();
  return exec_mode ? exec_cmd(&o, &sigs) : serve(&o, &sigs);
}
