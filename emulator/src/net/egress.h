/* egress.h — a sandbox's only way out: an HTTP proxy filtered by its network
 * policy.
 *
 * Every isolated sandbox has its own, empty network namespace. Its agent
 * listens on 127.0.0.1:EGRESS_PORT inside and passes each accepted
 * connection up to the server (SCM_RIGHTS); one event-loop thread here reads
 * `CONNECT host:port` or an absolute-form `GET http://host[:port]/path`,
 * decides with the sandbox's current policy (names resolved by a small
 * resolver pool, never on the loop), and relays to the destination. A
 * loopback destination (127.0.0.0/8, ::1, localhost, *.localhost) is first
 * tried on the sandbox's own loopback, which is never egress (and never
 * gets network.rules headers); only when nothing listens there does it go to
 * the host's loopback, which is never the internet: only a policy that names
 * it reaches it (netpolicy.h), or a port the operator marked as a stand-in
 * for the internet (egress_set_standins). A denied
 * destination is dropped like a firewall would: the connection closes with
 * no HTTP answer. e2b-local's own listener is never reachable. One sandbox
 * holds a bounded share of the connections and resolvers, and silent or
 * idle connections time out (emulator/README.md has the numbers). */
#ifndef EMU_EGRESS_H
#define EMU_EGRESS_H

#include <jansson.h>
#include <stdint.h>

#include "sandbox.h"
#include "tls_ca.h"

#define EGRESS_PORT 3128

/* Starts the loop and the resolvers (before any sandbox boots). */
void egress_init(void);
/* What the proxy learns of sandboxes (sandbox_listen it). */
extern const sandbox_listener egress_sandbox_listener;
/* The control-plane listener to refuse (after it is bound). */
void egress_set_control_port(uint16_t port);
/* The HTTPS listener: refused to sandboxes like the plain one. */
void egress_set_tls_port(uint16_t port);
/* Host loopback ports that stand in for the internet (tests' web servers):
 * judged by a sandbox's policy as an internet address would be (allow-all
 * reaches them) instead of as this machine. Replaces the list (at most
 * EGRESS_STANDIN_MAX; n 0: none) and closes the open relays it now denies.
 * e2b-local's own listeners are never reachable, marked or not. */
#define EGRESS_STANDIN_MAX 16
void egress_set_standins(const uint16_t *ports, int n);
/* The marked ports into ports[EGRESS_STANDIN_MAX]; returns how many. */
int egress_standins(uint16_t *ports);
/* TLS interception for hosts with network.rules (egress_tls.h): ca issues
 * what sandboxes see, extra_ca_file (or NULL) is trusted for upstreams
 * beside the system store. Before any sandbox boots; -1 (logged): off,
 * HTTPS tunnels are then relayed untouched. */
int egress_set_ca(tls_ca *ca, const char *extra_ca_file);
/* Where sandboxes find e2b-local's CA: its certificate alone, and the
 * system bundle with it (bound over the sandbox's view of the system's). */
#define EGRESS_SANDBOX_CA "/run/e2b/ca.pem"
#define EGRESS_SANDBOX_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
/* Closes every relay and stops the threads (after every sandbox is gone). */
void egress_shutdown(void);

/* A connection accepted inside sandbox `id`: the proxy owns fd now. */
void egress_accept(const char *id, int fd);
/* The sandbox's policy changed: open relays it now denies are closed. */
void egress_recheck(const char *id);
/* The sandbox's processes are gone: close its relays. */
void egress_close_sandbox(const char *id);

/* The proxy variables every sandbox process gets by default ("K=V" strings,
 * NULL-terminated; empty without isolation, where there is no forwarder),
 * and with interception on, where clients that skip the system store find
 * the CA (Node, Python requests, OpenSSL's SSL_CERT_FILE). */
const char *const *egress_env(void);

#endif
