/* pb_schema.c — field tables of envd's process and filesystem messages
 * (numbers, lowerCamelCase JSON names and types as in their .proto files). */
#include "pb.h"

#define END {0, NULL, PB_STRING, 0, NULL, NULL}
#define S(n, name) {n, name, PB_STRING, 0, NULL, NULL}
#define U32(n, name) {n, name, PB_UINT32, 0, NULL, NULL}
#define B(n, name) {n, name, PB_BOOL, 0, NULL, NULL}
#define BY(n, name) {n, name, PB_BYTES, 0, NULL, NULL}
#define M(n, name, m) {n, name, PB_MESSAGE, 0, &m, NULL}
#define RM(n, name, m) {n, name, PB_MESSAGE, 1, &m, NULL}
#define EN(n, name, e) {n, name, PB_ENUM, 0, NULL, e}

const pb_msg PB_EMPTY = {"Empty", (const pb_field[]){END}};

/* ---- process ---- */

static const pb_msg PTY_SIZE = {"PTY.Size", (const pb_field[]){U32(1, "cols"), U32(2, "rows"), END}};
static const pb_msg PTY = {"PTY", (const pb_field[]){M(1, "size", PTY_SIZE), END}};
static const pb_msg PROCESS_CONFIG = {"ProcessConfig", (const pb_field[]){S(1, "cmd"), {2, "args", PB_STRING, 1, NULL, NULL},
                                                                        {3, "envs", PB_MAP_SS, 0, NULL, NULL}, S(4, "cwd"), END}};
static const pb_msg PROCESS_SELECTOR = {"ProcessSelector", (const pb_field[]){U32(1, "pid"), S(2, "tag"), END}};
static const pb_msg PROCESS_INFO = {"ProcessInfo", (const pb_field[]){M(1, "config", PROCESS_CONFIG), U32(2, "pid"), S(3, "tag"), END}};
static const pb_msg PROCESS_INPUT = {"ProcessInput", (const pb_field[]){BY(1, "stdin"), BY(2, "pty"), END}};
static const pb_enum_val SIGNALS[] = {{"SIGNAL_UNSPECIFIED", 0}, {"SIGNAL_SIGTERM", 15}, {"SIGNAL_SIGKILL", 9}, {NULL, 0}};

const pb_msg PB_START_REQUEST = {"StartRequest", (const pb_field[]){M(1, "process", PROCESS_CONFIG), M(2, "pty", PTY),
                                                                  S(3, "tag"), B(4, "stdin"), END}};
const pb_msg PB_CONNECT_REQUEST = {"ConnectRequest", (const pb_field[]){M(1, "process", PROCESS_SELECTOR), END}};
const pb_msg PB_LIST_REQUEST = {"ListRequest", (const pb_field[]){END}};
const pb_msg PB_LIST_RESPONSE = {"ListResponse", (const pb_field[]){RM(1, "processes", PROCESS_INFO), END}};
const pb_msg PB_UPDATE_REQUEST = {"UpdateRequest", (const pb_field[]){M(1, "process", PROCESS_SELECTOR), M(2, "pty", PTY), END}};
const pb_msg PB_SEND_INPUT_REQUEST = {"SendInputRequest", (const pb_field[]){M(1, "process", PROCESS_SELECTOR),
                                                                          M(2, "input", PROCESS_INPUT), END}};
const pb_msg PB_SEND_SIGNAL_REQUEST = {"SendSignalRequest", (const pb_field[]){M(1, "process", PROCESS_SELECTOR),
                                                                            EN(2, "signal", SIGNALS), END}};
const pb_msg PB_CLOSE_STDIN_REQUEST = {"CloseStdinRequest", (const pb_field[]){M(1, "process", PROCESS_SELECTOR), END}};

static const pb_msg SI_START = {"StreamInputRequest.StartEvent", (const pb_field[]){M(1, "process", PROCESS_SELECTOR), END}};
static const pb_msg SI_DATA = {"StreamInputRequest.DataEvent", (const pb_field[]){M(2, "input", PROCESS_INPUT), END}};
const pb_msg PB_STREAM_INPUT_REQUEST = {"StreamInputRequest", (const pb_field[]){M(1, "start", SI_START), M(2, "data", SI_DATA),
                                                                              M(3, "keepalive", PB_EMPTY), END}};

static const pb_msg EV_START = {"ProcessEvent.StartEvent", (const pb_field[]){U32(1, "pid"), END}};
static const pb_msg EV_DATA = {"ProcessEvent.DataEvent", (const pb_field[]){BY(1, "stdout"), BY(2, "stderr"), BY(3, "pty"), END}};
static const pb_msg EV_END = {"ProcessEvent.EndEvent", (const pb_field[]){{1, "exitCode", PB_SINT32, 0, NULL, NULL},
                                                                        B(2, "exited"), S(3, "status"), S(4, "error"), END}};
static const pb_msg PROCESS_EVENT = {"ProcessEvent", (const pb_field[]){M(1, "start", EV_START), M(2, "data", EV_DATA),
                                                                      M(3, "end", EV_END), M(4, "keepalive", PB_EMPTY), END}};
/* StartResponse and ConnectResponse have the same shape */
const pb_msg PB_PROCESS_STREAM_RESPONSE = {"StartResponse", (const pb_field[]){M(1, "event", PROCESS_EVENT), END}};

/* ---- filesystem ---- */

static const pb_enum_val FILE_TYPES[] = {{"FILE_TYPE_UNSPECIFIED", 0}, {"FILE_TYPE_FILE", 1}, {"FILE_TYPE_DIRECTORY", 2},
                                         {"FILE_TYPE_SYMLINK", 3}, {NULL, 0}};
static const pb_enum_val EVENT_TYPES[] = {{"EVENT_TYPE_UNSPECIFIED", 0}, {"EVENT_TYPE_CREATE", 1}, {"EVENT_TYPE_WRITE", 2},
                                          {"EVENT_TYPE_REMOVE", 3}, {"EVENT_TYPE_RENAME", 4}, {"EVENT_TYPE_CHMOD", 5},
                                          {NULL, 0}};
static const pb_msg ENTRY_INFO = {"EntryInfo", (const pb_field[]){S(1, "name"), EN(2, "type", FILE_TYPES), S(3, "path"),
                                                                {4, "size", PB_INT64, 0, NULL, NULL}, U32(5, "mode"),
                                                                S(6, "permissions"), S(7, "owner"), S(8, "group"),
                                                                {9, "modifiedTime", PB_TIMESTAMP, 0, NULL, NULL},
                                                                S(10, "symlinkTarget"),
                                                                {11, "metadata", PB_MAP_SS, 0, NULL, NULL}, END}};
const pb_msg PB_STAT_REQUEST = {"StatRequest", (const pb_field[]){S(1, "path"), END}}; /* also MakeDir, Remove */
const pb_msg PB_ENTRY_RESPONSE = {"StatResponse", (const pb_field[]){M(1, "entry", ENTRY_INFO), END}};
const pb_msg PB_MOVE_REQUEST = {"MoveRequest", (const pb_field[]){S(1, "source"), S(2, "destination"), END}};
const pb_msg PB_LISTDIR_REQUEST = {"ListDirRequest", (const pb_field[]){S(1, "path"), U32(2, "depth"), END}};
const pb_msg PB_LISTDIR_RESPONSE = {"ListDirResponse", (const pb_field[]){RM(1, "entries", ENTRY_INFO), END}};
const pb_msg PB_WATCH_REQUEST = {"WatchDirRequest", (const pb_field[]){S(1, "path"), B(2, "recursive"), B(3, "includeEntry"),
                                                                     B(4, "allowNetworkMounts"), END}};
static const pb_msg FS_EVENT = {"FilesystemEvent", (const pb_field[]){S(1, "name"), EN(2, "type", EVENT_TYPES),
                                                                    M(3, "entry", ENTRY_INFO), END}};
const pb_msg PB_WATCH_RESPONSE = {"WatchDirResponse", (const pb_field[]){M(1, "start", PB_EMPTY), M(2, "filesystem", FS_EVENT),
                                                                       M(3, "keepalive", PB_EMPTY), END}};
const pb_msg PB_CREATE_WATCHER_RESPONSE = {"CreateWatcherResponse", (const pb_field[]){S(1, "watcherId"), END}};
const pb_msg PB_WATCHER_ID_REQUEST = {"GetWatcherEventsRequest", (const pb_field[]){S(1, "watcherId"), END}};
const pb_msg PB_WATCHER_EVENTS_RESPONSE = {"GetWatcherEventsResponse", (const pb_field[]){RM(1, "events", FS_EVENT), END}};
