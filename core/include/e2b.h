/*
 * e2b.h — libe2b, a C client for E2B sandboxes.
 *
 * Shape (after libcurl and hiredis):
 *
 *   e2b_loop     the transport: one libcurl multi handle. Every transfer of
 *                every client attached to it progresses in e2b_loop_step(),
 *                which never blocks inside a transfer; it only waits (on
 *                an epoll set of curl's sockets, costing no CPU) when told
 *                to, and then acts only on the sockets that are ready.
 *   e2b_client   one context per E2B account/endpoint: configuration, auth
 *                headers and the control-plane operations.
 *   e2b_sbx      the envd side of one sandbox: process and filesystem calls.
 *
 * Names: e2b_sandbox_*() are control-plane calls on a client, naming the
 * sandbox by id; e2b_sandbox_info is what they answer (a record, no
 * handle); e2b_sbx is a handle for one sandbox's envd (e2b_proc_*, e2b_fs_*,
 * e2b_file_* take it).
 *   e2b_req      one operation in flight. It is started by an e2b_* call,
 *                progressed by the loop and finishes with a status. An
 *                optional notify callback fires whenever it makes progress
 *                (completed, or new stream data queued), which is how an
 *                event-loop adapter learns whom to wake.
 *
 * A blocking caller starts a request and calls e2b_req_wait(); an async
 * caller (an event loop, a language binding's scheduler) calls
 * e2b_loop_step() itself and reacts to notifications; a host loop that
 * steps with timeout 0 asks e2b_loop_timeout() when the next step is due.
 * Both are faces of the same objects.
 *
 * Errors: every call that can fail fills an e2b_error (one code from the
 * e2b_code enum plus a human message, never containing secrets). Options are
 * validated before any allocation or I/O; a bad one yields
 * E2B_ERR_INVALID_ARGUMENT naming the field.
 *
 * Threads: a loop and everything attached to it belong to one thread at a
 * time; only e2b_loop_wakeup() may be called from another thread.
 *
 * Lifetimes: loops, clients and sandbox handles are reference counted; a
 * request keeps what it needs alive, so they may be released in any order.
 */
#ifndef E2B_H
#define E2B_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this header. CMakeLists.txt reads the three numbers below to
 * set the project (and shared library) version, so they are the one place
 * the version lives. E2B_VERSION_NUM orders versions for #if tests:
 * 0x010203 is 1.2.3. e2b_version() tells which library is actually linked. */
#define E2B_VERSION_MAJOR 0
#define E2B_VERSION_MINOR 1
#define E2B_VERSION_PATCH 0
#define E2B_VERSION_NUM ((E2B_VERSION_MAJOR << 16) | (E2B_VERSION_MINOR << 8) | E2B_VERSION_PATCH)
#define E2B_STRINGIFY_(x) #x
#define E2B_STRINGIFY(x) E2B_STRINGIFY_(x)
#define E2B_VERSION                                                                  \
  E2B_STRINGIFY(E2B_VERSION_MAJOR) "." E2B_STRINGIFY(E2B_VERSION_MINOR) "." E2B_STRINGIFY( \
      E2B_VERSION_PATCH)

/* Marks the public API: the shared library is built with hidden visibility,
 * so only what carries E2B_EXPORT is exported. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define E2B_EXPORT __attribute__((visibility("default")))
#else
#define E2B_EXPORT
#endif

/* The linked library's version, "MAJOR.MINOR.PATCH" (may differ from
 * E2B_VERSION when a program runs against a newer shared libe2b). */
E2B_EXPORT const char *e2b_version(void);
/* The linked library's E2B_VERSION_NUM. */
E2B_EXPORT unsigned e2b_version_num(void);

/* ==== errors ============================================================== */

/* The defaults a zeroed field means, in one place (bindings publish them,
 * and the manual's defaults are checked against them). */
#define E2B_DEFAULT_REQUEST_TIMEOUT_MS 60000L /* e2b_config.request_timeout_ms */
#define E2B_DEFAULT_BUDGET_MS 60000L          /* e2b_config.budget_ms */
#define E2B_DEFAULT_MAX_RETRIES 3             /* e2b_config.max_retries */
#define E2B_DEFAULT_MAX_INFLIGHT 16           /* e2b_config.max_inflight */
#define E2B_DEFAULT_PAGE_SIZE 100             /* e2b_config.page_size */
#define E2B_DEFAULT_TEMPLATE "base"           /* e2b_config.template_id (after E2B_TEMPLATE) */
#define E2B_DEFAULT_DOMAIN "e2b.app"          /* e2b_config.domain (after E2B_DOMAIN) */
#define E2B_DEFAULT_SANDBOX_TIMEOUT_MS 300000L /* a sandbox's lifetime */
#define E2B_DEFAULT_READY_TIMEOUT_MS 0L       /* e2b_provision_opts.ready_timeout_ms: no wait */
#define E2B_DEFAULT_SETUP_TIMEOUT_MS 600000L  /* e2b_provision_opts.setup_timeout_ms */
#define E2B_DEFAULT_IDLE_TIMEOUT_MS 90000L    /* a command's stream silent this long fails */
#define E2B_DEFAULT_SETTLE_MS 2000L           /* e2b_loop_settle: unattended work before a host exits */
#define E2B_DEFAULT_LIST_DEPTH 1               /* e2b_fs_list / e2b_vol_list depth: path's own entries */
#define E2B_DEFAULT_KILL_SETTLE_MS 2000L      /* e2b_proc_kill's settle_ms: how long a killed group may take to go */

/* One code per kind of failure; e2b_code_name gives each a stable short name
 * ("not_found", ...) that bindings can use as an error kind. */
typedef enum e2b_code {
  E2B_OK = 0,
  E2B_ERR_NOT_FOUND,        /* "not_found": the thing is known not to exist (a real 404) */
  E2B_ERR_AUTH,             /* "auth": 401/403, bad or missing credentials; not retryable */
  E2B_ERR_RATE_LIMITED,     /* "rate_limited": 429; see retry_after_ms */
  E2B_ERR_TIMEOUT,          /* "timeout": a deadline passed */
  E2B_ERR_UNAVAILABLE,      /* "unavailable": could not look (5xx, reset, refused); often retryable */
  E2B_ERR_UNSUPPORTED,      /* "unsupported": the backend lacks the feature */
  E2B_ERR_INVALID_ARGUMENT, /* "invalid_argument": bad input; message names the field */
  E2B_ERR_CONFLICT,         /* "conflict": already exists / already in that state */
  E2B_ERR_CANCELED,         /* "canceled": the caller canceled the request */
  E2B_ERR_PROTOCOL,         /* "protocol": the peer broke the wire protocol */
  E2B_ERR_SANDBOX,          /* "sandbox": any other failure reported by E2B or the sandbox */
  E2B_ERR_PERMISSION        /* "permission": the sandbox refused a path to this user (envd 403,
                               permission_denied, read-only file system); never the API key */
} e2b_code;

#define E2B_ERROR_SIZE 512

typedef struct e2b_error {
  e2b_code code;
  int status;            /* HTTP status when one was received, else 0 */
  int retryable;         /* 1 when repeating the same call may succeed */
  long retry_after_ms;   /* from Retry-After, or -1 */
  char op[32];           /* operation name, e.g. "create", "process.start" */
  char message[E2B_ERROR_SIZE];
  char field[64];        /* the option at fault (E2B_ERR_INVALID_ARGUMENT, E2B_ERR_UNSUPPORTED),
                            e.g. "network.deny[2]"; "" when none is named */
} e2b_error;

/* "not_found", "auth", ... ("ok" for E2B_OK). */
E2B_EXPORT const char *e2b_code_name(e2b_code code);
/* Whether an error of this code is retryable unless its maker knows better
 * (unavailable, rate_limited, timeout): what e2b_error.retryable starts as. */
E2B_EXPORT int e2b_code_retryable(e2b_code code);
/* Resets err to E2B_OK with empty message (err may be NULL). */
E2B_EXPORT void e2b_error_clear(e2b_error *err);

/* ==== loop (transport) ===================================================== */

typedef struct e2b_loop e2b_loop;

/* Returns NULL only when libcurl cannot be initialised (err says why). */
E2B_EXPORT e2b_loop *e2b_loop_new(e2b_error *err);
E2B_EXPORT void e2b_loop_release(e2b_loop *loop);

/* Drives every transfer as far as it can without blocking (while one of
 * curl's sockets stays ready it performs again, for at most ~2 ms), then,
 * when timeout_ms > 0 and nothing progressed, waits up to timeout_ms for
 * socket activity (or e2b_loop_wakeup) and drives again. Notifications fire
 * from inside this call. Returns the number of transfers still running. */
E2B_EXPORT int e2b_loop_step(e2b_loop *loop, long timeout_ms);
/* For a host event loop that steps with timeout 0 (like curl_multi_timeout):
 * ms until the loop must be stepped again even if no socket becomes ready;
 * 0 when something is due now, -1 when only socket activity (or a new
 * request) can make progress. It covers curl's own timers, retry backoffs,
 * composites' waits and stream idle budgets. A host that can watch sockets
 * also steps on their activity; one that cannot (nginx from Lua) uses the
 * readiness bridge below, or else must step every few ms while
 * e2b_loop_active() > 0, since data may arrive at any time. Starting a
 * request or feeding an upload changes the answer: ask again after each
 * step and after queuing work. */
E2B_EXPORT long e2b_loop_timeout(e2b_loop *loop);
/* Transfers currently running. */
E2B_EXPORT int e2b_loop_active(const e2b_loop *loop);
/* Requests left to finish unattended (e2b_req_autofree): the kills and
 * cleanups finalizers send. A host about to exit steps the loop until this
 * is 0 (with a bound), or they are never sent. */
E2B_EXPORT size_t e2b_loop_unattended(const e2b_loop *loop);
/* That bounded wait: steps the loop until nothing is left unattended or
 * max_ms passed (0: E2B_DEFAULT_SETTLE_MS); returns what is still left. */
E2B_EXPORT size_t e2b_loop_settle(e2b_loop *loop, long max_ms);
/* Makes a waiting e2b_loop_step return early; callable from any thread. */
E2B_EXPORT void e2b_loop_wakeup(e2b_loop *loop);

/* The readiness bridge, for a host loop that cannot watch curl's sockets
 * but can wait on a socket it connects to itself (nginx from Lua, through
 * a cosocket). Without it such a host must poll while transfers run.
 *
 * e2b_loop_bridge_open() writes into path (path_size >= E2B_BRIDGE_PATH_SIZE)
 * a unix stream socket path in a fresh private (0700) directory, and
 * returns 1 (0 and err on failure; E2B_ERR_UNSUPPORTED off Linux). The host
 * connects to it (from this process: other peers are refused); once
 * connected the path is removed. From then on a watcher thread writes one
 * byte to that connection whenever one of curl's sockets is ready, and then
 * writes nothing more until the loop was stepped: every e2b_loop_step()
 * re-arms it. So the host, between steps, reads from the connection with
 * the timeout e2b_loop_timeout() gives (a wake may be spurious, never
 * missed: a byte may be stale, the step after it is then just cheap). The
 * bytes carry nothing else, and nothing the host writes is read.
 *
 * Opening again (say for each run of the host's pump) keeps the thread and
 * hands it a new path; a new connection replaces the previous one. The
 * thread never calls curl and blocks every signal. A bridge does not cross
 * fork(): a child opens its own (so open it in the process that steps).
 * e2b_loop_bridge_close() stops the thread and removes any path left;
 * e2b_loop_release() does it too. The loop's one-thread rule still holds:
 * open, close and step from the loop's thread. */
#define E2B_BRIDGE_PATH_SIZE 108
E2B_EXPORT int e2b_loop_bridge_open(e2b_loop *loop, char *path, size_t path_size, e2b_error *err);
E2B_EXPORT void e2b_loop_bridge_close(e2b_loop *loop);

/* ==== client (control plane) ================================================ */

typedef struct e2b_client e2b_client;

/* Client configuration. NULL / 0 fields take the documented defaults, with the
 * same environment fallbacks as the official SDKs. */
typedef struct e2b_config {
  const char *api_key;      /* default: env E2B_API_KEY */
  const char *domain;       /* default: env E2B_DOMAIN, else "e2b.app" */
  const char *api_url;      /* default: env E2B_API_URL, else "https://api.<domain>" */
  const char *sandbox_url;  /* default: env E2B_SANDBOX_URL; when set all envd traffic goes
                               there, routed by the E2b-Sandbox-Id header */
  const char *template_id;  /* default: env E2B_TEMPLATE, else "base" */
  long request_timeout_ms;  /* per attempt of a unary request; 0 = default 60000; < 0 invalid */
  long budget_ms;           /* total for one unary request, retries and backoff included:
                               no attempt starts and none runs past it; 0 = default 60000
                               (the official SDKs' request timeout); < 0 invalid */
  const char *user_agent;   /* default "libe2b/<version>" */
  int max_retries;          /* extra attempts after a retryable failure of an idempotent call
                               (or of any call that never reached the server); 0: 3,
                               E2B_NO_RETRY: none */
  int max_inflight;         /* control-plane requests in flight at once, the rest queue
                               (protects an account from 429 storms); 0: 16, E2B_NO_CAP: none */
  const char *owner;        /* owner tag put in created sandboxes; default: env E2B_OWNER,
                               else "<user>@<hostname>" (stable across processes) */
  int page_size;            /* sandboxes per list page when walking every page; 0: 100 */
  const char *ca_file;      /* PEM file of certificate authorities to trust besides the
                               system's certificate directory (e2b-local's CA); default:
                               env E2B_CA_FILE, else the system's trust only */
} e2b_config;

#define E2B_NO_RETRY (-1)
#define E2B_NO_CAP (-1)

/* Attaches a new client to loop. The API key is not required here (a probe
 * reports a missing key as E2B_ERR_AUTH), so a client can be built offline. */
E2B_EXPORT e2b_client *e2b_client_new(e2b_loop *loop, const e2b_config *config, e2b_error *err);
E2B_EXPORT void e2b_client_release(e2b_client *client);

/* The resolved configuration (after defaults and environment). */
E2B_EXPORT const char *e2b_client_api_url(const e2b_client *client);
E2B_EXPORT const char *e2b_client_domain(const e2b_client *client);
E2B_EXPORT const char *e2b_client_sandbox_url(const e2b_client *client); /* NULL when unset */
E2B_EXPORT const char *e2b_client_ca_file(const e2b_client *client);     /* NULL when unset */
E2B_EXPORT const char *e2b_client_template(const e2b_client *client);
E2B_EXPORT const char *e2b_client_owner(const e2b_client *client);
E2B_EXPORT long e2b_client_request_timeout_ms(const e2b_client *client);
E2B_EXPORT long e2b_client_budget_ms(const e2b_client *client);
E2B_EXPORT int e2b_client_has_api_key(const e2b_client *client);

/* A string-to-string pair, for metadata and environment variables. */
typedef struct e2b_kv {
  const char *key;
  const char *value;
} e2b_kv;

/* Owned string map in results. */
typedef struct e2b_map {
  size_t count;
  char **keys;
  char **values;
} e2b_map;

typedef enum e2b_state {
  E2B_STATE_UNKNOWN = 0,
  E2B_STATE_RUNNING,
  E2B_STATE_PAUSED
} e2b_state;

/* A sandbox as the control plane describes it (create, connect, get, list). */
typedef struct e2b_sandbox_info {
  char *sandbox_id;
  char *template_id;
  char *alias;                /* NULL when absent */
  char *client_id;
  char *envd_version;
  char *envd_access_token;    /* NULL unless the sandbox is secure (create/connect/get) */
  char *traffic_access_token; /* NULL unless public traffic is restricted */
  char *domain;               /* NULL: use the client's domain */
  e2b_state state;            /* E2B_STATE_UNKNOWN for create/connect answers */
  int64_t started_at_ms;      /* 0 when not reported */
  int64_t end_at_ms;          /* 0 when not reported */
  int cpu_count, memory_mb, disk_size_mb;
  char *on_timeout;           /* lifecycle: "kill" | "pause" | NULL */
  int auto_resume;            /* lifecycle: -1 unknown, 0, 1 */
  e2b_map metadata;
  /* Network, as GET /sandboxes/{id} reports it (lists answer none of it). */
  int allow_internet_access;  /* -1 not reported, 0, 1 */
  int network;                /* 1: a network object was reported (the fields below) */
  char **allow_out;           /* network.allowOut */
  size_t allow_out_count;
  char **deny_out;            /* network.denyOut */
  size_t deny_out_count;
  int allow_public_traffic;   /* network.allowPublicTraffic: -1 not reported, 0, 1 */
  char *mask_request_host;    /* network.maskRequestHost, or NULL */
  char **rule_domains;        /* network.rules: domain i's headers are rule_headers[i] */
  e2b_map *rule_headers;
  size_t rule_count;
  char *egress_proxy_address;  /* network.egressProxy, or NULL */
  char *egress_proxy_username; /* E2B never returns the password */
  char *mcp_token;             /* e2b_sandbox_provision with create.mcp: the access token the
                                  gateway was started with (a secret); NULL otherwise */
} e2b_sandbox_info;

/* Option structs: every one is meant to start zeroed (`e2b_create_opts o
 * = {0};`, or designated initialisers naming only what differs), and 0 in
 * any field means "the documented default", as a NULL pointer does.
 * Optional booleans whose default E2B decides are tri-states: 0 (the
 * default), E2B_YES or E2B_NO; any other value is E2B_ERR_INVALID_ARGUMENT
 * naming the field. */
#define E2B_DEFAULT 0
#define E2B_YES 1
#define E2B_NO (-1)

/* Headers one destination's requests get (network.rules): the rule of
 * the host's exact name (E2B takes no wildcard key). A rule grants no
 * access: allow_out decides. */
typedef struct e2b_net_rule {
  const char *domain;    /* "api.example.com": an exact DNS name (no "*.", no IP) */
  const e2b_kv *headers; /* set on (or replacing) the request's header of that name */
  size_t header_count;   /* 0-20; names: HTTP tokens of at most 64 bytes; values: at most 2048 */
} e2b_net_rule;

/* A SOCKS5 proxy E2B tunnels the sandbox's outbound TCP through (after the
 * allow/deny filtering). */
typedef struct e2b_egress_proxy {
  const char *address;  /* "host:port", port 1-65535 */
  const char *username; /* NULL: none; at most 255 bytes */
  const char *password; /* only with username; at most 255 bytes; never returned by E2B */
} e2b_egress_proxy;

/* A network policy. libe2b decides what E2B can enforce and translates it
 * into E2B's fields (e2b_sandbox_create, e2b_sandbox_provision,
 * e2b_sandbox_set_network):
 *   open egress (all zero)        -> allow_internet_access true
 *   allow_internet_access E2B_NO  -> no egress (allow_out still allowed)
 *   allow_out given               -> only those: network.allowOut, denyOut ["0.0.0.0/0"]
 *   deny_out given                -> those IPs/CIDRs denied, the rest open
 * deny_out together with allow_out or E2B_NO: E2B_ERR_UNSUPPORTED naming
 * network.deny (E2B's allow rules override its deny rules), except the
 * entry "0.0.0.0/0" itself; a deny entry that is no IP or CIDR:
 * E2B_ERR_INVALID_ARGUMENT naming network.deny[i] (E2B cannot deny by
 * domain). Errors name the field in err->field. */
typedef struct e2b_network {
  int allow_internet_access;      /* 0: E2B_YES; E2B_NO: deny all egress but allow_out */
  const char *const *allow_out;   /* hosts ("*.example.com" too), IPs, CIDRs */
  size_t allow_out_count;
  const char *const *deny_out;    /* IPs, CIDRs */
  size_t deny_out_count;
  const e2b_net_rule *rules;      /* network.rules; at most 10 domains */
  size_t rule_count;
  const e2b_egress_proxy *egress_proxy; /* NULL: traffic goes out directly */
  /* ingress: only at create (an update naming them: E2B_ERR_INVALID_ARGUMENT) */
  int allow_public_traffic;       /* 0: E2B_YES; E2B_NO: the sandbox's port URLs need the
                                     traffic access token (requires a secure sandbox) */
  const char *mask_request_host;  /* Host header the sandbox's servers see; "${PORT}" is
                                     replaced with the port; printable ASCII, host[:port] */
} e2b_network;

/* Judges a network policy as the calls that take one do (update: as
 * e2b_sandbox_set_network, which takes no ingress fields), without any
 * I/O: 0, or -1 with err (err->field names the option). */
E2B_EXPORT int e2b_network_check(const e2b_network *net, int update, const char *op, e2b_error *err);

typedef struct e2b_create_opts {
  const char *template_id;           /* NULL: the client's template */
  long timeout_ms;                   /* sandbox lifetime; 0: 300000; sent as ceil(seconds) */
  int secure;                        /* 0: E2B_YES (envd needs the access token);
                                        E2B_NO: insecure (POST /sandboxes) */
  int allow_internet_access;         /* 0: E2B_YES (E2B's default); E2B_NO: no egress */
  const e2b_kv *metadata;
  size_t metadata_count;
  const e2b_kv *env;
  size_t env_count;
  int auto_pause;                    /* 0: omitted (E2B kills at the deadline); E2B_YES, E2B_NO */
  int auto_pause_memory;             /* 0: omitted; set only with auto_pause = E2B_YES */
  int auto_resume;                   /* 0: omitted; E2B_YES only with auto_pause = E2B_YES */
  const char *const *allow_out;      /* as e2b_network's allow_out (only these) */
  size_t allow_out_count;
  const char *const *deny_out;       /* as e2b_network's deny_out (IPs, CIDRs) */
  size_t deny_out_count;
  int network;                       /* 1: send a network object even when both lists are empty */
  const e2b_network *net;            /* the network policy (see e2b_network); when set, the four
                                        fields above must be left 0 */
  int v1_route;                      /* 1: POST /sandboxes only (see e2b_sandbox_create) */
  const e2b_kv *volume_mounts;       /* key: absolute mount path, value: volume name */
  size_t volume_mount_count;
  const char *mcp;                   /* an MCP gateway's configuration (the SDKs' `mcp`): the
                                        text of a JSON object, sent as the create's `mcp`;
                                        without template_id the template is E2B_MCP_TEMPLATE.
                                        e2b_sandbox_provision then starts the gateway (see
                                        there). NULL: none */
} e2b_create_opts;

/* Judges a lifecycle (auto_pause, auto_pause_memory, auto_resume, each 0,
 * E2B_YES or E2B_NO) as create and provision do, without any I/O: the
 * combinations E2B's SDKs refuse (keep_memory without a pause, auto_resume
 * without a pause or after a filesystem-only one). 0, or -1 with err
 * (err->field names the option, "lifecycle.*"). */
E2B_EXPORT int e2b_lifecycle_check(int auto_pause, int auto_pause_memory, int auto_resume, const char *op,
                                   e2b_error *err);

/* E2B's MCP gateway: the template a create with mcp defaults to, the port
 * its gateway serves (https://<E2B_MCP_PORT>-<id>.<domain>/mcp) and the
 * file it keeps its access token in (readable by root). */
#define E2B_MCP_TEMPLATE "mcp-gateway"
#define E2B_MCP_PORT 50005
#define E2B_MCP_TOKEN_FILE "/etc/mcp-gateway/.token"

/* Filters for one page of GET /v2/sandboxes. */
#define E2B_LIST_RUNNING 1u
#define E2B_LIST_PAUSED 2u
typedef struct e2b_list_opts {
  const e2b_kv *metadata;   /* all pairs must match */
  size_t metadata_count;
  unsigned states;          /* E2B_LIST_* bits; 0 = both */
  int limit;                /* 1..100; 0 = server default */
  const char *next_token;   /* from the previous page, or NULL */
  const char *template_id;  /* only sandboxes of this template id or alias; NULL: any */
  int64_t started_after_ms; /* only sandboxes started at or after (epoch ms); 0: any */
  int order;                /* by start time: 0 = E2B's default (newest first),
                               E2B_ORDER_ASC or E2B_ORDER_DESC */
} e2b_list_opts;
#define E2B_ORDER_ASC 1
#define E2B_ORDER_DESC 2

typedef struct e2b_req e2b_req;

/* Control-plane operations. Each returns a started request, or NULL with err
 * filled (invalid arguments are caught here, before any I/O). A sandbox_id
 * must have a shape E2B takes (lowercase letters and digits, optionally
 * "-<client id>"): anything else is E2B_ERR_INVALID_ARGUMENT, as E2B's 400. */
/* Creates with POST /v2/sandboxes (E2B's live API; always secure) and, when
 * that route answers 404 or 405 (E2B built from e2b-dev/infra has no v2
 * create), with POST /sandboxes; the route that worked is remembered by the
 * client. An insecure create (secure = 0) goes to POST /sandboxes, the only
 * route that carries `secure`. opts may be NULL: all defaults. Never repeated once it may have allocated. */
E2B_EXPORT e2b_req *e2b_sandbox_create(e2b_client *c, const e2b_create_opts *opts, e2b_error *err);
/* Connects to (and resumes, if paused) a sandbox; timeout_ms > 0 is sent as
 * the requested lifetime (E2B only extends a running sandbox's deadline). */
E2B_EXPORT e2b_req *e2b_sandbox_connect(e2b_client *c, const char *sandbox_id, long timeout_ms, e2b_error *err);
E2B_EXPORT e2b_req *e2b_sandbox_get(e2b_client *c, const char *sandbox_id, e2b_error *err);
E2B_EXPORT e2b_req *e2b_sandbox_list(e2b_client *c, const e2b_list_opts *opts, e2b_error *err);
/* Raw DELETE: an absent sandbox is E2B_ERR_NOT_FOUND (see e2b_sandbox_destroy). */
E2B_EXPORT e2b_req *e2b_sandbox_kill(e2b_client *c, const char *sandbox_id, e2b_error *err);
/* Sets the deadline to now + timeout_ms (rounded up to seconds). */
E2B_EXPORT e2b_req *e2b_sandbox_set_timeout(e2b_client *c, const char *sandbox_id, long timeout_ms,
                                 e2b_error *err);
/* memory = 1: processes are frozen and survive; 0: filesystem only. Succeeds
 * only once the sandbox is paused (a sandbox already paused counts); a
 * success answer that did not pause it is an error, never success. */
E2B_EXPORT e2b_req *e2b_sandbox_pause(e2b_client *c, const char *sandbox_id, int memory, e2b_error *err);

/* One sample of a sandbox's resource use (GET /sandboxes/{id}/metrics). */
typedef struct e2b_metric {
  int64_t timestamp_ms;       /* when it was taken (E2B reports whole seconds) */
  int cpu_count;
  double cpu_used_pct;        /* 0-100 per the whole sandbox */
  int64_t mem_used, mem_total; /* bytes */
  int64_t mem_cache;          /* bytes of page cache (0 when not reported) */
  int64_t disk_used, disk_total; /* bytes */
} e2b_metric;

/* The sandbox's samples between start_ms and end_ms (epoch ms; 0: E2B's
 * default, the sandbox's start / now), oldest first; the interval is
 * widened to whole seconds. Negative, or end before start:
 * E2B_ERR_INVALID_ARGUMENT naming start or end. Results:
 * e2b_req_metric_count/_at. */
E2B_EXPORT e2b_req *e2b_sandbox_metrics(e2b_client *c, const char *sandbox_id, int64_t start_ms,
                                        int64_t end_ms, e2b_error *err);
E2B_EXPORT size_t e2b_req_metric_count(const e2b_req *req);
E2B_EXPORT const e2b_metric *e2b_req_metric_at(const e2b_req *req, size_t i);

/* Results. Valid until the request is freed. */
E2B_EXPORT const e2b_sandbox_info *e2b_req_sandbox(const e2b_req *req);           /* create, connect, get */
E2B_EXPORT size_t e2b_req_sandbox_count(const e2b_req *req);                  /* list */
E2B_EXPORT const e2b_sandbox_info *e2b_req_sandbox_at(const e2b_req *req, size_t i);
E2B_EXPORT const char *e2b_req_next_token(const e2b_req *req);                /* list; NULL on the last page */
/* connect: 1 when the sandbox was resumed from pause (HTTP 201). */
E2B_EXPORT int e2b_req_resumed(const e2b_req *req);

/* ==== sandbox handle (envd) ================================================= */

typedef struct e2b_sbx e2b_sbx;

/* A handle on one sandbox's envd. access_token may be NULL (insecure
 * sandbox); domain NULL means the client's. Copies its arguments. */
E2B_EXPORT e2b_sbx *e2b_sbx_new(e2b_client *c, const char *sandbox_id, const char *access_token,
                     const char *domain, e2b_error *err);
E2B_EXPORT void e2b_sbx_release(e2b_sbx *sbx);
E2B_EXPORT const char *e2b_sbx_id(const e2b_sbx *sbx);
/* envd base URL used for RPC and /files. */
E2B_EXPORT const char *e2b_sbx_envd_url(const e2b_sbx *sbx);
/* The envd version the control plane reported for the sandbox (its
 * envdVersion). Calls that need a newer envd are refused with
 * E2B_ERR_UNSUPPORTED before anything is sent; NULL (the default) gates
 * nothing. 0, or -1 out of memory. */
E2B_EXPORT int e2b_sbx_set_envd_version(e2b_sbx *sbx, const char *version);
E2B_EXPORT const char *e2b_sbx_envd_version(const e2b_sbx *sbx);

/* -- processes (process.Process) -- */

typedef struct e2b_proc_opts {
  const char *cmd;                 /* the executable (resolved by PATH in the sandbox); one
                                      that cannot be started fails the start (envd's
                                      E2B_ERR_INVALID_ARGUMENT "failed to start process ...") */
  const char *const *args;         /* argv[1..] */
  const char *shell;               /* instead of cmd and args: a command string, run as
                                      /bin/bash -l -c shell (as E2B's SDKs run one): a missing
                                      program in it is bash's exit 127, not a failed start */
  size_t arg_count;
  const e2b_kv *env;
  size_t env_count;
  const char *cwd;                 /* NULL: the user's home */
  const char *user;                /* NULL: envd's default user */
  const char *tag;                 /* NULL: none */
  int stdin_open;                  /* 1: keep stdin open for e2b_proc_send_input */
  unsigned pty_cols, pty_rows;     /* both > 0: run on a pseudo-terminal */
  long timeout_ms;                 /* > 0: envd kills the process after it (Connect-Timeout-Ms);
                                      0: no limit on the command's runtime */
  long keepalive_s;                /* keepalive ping interval asked of envd; 0: derived from
                                      idle_timeout_ms */
  long idle_timeout_ms;            /* a stream silent this long (not even a keepalive) fails
                                      with E2B_ERR_TIMEOUT; 0: E2B_DEFAULT_IDLE_TIMEOUT_MS */
} e2b_proc_opts;

/* Starts a process; the request is a stream of events until the process ends. */
E2B_EXPORT e2b_req *e2b_proc_start(e2b_sbx *sbx, const e2b_proc_opts *opts, e2b_error *err);
/* Attaches to a running process by pid (tag NULL) or by tag; events from now
 * on. idle_timeout_ms as in e2b_proc_opts. */
E2B_EXPORT e2b_req *e2b_proc_connect(e2b_sbx *sbx, uint32_t pid, const char *tag, long idle_timeout_ms,
                          e2b_error *err);

typedef enum e2b_event_type {
  E2B_EVENT_NONE = 0,
  E2B_EVENT_START,  /* pid */
  E2B_EVENT_STDOUT, /* data, len */
  E2B_EVENT_STDERR, /* data, len */
  E2B_EVENT_PTY,    /* data, len */
  E2B_EVENT_END,    /* exit_code, exited, status, error */
  E2B_EVENT_FS      /* e2b_fs_watch: data, len (the name, relative to the watched
                       directory), status ("create", "write", "remove", "rename", "chmod") */
} e2b_event_type;

typedef struct e2b_proc_event {
  e2b_event_type type;
  uint32_t pid;
  const uint8_t *data; /* exact bytes; valid until the next call on this request */
  size_t len;
  int exit_code;
  int exited;
  const char *status;  /* e.g. "exit status 1", "signal: killed" */
  const char *error;   /* NULL when absent */
} e2b_proc_event;

/* Takes the next queued event of a process stream. Returns 1 with *ev filled,
 * 0 when none is queued yet (wait for a notification), or -1 when the stream
 * is over (then e2b_req_error tells whether it ended cleanly). Taking events
 * frees queue space; a full queue pauses the transfer, so memory stays
 * bounded however fast the process writes. */
E2B_EXPORT int e2b_req_next_event(e2b_req *req, e2b_proc_event *ev);
/* Looks at the next queued event without taking it: same returns as
 * e2b_req_next_event. The event stays valid until it is consumed. */
E2B_EXPORT int e2b_req_peek_event(e2b_req *req, e2b_proc_event *ev);
/* Consumes the first n bytes of the next queued event's data; the event is
 * removed once n covers all of it (an event without data: any n). Lets a
 * reader take at most what it wants and leave the rest queued. */
E2B_EXPORT void e2b_req_consume(e2b_req *req, size_t n);
/* Bytes of event data currently queued. */
E2B_EXPORT size_t e2b_req_queued(const e2b_req *req);

/* These select the process by tag when tag is non-NULL (a tag is unique to
 * one process, so a pid reused after a reboot can never be hit), else by pid. */
E2B_EXPORT e2b_req *e2b_proc_send_input(e2b_sbx *sbx, uint32_t pid, const char *tag, const void *data,
                             size_t len, int pty, e2b_error *err);
E2B_EXPORT e2b_req *e2b_proc_close_stdin(e2b_sbx *sbx, uint32_t pid, const char *tag, e2b_error *err);
/* signo: 9 (KILL) or 15 (TERM), the only signals envd delivers; any other
 * fails with E2B_ERR_INVALID_ARGUMENT before anything is sent. */
E2B_EXPORT e2b_req *e2b_proc_signal(e2b_sbx *sbx, uint32_t pid, const char *tag, int signo, e2b_error *err);
/* The same signal by pid, sent only if envd's process list shows that pid
 * (or, pid 0, a process) with tag: E2B_ERR_NOT_FOUND otherwise, so a pid
 * reused since (after a filesystem-only pause) is never hit, and envd's
 * tag lookup, which can miss, is not used. */
E2B_EXPORT e2b_req *e2b_proc_signal_listed(e2b_sbx *sbx, uint32_t pid, const char *tag, int signo,
                                           e2b_error *err);
/* Ends the process and its process group: envd's process list names it
 * (a tag is matched here, never by envd's tag lookup; a pid listed under
 * another tag than the one given is not ours and counts as gone); a kept
 * command gets SIGTERM, which its wrapper takes as "SIGKILL my command's
 * group" (SIGKILL to the wrapper itself only after settle_ms), any other
 * process SIGKILL; then the list every 50 ms until it is gone: success
 * only then. E2B_ERR_SANDBOX (retryable) when it is still listed after
 * that; the list's own error when envd could not be asked (never reported
 * as gone). settle_ms 0: E2B_DEFAULT_KILL_SETTLE_MS. See kill.c. */
E2B_EXPORT e2b_req *e2b_proc_kill(e2b_sbx *sbx, uint32_t pid, const char *tag, long settle_ms, e2b_error *err);
/* The first step of e2b_proc_kill sent unattended (a dropped handle): SIGTERM
 * to a kept command's wrapper, SIGKILL to any other process, by pid. */
E2B_EXPORT void e2b_proc_stop_async(e2b_sbx *sbx, uint32_t pid, int kept);
/* A dropped kept command's end and cleanup, unattended and in that order:
 * one command in the sandbox (as root) sends its wrapper SIGTERM, waits for
 * it to go (at most 5 s) and removes its kept files. Two requests from here
 * (a signal, then removes) could land the other way round, leaving the
 * exit file the dying wrapper writes last; the client may exit meanwhile. */
E2B_EXPORT void e2b_proc_end_async(e2b_sbx *sbx, uint32_t pid, const char *tag);
/* Writes data to the process's stdin (its pty with pty = 1) in pieces of
 * at most 1 MiB, one request at a time, then closes its stdin; the data is
 * copied. Stops at the first piece that fails; fails only when that was a
 * 429 (E2B_ERR_RATE_LIMITED: the input never reached a process that waits for
 * it), and succeeds otherwise (the process may have exited without reading). */
E2B_EXPORT e2b_req *e2b_proc_feed(e2b_sbx *sbx, uint32_t pid, const char *tag, const void *data, size_t len,
                                  int pty, e2b_error *err);
E2B_EXPORT e2b_req *e2b_proc_resize(e2b_sbx *sbx, uint32_t pid, const char *tag, unsigned cols, unsigned rows,
                         e2b_error *err);
E2B_EXPORT e2b_req *e2b_proc_list(e2b_sbx *sbx, e2b_error *err);

typedef struct e2b_proc_info {
  uint32_t pid;
  char *tag;       /* NULL when none */
  char *cmd;
  char **args;
  size_t arg_count;
  char *cwd;       /* NULL when none */
  int kept;        /* started by e2b_proc_track with its output kept; cmd and
                      args are the command's own, not the wrapper's */
} e2b_proc_info;

E2B_EXPORT size_t e2b_req_proc_count(const e2b_req *req);
E2B_EXPORT const e2b_proc_info *e2b_req_proc_at(const e2b_req *req, size_t i);

/* -- kept output: a process's output saved in the sandbox, read by offset --
 * One name for one concept: "kept" is output saved in the sandbox (the
 * wrapper's files; e2b_req_proc_kept, e2b_proc_info.kept, E2B_TRACK_NO_KEEP
 * turns it off, the Lua option keep_output). e2b_proc_track's stream is a
 * process stream, kept or not. e2b_run_opts.keep (all, tail, none) is
 * something else: what a run collects in memory for its result. */

/* Starts opts wrapped so that its stdout and stderr go to private files
 * (/tmp/.e2b-proc/<hex tag>.out and .err), with the sandbox boot id it
 * started under and then its exit status (.exit) beside them. The request is a
 * stream of events like e2b_proc_start's, read from those files at the
 * offsets already handed out, so a dropped connection, an idle budget or a
 * paused sandbox loses or repeats no byte; one watch per sandbox says when
 * they grew. Every such process gets a
 * tag (opts->tag or a generated one); signals and input go by tag.
 * E2B_TRACK_ENV_REPLACE: names, never values, travel on the command line.
 * PTY processes are never kept (their output is a terminal, not a file). */
#define E2B_TRACK_ENV_REPLACE 1u /* the command sees only opts->env (+ PATH) */
#define E2B_TRACK_NO_KEEP 2u     /* the fast path only: nothing kept, no wrapper processes */
/* The caller wants the output only once the process ended (a single-shot
 * run): nothing is read while its stream holds, so a short command costs
 * its start and at most one read per non-empty stream. */
#define E2B_TRACK_AT_END 4u
/* Parking, for a kept process that runs on: 2 s after its start, once the
 * sandbox's watch is live, its own stream is closed (a connection less on
 * each side for the rest of its life) and its end comes from its exit file
 * through the watch, with the same status an unparked one gets: the
 * wrapper records every end but SIGKILL's, and a parked command SIGKILLed by
 * anyone but its caller (see e2b_req_proc_killed) ends as envd says it,
 * "signal: killed", once a shared process list misses it (up to ~1.5 s
 * later, where an unparked one ends at once). By default (neither flag) the first
 * 256 such commands of a loop keep their streams and later ones park, so
 * thousands of long commands hold a bounded number of streams;
 * E2B_TRACK_PARK parks every one, E2B_TRACK_NO_PARK none. */
#define E2B_TRACK_PARK 8u
#define E2B_TRACK_NO_PARK 16u
E2B_EXPORT e2b_req *e2b_proc_track(e2b_sbx *sbx, const e2b_proc_opts *opts, unsigned flags, e2b_error *err);
/* Reattaches to a process by pid (tag NULL) or tag and continues its output
 * from the given offsets (bytes already consumed). A kept process's
 * output is read from the start, so any client continues exactly where a
 * reader stopped; one not kept can only be followed from now (offsets
 * must then be 0). */
E2B_EXPORT e2b_req *e2b_proc_attach(e2b_sbx *sbx, uint32_t pid, const char *tag, int64_t stdout_offset,
                         int64_t stderr_offset, long idle_timeout_ms, e2b_error *err);
E2B_EXPORT uint32_t e2b_req_proc_pid(const e2b_req *req);
E2B_EXPORT const char *e2b_req_proc_tag(const e2b_req *req);
/* The path prefix of a kept process's files: PREFIX.out, .err and
 * .exit (the sandbox boot id when it started, then the exit status and the
 * boot id). NULL when its output is not kept. */
E2B_EXPORT const char *e2b_req_proc_kept(const e2b_req *req);
/* Deprecated: e2b_req_proc_kept(req) != NULL says the same. */
E2B_EXPORT int e2b_req_proc_tracked(const e2b_req *req);
/* Whether a kept process's own stream is parked (closed while it runs
 * long: its end then comes from its kept files; see track.c). */
E2B_EXPORT int e2b_req_proc_parked(const e2b_req *req);
/* Tells a process stream of e2b_proc_track that its caller killed the process group
 * (e2b_proc_kill succeeded): a parked one then ends at once, as envd reports
 * a SIGKILL ("signal: killed", exit code -1), not when the watch's process
 * list misses it. A status its files already hold still wins. */
E2B_EXPORT void e2b_req_proc_killed(e2b_req *req);
/* An envd call of sbx failed with err. When err may mean that the sandbox
 * is gone or paused (E2B's edge answers 502/503 for both, and for a brief
 * outage; a sandbox killed under a stream cuts it with no answer), returns
 * a request that looks once at the control plane and fails with the error
 * to report: E2B_ERR_NOT_FOUND "sandbox ... ended" when it no longer
 * exists, err with a hint (not retryable) when it is paused, err itself
 * when it runs or could not be looked at. Gone is final: sbx remembers it,
 * and its later envd calls fail with that error without a request. NULL
 * when err needs no look, sbx is already known gone (or no memory: report
 * err as it is). Runs and e2b_proc_track's streams ask it themselves. */
E2B_EXPORT e2b_req *e2b_sbx_explain(e2b_sbx *sbx, const e2b_error *err);
/* Removes a process's kept files (a file already gone is no error): one
 * process start, run as root to its end. */
E2B_EXPORT e2b_req *e2b_proc_forget(e2b_sbx *sbx, const char *tag, e2b_error *err);
/* The same, lazily: a later kept command of user (NULL: "user") or of
 * root in this sandbox removes them in the background once several wait
 * (root's: the next root command), so cleanup after a short command costs
 * no request and mostly no process; output a reader saw reach a MiB is
 * removed at once (one request, unattended). e2b_sbx_flush_forgets removes
 * what is still queued in one request (unattended); call it before
 * releasing the handle. */
E2B_EXPORT void e2b_proc_forget_later(e2b_sbx *sbx, const char *tag, const char *user);
E2B_EXPORT void e2b_sbx_flush_forgets(e2b_sbx *sbx);
/* Drops the queue without sending anything (the sandbox is gone). */
E2B_EXPORT void e2b_sbx_drop_forgets(e2b_sbx *sbx);

/* -- filesystem (filesystem.Filesystem and /files) -- */

typedef struct e2b_entry {
  char *name;
  char *path;
  const char *type;        /* "file" | "dir" | "symlink" | "unknown" */
  int64_t size;
  uint32_t mode;
  char *permissions;
  char *owner;
  char *group;
  int64_t modified_at_ms;  /* 0 when not reported */
  char *symlink_target;    /* NULL when not a symlink */
} e2b_entry;

/* user NULL: envd's default user. */
E2B_EXPORT e2b_req *e2b_fs_stat(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err);
/* depth: levels below path (0: E2B_DEFAULT_LIST_DEPTH; past 2^32 - 1 or negative:
 * E2B_ERR_INVALID_ARGUMENT); the same for e2b_vol_list. */
E2B_EXPORT e2b_req *e2b_fs_list(e2b_sbx *sbx, const char *path, long depth, const char *user,
                     e2b_error *err);
E2B_EXPORT e2b_req *e2b_fs_mkdir(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err);
E2B_EXPORT e2b_req *e2b_fs_move(e2b_sbx *sbx, const char *from, const char *to, const char *user,
                     e2b_error *err);
E2B_EXPORT e2b_req *e2b_fs_remove(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err);

/* Watching a directory (envd's WatchDir, as the SDKs' files.watchDir). */
typedef struct e2b_watch_opts {
  const char *user;       /* NULL: envd's default user */
  int recursive;          /* 1: also the directories below (envd 0.1.4 or later); 0: not */
  long timeout_ms;        /* the watch ends (E2B_ERR_TIMEOUT) after this long; 0: no limit */
  long idle_timeout_ms;   /* a stream silent this long (not even a keepalive) fails with
                             E2B_ERR_TIMEOUT; 0: E2B_DEFAULT_IDLE_TIMEOUT_MS */
} e2b_watch_opts;

/* Starts watching path (a directory) as a stream: E2B_EVENT_START once
 * envd watches, then E2B_EVENT_FS per change (e2b_req_next_event). The
 * queue is bounded: a reader behind pauses the stream (envd then drops
 * what it cannot send). It ends by timeout_ms, by e2b_req_cancel or
 * e2b_req_free, or with the error that cut it (a missing path:
 * E2B_ERR_NOT_FOUND, not a directory: E2B_ERR_INVALID_ARGUMENT). */
E2B_EXPORT e2b_req *e2b_fs_watch(e2b_sbx *sbx, const char *path, const e2b_watch_opts *opts,
                                 e2b_error *err);

E2B_EXPORT const e2b_entry *e2b_req_entry(const e2b_req *req);          /* stat, mkdir, move */
E2B_EXPORT size_t e2b_req_entry_count(const e2b_req *req);              /* list */
E2B_EXPORT const e2b_entry *e2b_req_entry_at(const e2b_req *req, size_t i);

/* GET /files from byte offset (0: whole file). The body streams: take it with
 * e2b_req_next_chunk; the transfer pauses while too much is queued. */
E2B_EXPORT e2b_req *e2b_file_read(e2b_sbx *sbx, const char *path, const char *user, int64_t offset,
                       e2b_error *err);
/* Returns 1 with a chunk (valid until the next call), 0 when nothing is
 * queued yet, -1 at the end of the body (see e2b_req_error). Chunks are also
 * visible to e2b_req_peek_event/e2b_req_consume as E2B_EVENT_STDOUT data. */
E2B_EXPORT int e2b_req_next_chunk(e2b_req *req, const uint8_t **data, size_t *len);

/* POST /files (multipart, one "file" part named by path). Feed the content
 * with e2b_req_send and finish with e2b_req_send_end; the upload streams
 * with bounded memory. Result: e2b_req_written_path. */
E2B_EXPORT e2b_req *e2b_file_write(e2b_sbx *sbx, const char *path, const char *user, e2b_error *err);
/* Queues bytes for an upload. Returns 0, or -1 when the request takes no
 * more input (ended or failed). */
E2B_EXPORT int e2b_req_send(e2b_req *req, const void *data, size_t len);
E2B_EXPORT int e2b_req_send_end(e2b_req *req);
/* The same without a copy: room for up to max bytes of the next piece,
 * which the caller fills (from a file, say) and then queues with
 * e2b_req_send_commit(n), n <= max (0 queues nothing). The room stays
 * valid until that call. NULL when the request takes no more input or
 * memory ran out; commit returns 0, or -1 likewise. */
E2B_EXPORT void *e2b_req_send_room(e2b_req *req, size_t max);
E2B_EXPORT int e2b_req_send_commit(e2b_req *req, size_t n);
/* Bytes queued for sending and not yet taken by the transfer; a producer
 * should wait for a notification while this is large. */
E2B_EXPORT size_t e2b_req_send_pending(const e2b_req *req);
E2B_EXPORT const char *e2b_req_written_path(const e2b_req *req);

/* Signed /files URL for sharing (envd's v1 signature): operation "read" or "write";
 * expires_unix <= 0 for no expiry. Requires a secure sandbox. It names the
 * sandbox's own host (https://49983-<id>.<domain>, or the client's
 * sandbox_url), which E2B's edge routes without any header. The result is
 * malloc'd. */
E2B_EXPORT char *e2b_file_url(e2b_sbx *sbx, const char *path, const char *operation, const char *user,
                   int64_t expires_unix, e2b_error *err);

/* Plain envd GET /health: succeeds on 2xx. */
E2B_EXPORT e2b_req *e2b_envd_health(e2b_sbx *sbx, e2b_error *err);

/* ==== lifecycle: identity, ownership and the rules over the raw calls ====== */

/* Metadata keys libe2b keeps beside the caller's: the logical id (so any
 * host finds the sandbox again) and the owner tag (so orphans can be reaped).
 * The values are a stored format, not names: they live in the metadata of
 * sandboxes already running (and paused for weeks), and every client that
 * looks a sandbox up by logical id must use the same key. Their spelling
 * predates libe2b's split from its Lua binding; renaming them would make
 * existing sandboxes impossible to find, so they stay as they are. */
#define E2B_META_ID "lua_e2b_id"
#define E2B_META_OWNER "lua_e2b_owner"
/* The lifetime asked for at create (ms), so that a resume from any host
 * gives a paused sandbox no less (E2B keeps no such thing). */
#define E2B_META_TIMEOUT "lua_e2b_timeout_ms"
/* Every key starting so is libe2b's: a caller's metadata may not use one. */
#define E2B_META_PREFIX "lua_e2b_"

/* Every page of the list (results: e2b_req_sandbox_count/at). */
E2B_EXPORT e2b_req *e2b_sandbox_find(e2b_client *c, const e2b_list_opts *opts, e2b_error *err);
/* A sandbox by logical id (metadata) or provider id. Only reads, never
 * resumes; E2B_ERR_NOT_FOUND only when it is known not to exist, and
 * E2B_ERR_CONFLICT when two sandboxes carry the logical id. An id no
 * sandbox carries is looked up as a provider id only when it has a sandbox
 * id's shape (otherwise it names nothing): so for describe, resume and
 * destroy alike. */
E2B_EXPORT e2b_req *e2b_sandbox_describe(e2b_client *c, const char *id, e2b_error *err);
/* Connects to a sandbox by provider id, resuming it if paused, and never
 * shortens its deadline: a running sandbox keeps max(its deadline, now +
 * timeout_ms). Result: the connect's answer alone (id, envd version,
 * token, domain; state E2B_STATE_UNKNOWN, no metadata, no deadline) when
 * nothing else is needed, one request: a running sandbox (E2B answers 200)
 * or a resumed one whose created lifetime the caller gave (attach_paused).
 * A sandbox it resumed (201) with no known lifetime is read after (state,
 * deadline, metadata) and given back its created lifetime if that is
 * longer (one /timeout more). Where E2B has
 * no connect route (404: e2b-dev/infra before October 2025) it resumes a
 * paused sandbox with /resume and extends a running one's deadline with
 * /timeout; the client remembers that. */
E2B_EXPORT e2b_req *e2b_sandbox_attach(e2b_client *c, const char *sandbox_id, long timeout_ms,
                            e2b_error *err);
/* attach, for a caller that knows the sandbox paused (it paused it) and
 * created with lifetime_ms (> 0; 0: attach): the connect asks for
 * max(timeout_ms, lifetime_ms) itself, so a resume restores the lifetime
 * with no /timeout after it. Were it running after all, its deadline only
 * grows (E2B's connect never shortens one). */
E2B_EXPORT e2b_req *e2b_sandbox_attach_paused(e2b_client *c, const char *sandbox_id, long timeout_ms,
                                              long lifetime_ms, e2b_error *err);
/* attach by logical id, searching running and paused sandboxes on every
 * page: none -> E2B_ERR_NOT_FOUND (nothing allocated), two -> E2B_ERR_CONFLICT.
 * The search's metadata stands in for a read: the search and the connect,
 * the result running, with that metadata and the deadline asked for. */
E2B_EXPORT e2b_req *e2b_sandbox_resume(e2b_client *c, const char *logical_id, long timeout_ms,
                            e2b_error *err);
/* Forks a running sandbox: snapshots it in place (it goes on; the snapshot,
 * "lua-e2b-fork-<sandbox id>-<ms>", stays while forks may use it) and
 * creates count (1-100) sandboxes from the snapshot, each living timeout_ms
 * (0: E2B_DEFAULT_SANDBOX_TIMEOUT_MS, as the official SDKs default). A fork
 * has the parent's files, memory (on E2B), env vars, network, volume mounts,
 * lifecycle and caller metadata, but an identity of its own: no logical id
 * (its logical id is its sandbox id) and this client's owner, so the
 * parent's logical id still names the parent alone. (E2B's fork route would
 * copy the parent's logical id into every fork: it is not used.) A paused
 * parent: E2B_ERR_CONFLICT; one behind an egress proxy: E2B_ERR_UNSUPPORTED
 * (E2B never gives its password back). All or nothing: when a fork fails to
 * start, the ones that did are killed, the snapshot is deleted and the
 * request fails with that fork's error. */
E2B_EXPORT e2b_req *e2b_sandbox_fork(e2b_client *c, const char *sandbox_id, long timeout_ms, int count,
                          e2b_error *err);
/* Kills by logical or provider id; a sandbox already gone counts as destroyed. */
E2B_EXPORT e2b_req *e2b_sandbox_destroy(e2b_client *c, const char *id, e2b_error *err);
/* Kills by provider id (no lookup: one DELETE); a sandbox already gone
 * counts as killed, as for e2b_sandbox_destroy. */
E2B_EXPORT e2b_req *e2b_sandbox_end(e2b_client *c, const char *sandbox_id, e2b_error *err);
/* Moves the deadline to at least now + ms, never earlier. */
E2B_EXPORT e2b_req *e2b_sandbox_keep_alive(e2b_client *c, const char *sandbox_id, long ms, e2b_error *err);
/* Kills every sandbox of owner (all pages) started more than older_than_ms
 * ago. Result: the killed sandboxes (e2b_req_sandbox_count/at). */
E2B_EXPORT e2b_req *e2b_sandbox_reap(e2b_client *c, const char *owner, long older_than_ms, e2b_error *err);
/* The sandboxes e2b_sandbox_reap would kill, found by the same rule; none
 * is killed (a dry run). */
E2B_EXPORT e2b_req *e2b_sandbox_reap_preview(e2b_client *c, const char *owner, long older_than_ms,
                                             e2b_error *err);

/* Replaces a running sandbox's egress policy, rules and egress proxy (PUT
 * /sandboxes/{id}/network): what net leaves out is cleared. */
E2B_EXPORT e2b_req *e2b_sandbox_set_network(e2b_client *c, const char *sandbox_id, const e2b_network *net,
                                 e2b_error *err);

/* Creation with lua-e2b's rules (docs/manual.md, "Sandboxes"). */
typedef struct e2b_provision_opts {
  e2b_create_opts create;     /* the caller's metadata; logical id and owner are added */
  const char *id;             /* logical id; NULL: a new UUIDv4 */
  long ready_timeout_ms;      /* > 0: wait for envd's /health at most this long; 0 or < 0: do
                               * not (E2B answers a create once envd is up, as the SDKs rely on) */
  const char *setup_script;   /* uploaded, made executable, run with create.env; NULL: none */
  size_t setup_len;
  const char *setup_name;     /* file name under /tmp; NULL: "e2b-setup.sh" */
  long setup_timeout_ms;      /* 0: 600000 */
  const char *user;           /* user for the setup run; NULL: envd's default */
  const e2b_network *network; /* egress applied after setup (setup needs the network to
                                 install things); without setup, and always for the ingress
                                 fields, part of the create call */
} e2b_provision_opts;

/* Creates a sandbox: creates are serialised within one client; an explicit
 * logical id is checked before and after allocation (a duplicate found after
 * deletes only this allocation and fails with E2B_ERR_CONFLICT); then waits
 * until envd answers, starts the MCP gateway (create.mcp: `mcp-gateway
 * --config <the configuration>` as root, the configuration given through
 * the environment so it is on no command line envd reports, with a fresh
 * UUIDv4 access token in GATEWAY_ACCESS_TOKEN, returned as mcp_token),
 * runs the setup script and applies the network policy.
 * Any failure after allocation destroys the allocation before the request
 * completes. Result: the sandbox (e2b_req_sandbox). A setup failure's message
 * ends with the tail of the script's stderr, a gateway's likewise. */
E2B_EXPORT e2b_req *e2b_sandbox_provision(e2b_client *c, const e2b_provision_opts *opts, e2b_error *err);

/* -- snapshots and volumes -- */

typedef struct e2b_snapshot {
  char *snapshot_id; /* usable as template_id */
  char **names;
  size_t name_count;
} e2b_snapshot;

/* Snapshots a sandbox under name (a snapshot of that name gets a new build). */
E2B_EXPORT e2b_req *e2b_snapshot_create(e2b_client *c, const char *sandbox_id, const char *name,
                             e2b_error *err);
/* Every snapshot (name NULL) or those matching name, on every page. */
E2B_EXPORT e2b_req *e2b_snapshot_list(e2b_client *c, const char *name, e2b_error *err);
/* The same, only the snapshots taken of sandbox_id (NULL: of any sandbox). */
E2B_EXPORT e2b_req *e2b_snapshot_list_for(e2b_client *c, const char *name, const char *sandbox_id,
                                          e2b_error *err);
/* Deletes every snapshot matching name (or that id); none left is success. */
E2B_EXPORT e2b_req *e2b_snapshot_delete(e2b_client *c, const char *name, e2b_error *err);
/* -- a sandbox's logs -- */

/* One line of a sandbox's own log, as E2B keeps it (bounded here: at most
 * 4 KiB of message, 32 fields). */
typedef struct e2b_log_entry {
  int64_t timestamp_ms; /* Unix ms */
  char *level;          /* "debug", "info", "warn" or "error" */
  char *message;
  e2b_map fields;       /* E2B's structured fields, as text */
} e2b_log_entry;

#define E2B_LOGS_MAX 1000 /* entries per call, E2B's most (and its default) */
typedef struct e2b_logs_opts {
  int64_t cursor_ms;  /* from this Unix ms on (backward: up to it); 0: from the first (the last) */
  int limit;          /* 1 .. E2B_LOGS_MAX; 0: E2B_LOGS_MAX */
  int backward;       /* newest first */
  const char *level;  /* the least level: "debug", "info", "warn", "error"; NULL: all */
  const char *search; /* only messages holding this (at most 256 bytes); NULL: all */
} e2b_logs_opts;

/* GET /v2/sandboxes/{id}/logs: the sandbox's log lines (oldest first unless
 * backward), a killed sandbox's too while E2B keeps them. Bad options are
 * E2B_ERR_INVALID_ARGUMENT naming the field, before anything is sent. */
E2B_EXPORT e2b_req *e2b_sandbox_logs(e2b_client *c, const char *sandbox_id, const e2b_logs_opts *opts,
                                     e2b_error *err);
E2B_EXPORT size_t e2b_req_log_count(const e2b_req *req);
E2B_EXPORT const e2b_log_entry *e2b_req_log_at(const e2b_req *req, size_t i);

E2B_EXPORT size_t e2b_req_snapshot_count(const e2b_req *req);
E2B_EXPORT const e2b_snapshot *e2b_req_snapshot_at(const e2b_req *req, size_t i);

typedef struct e2b_volume {
  char *volume_id;
  char *name;
  char *token;  /* only from create */
} e2b_volume;

E2B_EXPORT e2b_req *e2b_volume_create(e2b_client *c, const char *name, e2b_error *err);
E2B_EXPORT e2b_req *e2b_volume_list(e2b_client *c, e2b_error *err);
/* Deletes the volume with that name (or id); an absent one is success. */
E2B_EXPORT e2b_req *e2b_volume_delete(e2b_client *c, const char *name, e2b_error *err);
E2B_EXPORT size_t e2b_req_volume_count(const e2b_req *req);
E2B_EXPORT const e2b_volume *e2b_req_volume_at(const e2b_req *req, size_t i);
/* The volume with that name or id, with the token its content API needs
 * (E2B's GET /volumes/{volumeID}, found by name through the list first):
 * one e2b_volume (E2B_RESULT_VOLUMES); E2B_ERR_NOT_FOUND when none. */
E2B_EXPORT e2b_req *e2b_volume_open(e2b_client *c, const char *name_or_id, e2b_error *err);

/* -- a volume's content (E2B's /volumecontent/{volumeID}/path|dir|file on the
 * API host, authorized by the volume's own token, as the SDKs' Volume) --
 * Every call takes the volume's id and token (from e2b_volume_create or
 * e2b_volume_open) and a path inside the volume ("/" its root). The token is
 * a secret: sent as a bearer header only, never in an error. */
typedef struct e2b_vol_entry {
  char *name;
  char *path;              /* from the volume's root, "/a/b" */
  const char *type;        /* "file" | "directory" | "symlink" | "unknown" */
  int64_t size;
  uint32_t mode;           /* permission bits */
  uint32_t uid, gid;
  char *target;            /* a symlink's target, else NULL */
  int64_t atime_ms, mtime_ms, ctime_ms;
} e2b_vol_entry;

/* Owner and mode of what a write or mkdir creates. Zeroed: the server's
 * defaults (its owner and modes), no force. */
#define E2B_VOL_UID 1u
#define E2B_VOL_GID 2u
#define E2B_VOL_MODE 4u
typedef struct e2b_vol_write_opts {
  unsigned given;          /* E2B_VOL_UID | E2B_VOL_GID | E2B_VOL_MODE: the fields set below */
  uint32_t uid, gid;
  uint32_t mode;           /* permission bits, at most 0777 */
  int force;               /* write: replace an existing file; mkdir: make parents, an
                              existing directory is success */
} e2b_vol_write_opts;

/* stat: one entry; list: the entries under path, depth levels deep (as e2b_fs_list's). */
E2B_EXPORT e2b_req *e2b_vol_stat(e2b_client *c, const char *volume_id, const char *token, const char *path,
                                 e2b_error *err);
E2B_EXPORT e2b_req *e2b_vol_list(e2b_client *c, const char *volume_id, const char *token, const char *path,
                                 long depth, e2b_error *err);
E2B_EXPORT e2b_req *e2b_vol_mkdir(e2b_client *c, const char *volume_id, const char *token, const char *path,
                                  const e2b_vol_write_opts *opts, e2b_error *err);
/* Changes the owner and mode of an entry (the SDKs' updateMetadata): the
 * fields opts->given names (force is not read); the entry as it is then. */
E2B_EXPORT e2b_req *e2b_vol_set_metadata(e2b_client *c, const char *volume_id, const char *token,
                                         const char *path, const e2b_vol_write_opts *opts, e2b_error *err);
/* Removes a file, or a directory with everything in it. */
E2B_EXPORT e2b_req *e2b_vol_remove(e2b_client *c, const char *volume_id, const char *token, const char *path,
                                   e2b_error *err);
/* Streams the file's bytes (e2b_req_next_chunk, bounded like e2b_file_read). */
E2B_EXPORT e2b_req *e2b_vol_read(e2b_client *c, const char *volume_id, const char *token, const char *path,
                                 e2b_error *err);
/* Uploads a file: feed it with e2b_req_send and end with e2b_req_send_end
 * (bounded, as e2b_file_write); the result is the written file's entry. An
 * existing file is E2B_ERR_CONFLICT unless opts->force. */
E2B_EXPORT e2b_req *e2b_vol_write(e2b_client *c, const char *volume_id, const char *token, const char *path,
                                  const e2b_vol_write_opts *opts, e2b_error *err);
E2B_EXPORT size_t e2b_req_vol_entry_count(const e2b_req *req);
E2B_EXPORT const e2b_vol_entry *e2b_req_vol_entry_at(const e2b_req *req, size_t i);

/* -- running a command to completion -- */

/* What a run keeps of each stream (per stream, at most max_output bytes). */
#define E2B_DEFAULT_MAX_OUTPUT ((size_t)64 << 20)
typedef enum e2b_keep {
  E2B_KEEP_DEFAULT = 0, /* all, except a stream the caller takes as chunks: that one is the caller's */
  E2B_KEEP_ALL,         /* all; more than max_output fails the run (E2B_ERR_SANDBOX) */
  E2B_KEEP_TAIL,        /* the last max_output bytes; the rest is counted in dropped */
  E2B_KEEP_NONE         /* nothing (chunks still reach the caller) */
} e2b_keep;

/* Streams, as bits: stdout (with a pty's output) and stderr. */
#define E2B_STREAM_STDOUT 1u
#define E2B_STREAM_STDERR 2u

typedef struct e2b_run_result {
  int exit_code;      /* -1 when the process did not end by itself (ended 0) */
  char *status;
  uint8_t *out;       /* stdout, exact bytes (the last max_output when it overflowed) */
  size_t out_len;
  uint8_t *err;
  size_t err_len;
  size_t dropped;     /* bytes dropped from the front (E2B_KEEP_TAIL) */
  /* The fields below came with e2b_run_with. */
  char *error;        /* envd's error of the end event; NULL when none */
  uint8_t *pty;       /* a pty's output; NULL unless the command ran on one */
  size_t pty_len;
  uint32_t pid;       /* 0 when the command never started */
  int ended;          /* the end event came (exit_code and status are the process's) */
  e2b_keep keep;      /* what the output was kept by */
} e2b_run_result;

typedef struct e2b_run_opts {
  const void *stdin_data; /* written when the process's stdin_open is set, then stdin is
                             closed (in pieces of at most 1 MiB) */
  size_t stdin_len;
  size_t max_output;      /* per stream; 0: E2B_DEFAULT_MAX_OUTPUT */
  e2b_keep keep;
  unsigned chunks;        /* E2B_STREAM_* bits: those streams' output is also handed to
                             the caller as it comes, as events of the run request
                             (e2b_req_next_event or peek/consume: E2B_EVENT_STDOUT,
                             E2B_EVENT_STDERR, E2B_EVENT_PTY; a bounded queue: a reader
                             behind pauses the command's stream) */
  int track;              /* 1: started by e2b_proc_track(track_flags), its kept files
                             removed afterwards through the forget queue; 0: e2b_proc_start */
  unsigned track_flags;   /* E2B_TRACK_ENV_REPLACE, E2B_TRACK_NO_KEEP; E2B_TRACK_AT_END is
                             implied when chunks is 0 (nothing is read before the end) */
} e2b_run_opts;

/* Starts opts, feeds its stdin, and collects its output as run_opts keep
 * it. opts->timeout_ms bounds the run: past it (or when envd ended it with
 * a signal within 50 ms of that deadline) the request fails with
 * E2B_ERR_TIMEOUT. On any failure after the start (timeout, max_output,
 * a broken stream) the process group is killed (and looked for until it is
 * gone, for at most 2 s), past the deadline what it wrote up to its end is
 * read (for at most 2 s more), and the result still holds the output and
 * the pid (e2b_req_run_result). The request fails as it is when the
 * command never started (the result's pid is then 0). */
E2B_EXPORT e2b_req *e2b_run_with(e2b_sbx *sbx, const e2b_proc_opts *opts, const e2b_run_opts *run_opts,
                                 e2b_error *err);
/* The same with stdin always opened (stdin_data may be NULL), keeping the
 * tail of max_output bytes of each stream (0: E2B_DEFAULT_MAX_OUTPUT),
 * not started by e2b_proc_track. */
E2B_EXPORT e2b_req *e2b_run(e2b_sbx *sbx, const e2b_proc_opts *opts, const void *stdin_data,
                 size_t stdin_len, size_t max_output, e2b_error *err);
/* The result, once done; also after a failure that kept output (see above). */
E2B_EXPORT const e2b_run_result *e2b_req_run_result(const e2b_req *req);

/* The keeping of e2b_run on its own, for a caller collecting a process
 * stream itself: max_output and chunks (E2B_STREAM_* bits) as in
 * e2b_run_opts. NULL when keep is not an e2b_keep or memory ran out. */
typedef struct e2b_output e2b_output;
E2B_EXPORT e2b_output *e2b_output_new(size_t max_output, e2b_keep keep, unsigned chunks);
/* Keeps a chunk of stream (E2B_EVENT_STDOUT, _STDERR or _PTY; others are
 * ignored). Returns 0, 1 when it would pass max_output under
 * E2B_KEEP_ALL/DEFAULT (nothing kept, err says which stream), -1 when
 * memory ran out (err filled). */
E2B_EXPORT int e2b_output_add(e2b_output *o, e2b_event_type stream, const void *data, size_t len,
                              e2b_error *err);
/* What is kept of stream, as one run of bytes (valid until the next add);
 * NULL only when memory ran out. */
E2B_EXPORT const uint8_t *e2b_output_data(e2b_output *o, e2b_event_type stream, size_t *len);
E2B_EXPORT size_t e2b_output_dropped(const e2b_output *o);
E2B_EXPORT e2b_keep e2b_output_keep(const e2b_output *o);
E2B_EXPORT void e2b_output_free(e2b_output *o);

/* The boot id of the sandbox a kept process (by tag) started under,
 * from its kept files; the wrapper writes it as its first step, so a
 * process just started is waited for (at most 5 s). Result:
 * e2b_req_boot_id. E2B_ERR_NOT_FOUND when it was not recorded. */
E2B_EXPORT e2b_req *e2b_proc_boot_id(e2b_sbx *sbx, const char *tag, e2b_error *err);
E2B_EXPORT const char *e2b_req_boot_id(const e2b_req *req);

/* -- looking at a backend -- */

/* Tri-state answers: 1 supported, 0 not supported, -1 could not tell. */
typedef struct e2b_doctor_report {
  int auth;            /* the API key is accepted */
  char *create_route;  /* "/v2/sandboxes" or "/sandboxes" (what worked), or NULL */
  char *envd_version;
  int envd;            /* envd answered /health on a fresh sandbox */
  int stdin_close;     /* CloseStdin ends a reader's input */
  int group_signals;   /* a signal reaches the whole process group */
  int volumes;
  int snapshots;
  int network_update;
  int pagination;      /* limit honoured and X-Next-Token returned when more exist */
  char *limits;        /* e2b-local: how sandbox limits are enforced ("memory=cgroup-v2
                          pids=cgroup-v2 disk=watched", or cgroup-v1); NULL when not reported (E2B) */
  char notes[512];     /* what went wrong while looking, for humans */
} e2b_doctor_report;

/* Looks: one list, then a throwaway sandbox (killed at the end, lifetime
 * 120 s so a crash cannot leak it for long) to try each feature. */
E2B_EXPORT e2b_req *e2b_doctor(e2b_client *c, e2b_error *err);
E2B_EXPORT const e2b_doctor_report *e2b_req_doctor_report(const e2b_req *req);

typedef struct e2b_egress_opts {
  const char *allow_host;  /* the one host put in the allow-list; default "example.com" */
  const char *allowed_url; /* must answer for the check to mean anything; default https://<allow_host> */
  const char *denied_url;  /* a host not on the list; default "https://example.org" */
  const char *ip_url;      /* a raw IP not on the list; default "http://1.1.1.1" */
  const char *template_id;
  long timeout_ms;         /* per probe; 0: 5000 */
} e2b_egress_opts;

typedef enum e2b_egress_verdict {
  E2B_EGRESS_INCONCLUSIVE = 0,
  E2B_EGRESS_FILTERED,
  E2B_EGRESS_OPEN
} e2b_egress_verdict;

typedef struct e2b_egress_report {
  e2b_egress_verdict verdict;
  int allowed_code, denied_code, ip_code; /* HTTP status seen from inside; 0: no answer */
  char detail[256];
} e2b_egress_report;

/* Creates a throwaway sandbox with an allow-list of one host and observes,
 * from inside, the allowed host, a denied host and a raw IP. The request
 * succeeds whenever it could run the probes; inconclusive whenever it could
 * not observe (the allowed host did not answer, no curl, ...). */
E2B_EXPORT e2b_req *e2b_verify_egress(e2b_client *c, const e2b_egress_opts *opts, e2b_error *err);
E2B_EXPORT const e2b_egress_report *e2b_req_egress_report(const e2b_req *req);

/* ==== requests ================================================================ */

typedef void (*e2b_notify_fn)(e2b_req *req, void *userdata);

/* Called from e2b_loop_step whenever the request completes or queues data
 * (and when upload space frees). Must not free the request. */
E2B_EXPORT void e2b_req_set_notify(e2b_req *req, e2b_notify_fn fn, void *userdata);

E2B_EXPORT int e2b_req_done(const e2b_req *req);
/* NULL while running or after success; the failure otherwise. */
E2B_EXPORT const e2b_error *e2b_req_error(const e2b_req *req);
/* HTTP status of the response (0 before headers arrived). */
E2B_EXPORT int e2b_req_status(const e2b_req *req);

/* What a request's result is, so a caller holding only the request (a
 * binding, a scheduler) knows which accessors apply. Each call that makes a
 * request sets it when it makes the request. */
typedef enum e2b_result_kind {
  E2B_RESULT_NONE,      /* its outcome only (e2b_req_error): kill, signal, remove, ... */
  E2B_RESULT_SANDBOX,   /* e2b_req_sandbox, e2b_req_resumed */
  E2B_RESULT_SANDBOXES, /* e2b_req_sandbox_count/_at, e2b_req_next_token */
  E2B_RESULT_ENTRY,     /* e2b_req_entry: stat, mkdir, move */
  E2B_RESULT_ENTRIES,   /* e2b_req_entry_count/_at: list */
  E2B_RESULT_PROCS,     /* e2b_req_proc_count/_at */
  E2B_RESULT_WRITTEN,   /* e2b_req_written_path */
  E2B_RESULT_STREAM,    /* events or chunks while it runs; the outcome at the end */
  E2B_RESULT_SNAPSHOTS, /* e2b_req_snapshot_count/_at */
  E2B_RESULT_VOLUMES,   /* e2b_req_volume_count/_at */
  E2B_RESULT_RUN,       /* e2b_req_run_result */
  E2B_RESULT_DOCTOR,    /* e2b_req_doctor_report */
  E2B_RESULT_EGRESS,    /* e2b_req_egress_report */
  E2B_RESULT_BOOT_ID,   /* e2b_req_boot_id */
  E2B_RESULT_LOGS,      /* e2b_req_log_count/_at */
  E2B_RESULT_METRICS,   /* e2b_req_metric_count/_at */
  E2B_RESULT_VOL_ENTRIES, /* e2b_req_vol_entry_count/_at: a volume's stat, list, mkdir, write */
  E2B_RESULT_TEMPLATE     /* e2b_req_template_answer */
} e2b_result_kind;
E2B_EXPORT e2b_result_kind e2b_req_result_kind(const e2b_req *req);
/* Stops the transfer; the request completes with E2B_ERR_CANCELED. */
E2B_EXPORT void e2b_req_cancel(e2b_req *req);
/* Cancels if needed and frees. */
E2B_EXPORT void e2b_req_free(e2b_req *req);
/* Lets the request run to completion unattended; the loop frees it then.
 * For fire-and-forget calls (e.g. from a finalizer); req must not be used after. */
E2B_EXPORT void e2b_req_autofree(e2b_req *req);
/* Blocking helper: steps the request's loop until the request is done or
 * timeout_ms passes (< 0: no limit). Returns 1 when done, 0 on timeout. */
E2B_EXPORT int e2b_req_wait(e2b_req *req, long timeout_ms);
/* The request's loop. */
E2B_EXPORT e2b_loop *e2b_req_loop(const e2b_req *req);

/* ---- templates built in code (template.c, template/files.c, template/build.c) ----
 * What the official SDKs' Template builder sends: a base (an image or another
 * template), steps as E2B's template-manager runs them, and a start and ready
 * command. COPY sources are read from a context directory on this machine:
 * hashed as the SDKs hash them (the server's cache key) and uploaded as one
 * gzip tar each, spooled to a temporary file, never held in memory. */
typedef struct e2b_template_step {
  const char *type;        /* "RUN", "COPY", "ENV", "WORKDIR" or "USER" */
  const char *const *args; /* RUN: {command[, user]}; COPY: {src, dest[, user[, mode]]};
                              ENV: {key, value, ...}; WORKDIR: {path}; USER: {name} */
  size_t arg_count;
  int force;               /* run this step whatever the cache holds */
  int force_upload;        /* COPY: upload even when the server has these files */
  int resolve_symlinks;    /* COPY: a link to a file or directory is archived as its target */
} e2b_template_step;

/* Credentials of a private registry from_image is pulled from (the SDKs'
 * fromImage with credentials, fromAWSRegistry, fromGCPRegistry). Secrets:
 * sent in the build's body only, never in an error. */
typedef struct e2b_template_registry {
  const char *type;                  /* "registry", "aws" or "gcp"; NULL: a public image */
  const char *username, *password;   /* "registry" */
  const char *aws_access_key_id, *aws_secret_access_key, *aws_region; /* "aws" */
  const char *gcp_service_account_json; /* "gcp": the service account's JSON text */
} e2b_template_registry;

typedef struct e2b_template {
  const char *from_image;    /* exactly one of from_image and from_template */
  const char *from_template;
  const char *start_cmd;     /* NULL: none; a start command needs a ready command */
  const char *ready_cmd;     /* NULL: none */
  int force;                 /* build every step, whatever the cache holds */
  const e2b_template_step *steps;
  size_t step_count;
  const char *context;       /* the directory COPY sources are relative to; NULL: "." */
  const char *const *ignore; /* patterns of paths (relative to context) left out of COPY */
  size_t ignore_count;
  e2b_template_registry registry; /* with from_image only; zeroed: none */
} e2b_template;

#define E2B_TEMPLATE_FILES_MAX 100000 /* paths one COPY may take */
#define E2B_TEMPLATE_HASH_LEN 64     /* hex digits of a COPY's files hash */

/* 0, or -1 with err E2B_ERR_INVALID_ARGUMENT naming the field: a template
 * name (or an identifier to look up) as E2B takes it: [namespace/]alias[:tag],
 * namespace and alias of letters, digits, '-' and '_' (E2B lowercases them),
 * a tag of those and '.'. */
E2B_EXPORT int e2b_template_name_check(const char *name, const char *field, e2b_error *err);
/* A tag on its own (a build's tags): E2B's tag characters, not a UUID. */
E2B_EXPORT int e2b_template_tag_check(const char *tag, const char *field, e2b_error *err);
/* One step (index counts from 0; the field is "steps[index+1]..."): its type,
 * its argument count, ENV keys, a COPY source relative and inside the context,
 * a COPY mode of four octal digits. Nothing is read from disk. */
E2B_EXPORT int e2b_template_step_check(const e2b_template_step *s, size_t index, e2b_error *err);
/* The whole template: its base, every step, start and ready commands. */
E2B_EXPORT int e2b_template_check(const e2b_template *t, e2b_error *err);
/* The files hash of the COPY at steps[step] (what E2B caches its layer
 * under): sha256 over "COPY src dest" and, per path the source takes in
 * order, the path, its mode and size, a file's bytes or a link's target.
 * out gets 64 hex digits and a NUL. E2B_ERR_NOT_FOUND when the source
 * matches nothing; E2B_ERR_INVALID_ARGUMENT past E2B_TEMPLATE_FILES_MAX. */
E2B_EXPORT int e2b_template_files_hash(const e2b_template *t, size_t step, char out[E2B_TEMPLATE_HASH_LEN + 1],
                                       e2b_error *err);
/* Writes the COPY's files as a gzip tar (ustar, PAX for long names; deflated
 * by zlib at its default level, as the SDKs' tar libraries do) to fd,
 * streaming: memory does not grow with the files. 0, or -1 with err. */
E2B_EXPORT int e2b_template_tar(const e2b_template *t, size_t step, int fd, e2b_error *err);
/* The JSON body of POST /v2/templates/{id}/builds/{build}: hashes[i] is
 * steps[i]'s files hash (NULL for a step that copies nothing); flags:
 * E2B_TEMPLATE_SKIP_CACHE forces the whole build, E2B_TEMPLATE_REDACT writes
 * "***" for the registry's secrets (a body to show, not to send).
 * malloc()ed, or NULL with err. */
#define E2B_TEMPLATE_SKIP_CACHE 1u
#define E2B_TEMPLATE_REDACT 2u
E2B_EXPORT char *e2b_template_json(const e2b_template *t, const char *const *hashes, unsigned flags,
                                   e2b_error *err);


/* A Dockerfile read as the SDKs' Template.fromDockerfile reads it
 * (dockerfile.c): one stage, whose FROM image is the base ("e2bdev/base"
 * when FROM names none); steps USER root and WORKDIR /, then RUN, COPY/ADD
 * (one COPY per source; --chown the user), ENV and ARG (ENV steps; an ARG
 * without a default is ""), WORKDIR, USER in order, then USER user and
 * WORKDIR /home/user unless the file set them; CMD/ENTRYPOINT (the last one,
 * an exec form joined with spaces) the start command. EXPOSE, VOLUME, LABEL,
 * MAINTAINER, HEALTHCHECK and STOPSIGNAL are ignored; a second FROM, COPY
 * --from, heredocs, SHELL, ONBUILD, another escape character, a text over
 * E2B_DOCKERFILE_MAX bytes or with a NUL, or not UTF-8, are refused:
 * E2B_ERR_INVALID_ARGUMENT, field "dockerfile", the message naming the
 * line. Nothing is read from disk: COPY sources are checked when the
 * template is. */
#define E2B_DOCKERFILE_MAX (1 << 20)  /* bytes of a Dockerfile */
#define E2B_DOCKERFILE_STEPS_MAX 10000 /* steps it may give */
typedef struct e2b_dockerfile {
  char *from_image;
  e2b_template_step *steps; /* types "RUN", "COPY", "ENV", "WORKDIR", "USER"; args owned */
  size_t step_count;
  char *start_cmd;          /* NULL: none */
} e2b_dockerfile;
/* 0 with *out filled (free it with e2b_dockerfile_free), or -1 with err and *out empty. */
E2B_EXPORT int e2b_dockerfile_parse(const char *text, size_t len, e2b_dockerfile *out, e2b_error *err);
E2B_EXPORT void e2b_dockerfile_free(e2b_dockerfile *d);

/* s as one word of sh: as it is when every byte is a letter, a digit or one
 * of @%+=:,./_-, else in single quotes (a quote inside as '"'"'), "" as ''.
 * How the builder's helper steps (apt_install, git_clone, ...) and ready
 * commands put a value into a command line. malloc()ed; NULL when s holds a
 * NUL byte (no command line can carry one) or out of memory. */
E2B_EXPORT char *e2b_template_quote(const char *s, size_t len);

typedef struct e2b_template_build_opts {
  const char *name;        /* [namespace/]alias[:tag]: required */
  const char *const *tags; /* further tags of this build */
  size_t tag_count;
  int cpu_count;           /* 0: E2B's default */
  int memory_mb;           /* 0: E2B's default */
  int min_free_disk_mb;    /* -1: E2B's default */
} e2b_template_build_opts;

/* What a template call answered (E2B_RESULT_TEMPLATE); fields a call does
 * not fill are NULL or 0. */
typedef struct e2b_template_answer {
  char *template_id, *build_id; /* request, status */
  char **tags;                  /* request: the build's tags */
  size_t tag_count;
  int present;                  /* file link: the server has these files */
  char *url;                    /* file link: where to PUT them (NULL when present) */
  e2b_map headers;              /* file link: headers the upload must carry */
  char *status;                 /* status: "building", "waiting", "ready" or "error" */
  char *reason;                 /* status: why it failed (NULL: not said) */
  char *reason_step;            /* status: the step that failed ("base", "finalize", a number) */
  e2b_log_entry *logs;          /* status: log entries from the offset asked on */
  size_t log_count;
  int exists;                   /* exists: the name is taken (by anyone: 403 says so too) */
  struct e2b_template_tag {     /* tags: each tag of the template, its build and when */
    char *tag, *build_id;
    int64_t created_ms;
  } *tag_list;
  size_t tag_list_count;
  char *hash;                   /* hash: the COPY's files hash (64 hex digits) */
} e2b_template_answer;

/* POST /v3/templates: a template (new or the name's) and a build of it. */
E2B_EXPORT e2b_req *e2b_template_request(e2b_client *c, const e2b_template_build_opts *o, e2b_error *err);
/* GET /templates/{id}/files/{hash}: whether the server has the files, else where to upload them. */
E2B_EXPORT e2b_req *e2b_template_file_link(e2b_client *c, const char *template_id, const char *hash,
                                           e2b_error *err);
/* e2b_template_files_hash as a request: the files are read a slice (1 MiB)
 * per loop step, so the loop serves everything else meanwhile; the answer's
 * hash. The step is checked and its paths collected before it returns. */
E2B_EXPORT e2b_req *e2b_template_hash(e2b_client *c, const e2b_template *t, size_t step, e2b_error *err);
/* Spools steps[step]'s tar to a temporary file (under $TMPDIR, else /tmp;
 * unlinked at once), a slice (1 MiB of files) per loop step as
 * e2b_template_hash reads them, then PUTs it to url (a link the API handed
 * out: it gets the headers given, never the API key). t is not needed once
 * it returns. */
E2B_EXPORT e2b_req *e2b_template_upload(e2b_client *c, const e2b_template *t, size_t step, const char *url,
                                        const e2b_kv *headers, size_t header_count, e2b_error *err);
/* POST /v2/templates/{id}/builds/{build} with e2b_template_json's body. */
E2B_EXPORT e2b_req *e2b_template_start(e2b_client *c, const char *template_id, const char *build_id,
                                       const e2b_template *t, const char *const *hashes, int skip_cache,
                                       e2b_error *err);
/* GET /templates/{id}/builds/{build}/status?logsOffset=: the status and the
 * log entries from offset on (at most E2B_LOGS_MAX, each bounded as logs are). */
E2B_EXPORT e2b_req *e2b_template_status(e2b_client *c, const char *template_id, const char *build_id,
                                        long offset, e2b_error *err);
/* GET /templates/aliases/{name}: whether the name is taken. */
E2B_EXPORT e2b_req *e2b_template_exists(e2b_client *c, const char *name, e2b_error *err);
/* POST /templates/tags: tags (at least one) put on the build target names
 * ("name:tag"); the answer's build_id and tags. */
E2B_EXPORT e2b_req *e2b_template_assign_tags(e2b_client *c, const char *target, const char *const *tags,
                                             size_t tag_count, e2b_error *err);
/* DELETE /templates/tags: those tags (at least one) taken off the template name. */
E2B_EXPORT e2b_req *e2b_template_remove_tags(e2b_client *c, const char *name, const char *const *tags,
                                             size_t tag_count, e2b_error *err);
/* GET /templates/{id}/tags: the answer's tag_list (at most E2B_LOGS_MAX). */
E2B_EXPORT e2b_req *e2b_template_tags(e2b_client *c, const char *template_id, e2b_error *err);
E2B_EXPORT const e2b_template_answer *e2b_req_template_answer(const e2b_req *req);

/* ---- git in a sandbox: the rules sbx.git applies (git.c) ----
 * Pure functions, no I/O: the Lua module builds git's argv from values these
 * accepted (each value one argv element, never a shell string) and reads
 * `git status --porcelain=v2 --branch -z` with e2b_git_status_parse. */
typedef enum {
  E2B_GIT_REF,  /* a branch or remote name: git's check-ref-format rules, no leading '-' */
  E2B_GIT_URL,  /* a repository URL or path: no leading '-', no control bytes, no
                   password in it (credentials go by username/password/token) */
  E2B_GIT_PATH, /* a path in the sandbox: no NUL, not empty */
  E2B_GIT_LINE, /* one line of text (author name, email, config value): no NUL, CR or LF */
  E2B_GIT_TEXT, /* text (a commit message): no NUL, not empty */
  E2B_GIT_KEY   /* a config key section[.subsection].name: no '=', no control bytes */
} e2b_git_value;
/* NULL when v (len bytes) is acceptable as that kind of value, else why not
 * (a static string, never quoting v: it may be a secret). */
E2B_EXPORT const char *e2b_git_check(e2b_git_value kind, const char *v, size_t len);

/* What `# branch.*` headers said. Strings point into the parsed buffer
 * (not NUL-terminated; NULL when absent). */
typedef struct {
  const char *oid;      /* the commit, or NULL before the first ("(initial)") */
  size_t oid_len;
  const char *branch;   /* NULL when detached */
  size_t branch_len;
  const char *upstream; /* NULL without one */
  size_t upstream_len;
  long ahead, behind;   /* 0 without an upstream */
  int detached;
} e2b_git_head;

/* One changed path. xy[0] is the index's status letter, xy[1] the worktree's
 * ('.' unchanged, '?' untracked, '!' ignored); kind is the record: '1'
 * changed, '2' renamed or copied (orig set), 'u' unmerged, '?' untracked,
 * '!' ignored. */
typedef struct {
  char kind;
  char xy[2];
  const char *path;
  size_t path_len;
  const char *orig;
  size_t orig_len;
} e2b_git_entry;

/* Called per entry; a non-zero return stops the parse, which returns it. */
typedef int (*e2b_git_entry_fn)(void *ud, const e2b_git_entry *entry);
/* Parses the bytes of `git status --porcelain=v2 --branch -z`: fills *head,
 * calls fn per entry in order. 0 on success; -1 on bytes git would not write
 * (*why says what; the sandbox is untrusted, so nothing here aborts or reads
 * past len); fn's value when it stopped the parse. */
E2B_EXPORT int e2b_git_status_parse(const char *buf, size_t len, e2b_git_head *head,
                                    e2b_git_entry_fn fn, void *ud, const char **why);
/* The kind of failure of a git clone, pull or push that exited non-zero,
 * from what it wrote (its stderr and stdout, len bytes, untrusted: read
 * within len only): E2B_ERR_AUTH when the remote wanted credentials it did
 * not get or refused the ones given (a prompt git could not show, a refused
 * login, HTTP 401 or 403, an ssh key turned down), else E2B_ERR_SANDBOX. */
E2B_EXPORT e2b_code e2b_git_failure_code(const char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
