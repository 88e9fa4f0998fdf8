// What waking a device store costs today against a pooled connection whose
// file is pointed at another store's pages (tools/bench/pooled-wake runs it;
// docs/benchmarks.md, "sightline simulate at scale"). Each of DEVICES stores
// has a device store's schema (read from STORE) at 1 KiB pages and rows of
// its own. A wake then runs ten statements of the kinds a call runs, in one
// transaction:
//
// - today: a new in-memory connection, the image deserialized on a bare
//   connection and copied in with the backup API (as `load(image:)` does),
//   the schema parsed and the statements compiled again;
// - pooled: one connection on the `swap` VFS below, whose file is a buffer
//   the program points at the store's pages between transactions, its page
//   cache dropped (`sqlite3_db_release_memory`). Every store has the same
//   schema and schema cookie, so the connection keeps its parsed schema and
//   its statements compiled once.
//
// It checks that each store reads its own rows after the switch, and counts
// the statements SQLite prepared again (SQLITE_STMTSTATUS_REPREPARE).
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { unsigned char *data; sqlite3_int64 size, cap; } Buffer;
typedef struct { sqlite3_file base; Buffer **slot; } SwapFile;
// The buffer the pooled connection's file is, switched between transactions.
static Buffer *current;

static int xClose(sqlite3_file *f) { return SQLITE_OK; }
static int xRead(sqlite3_file *f, void *out, int n, sqlite3_int64 off) {
  Buffer *b = *((SwapFile *)f)->slot;
  if (off >= b->size) { memset(out, 0, n); return SQLITE_IOERR_SHORT_READ; }
  sqlite3_int64 have = b->size - off;
  if (have < n) { memcpy(out, b->data + off, have); memset((char *)out + have, 0, n - have); return SQLITE_IOERR_SHORT_READ; }
  memcpy(out, b->data + off, n); return SQLITE_OK;
}
static int xWrite(sqlite3_file *f, const void *in, int n, sqlite3_int64 off) {
  Buffer *b = *((SwapFile *)f)->slot;
  if (off + n > b->cap) { sqlite3_int64 c = b->cap ? b->cap : 4096; while (c < off + n) c *= 2; b->data = realloc(b->data, c); b->cap = c; }
  if (off > b->size) memset(b->data + b->size, 0, off - b->size);
  memcpy(b->data + off, in, n); if (off + n > b->size) b->size = off + n; return SQLITE_OK;
}
static int xTruncate(sqlite3_file *f, sqlite3_int64 size) { Buffer *b = *((SwapFile *)f)->slot; if (size < b->size) b->size = size; return SQLITE_OK; }
static int xSync(sqlite3_file *f, int flags) { return SQLITE_OK; }
static int xFileSize(sqlite3_file *f, sqlite3_int64 *size) { *size = (*((SwapFile *)f)->slot)->size; return SQLITE_OK; }
static int xLock(sqlite3_file *f, int l) { return SQLITE_OK; }
static int xUnlock(sqlite3_file *f, int l) { return SQLITE_OK; }
static int xCheckReservedLock(sqlite3_file *f, int *out) { *out = 0; return SQLITE_OK; }
static int xFileControl(sqlite3_file *f, int op, void *arg) { return SQLITE_NOTFOUND; }
static int xSectorSize(sqlite3_file *f) { return 512; }
static int xDeviceCharacteristics(sqlite3_file *f) { return SQLITE_IOCAP_ATOMIC | SQLITE_IOCAP_SAFE_APPEND | SQLITE_IOCAP_SEQUENTIAL | SQLITE_IOCAP_POWERSAFE_OVERWRITE; }
static const sqlite3_io_methods methods = { 1, xClose, xRead, xWrite, xTruncate, xSync, xFileSize, xLock, xUnlock, xCheckReservedLock, xFileControl, xSectorSize, xDeviceCharacteristics };

static int vOpen(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *outFlags) {
  if (!(flags & SQLITE_OPEN_MAIN_DB)) return SQLITE_CANTOPEN;
  ((SwapFile *)f)->slot = &current; f->pMethods = &methods; if (outFlags) *outFlags = flags; return SQLITE_OK;
}
static int vDelete(sqlite3_vfs *v, const char *n, int s) { return SQLITE_OK; }
static int vAccess(sqlite3_vfs *v, const char *n, int flags, int *out) { *out = 0; return SQLITE_OK; }
static int vFull(sqlite3_vfs *v, const char *n, int size, char *out) { sqlite3_snprintf(size, out, "%s", n); return SQLITE_OK; }
static int vRandom(sqlite3_vfs *v, int n, char *out) { return sqlite3_vfs_find(0)->xRandomness(sqlite3_vfs_find(0), n, out); }
static int vSleep(sqlite3_vfs *v, int us) { return 0; }
static int vTime(sqlite3_vfs *v, double *t) { return sqlite3_vfs_find(0)->xCurrentTime(sqlite3_vfs_find(0), t); }
static sqlite3_vfs swapvfs = { 1, sizeof(SwapFile), 512, 0, "swap", 0, vOpen, vDelete, vAccess, vFull, 0, 0, 0, 0, vRandom, vSleep, vTime, 0 };

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void check(int rc, sqlite3 *db, const char *what) { if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) { fprintf(stderr, "%s: %d %s\n", what, rc, sqlite3_errmsg(db)); exit(1); } }

static const char *queries[] = {
  "SELECT value FROM store_meta WHERE key = 'device'",
  "SELECT count(*) FROM items WHERE index_name = ?",
  "SELECT title FROM items WHERE item_id = ? AND index_name = 'notes'",
  "SELECT max(seq) FROM event_journal",
  "INSERT INTO event_journal (epoch, call, kind, time, payload, prev_hash, hash) VALUES (1, ?, 1, 0, x'00', x'00', x'00')",
  "UPDATE engagement SET shown = shown + 1 WHERE ref = ?",
  "SELECT epoch, seq, message FROM outbox WHERE (epoch, seq) > (?, ?) ORDER BY epoch, seq LIMIT 200",
  "SELECT value FROM sync_state WHERE key = ?",
  "INSERT OR REPLACE INTO client_states (index_name, state, changed_seq) VALUES ('notes', x'01', ?)",
  "SELECT hash, live FROM public_activities WHERE activity_key = ?",
};
enum { Q = sizeof queries / sizeof *queries };

static long run(sqlite3 *db, sqlite3_stmt **st, int device) {
  long sum = 0;
  check(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
  for (int q = 0; q < Q; q++) {
    sqlite3_stmt *s = st[q];
    for (int p = 1; p <= sqlite3_bind_parameter_count(s); p++) {
      if (q == 2) { char id[32]; snprintf(id, sizeof id, "n-%d", device); sqlite3_bind_text(s, p, id, -1, SQLITE_TRANSIENT); }
      else if (q == 1 || q == 7 || q == 5) sqlite3_bind_text(s, p, "notes", -1, SQLITE_STATIC);
      else sqlite3_bind_int(s, p, device);
    }
    int rc; while ((rc = sqlite3_step(s)) == SQLITE_ROW) { if (q == 2) sum += sqlite3_column_bytes(s, 0); else sum += sqlite3_column_int(s, 0); }
    check(rc, db, queries[q]); sqlite3_reset(s);
  }
  check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
  return sum;
}

int main(int argc, char **argv) {
  int devices = argc > 2 ? atoi(argv[2]) : 2000, rounds = argc > 3 ? atoi(argv[3]) : 3;
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  sqlite3_vfs_register(&swapvfs, 0);
  if (argc < 2) { fprintf(stderr, "usage: pooled-wake STORE [DEVICES] [ROUNDS]\n"); return 2; }
  // The schema of the device store at STORE, statement by statement.
  static char schema[1 << 17]; size_t used = 0;
  sqlite3 *source; sqlite3_stmt *rows;
  check(sqlite3_open_v2(argv[1], &source, SQLITE_OPEN_READONLY, 0), source, argv[1]);
  check(sqlite3_prepare_v2(source, "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY rowid", -1, &rows, 0), source, "schema");
  while (sqlite3_step(rows) == SQLITE_ROW) used += snprintf(schema + used, sizeof schema - used, "%s;\n", sqlite3_column_text(rows, 0));
  sqlite3_finalize(rows); sqlite3_close(source);
  // Each device: the schema, its own note and rows, at 1 KiB pages, on the swap VFS.
  Buffer *buffers = calloc(devices, sizeof(Buffer));
  sqlite3 *pool; current = &buffers[0];
  check(sqlite3_open_v2("pool", &pool, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "swap"), pool, "open pool");
  check(sqlite3_exec(pool, "PRAGMA journal_mode = MEMORY; PRAGMA temp_store = MEMORY; PRAGMA page_size = 1024", 0, 0, 0), pool, "pragmas");
  check(sqlite3_exec(pool, schema, 0, 0, 0), pool, "schema");
  for (int d = 1; d < devices; d++) { buffers[d].data = malloc(buffers[0].size); memcpy(buffers[d].data, buffers[0].data, buffers[0].size); buffers[d].size = buffers[d].cap = buffers[0].size; }
  for (int d = 0; d < devices; d++) {
    current = &buffers[d]; sqlite3_db_release_memory(pool);
    char sql[2048]; snprintf(sql, sizeof sql, "INSERT INTO store_meta VALUES ('device', %d); INSERT INTO items (item_id, index_name, title, attributes, changed_seq) VALUES ('n-%d', 'notes', 'Note of device %d', x'00', 1);", d, d, d);
    for (int k = 0; k < d % 7; k++) strcat(sql, "INSERT INTO engagement VALUES ('notes', 0, 0) ON CONFLICT DO UPDATE SET engaged = engaged + 1;");
    check(sqlite3_exec(pool, sql, 0, 0, 0), pool, "fill");
  }
  sqlite3_stmt *st[Q];
  for (int q = 0; q < Q; q++) check(sqlite3_prepare_v3(pool, queries[q], -1, SQLITE_PREPARE_PERSISTENT, &st[q], 0), pool, queries[q]);
  // Each store reads its own rows after a switch: with the cache dropped, as a
  // pooled wake would, and with only the file change counter to tell SQLite.
  for (int pass = 0; pass < 2; pass++) for (int d = 0; d < devices; d++) {
    current = &buffers[(d * 7919) % devices]; if (pass == 0) sqlite3_db_release_memory(pool);
    int want = (d * 7919) % devices;
    sqlite3_stmt *s = st[0]; check(sqlite3_step(s), pool, "meta"); int got = sqlite3_column_int(s, 0); sqlite3_reset(s);
    if (got != want) { printf("FAILED: pass %d: store %d read store %d's rows after the switch\n", pass, want, got); return 1; }
  }
  // Images as today: each buffer serialized is the device's image.
  double t0 = now(); long sum = 0;
  for (int r = 0; r < rounds; r++) for (int d = 0; d < devices; d++) {
    sqlite3 *db, *bare; sqlite3_stmt *s2[Q];
    check(sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 0), db, "open");
    check(sqlite3_exec(db, "PRAGMA page_size = 1024", 0, 0, 0), db, "ps");
    check(sqlite3_open_v2(":memory:", &bare, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, 0), bare, "bare");
    unsigned char *copy = sqlite3_malloc64(buffers[d].size); memcpy(copy, buffers[d].data, buffers[d].size);
    check(sqlite3_deserialize(bare, "main", copy, buffers[d].size, buffers[d].size, SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY), bare, "deserialize");
    sqlite3_backup *b = sqlite3_backup_init(db, "main", bare, "main"); sqlite3_backup_step(b, -1); sqlite3_backup_finish(b); sqlite3_close(bare);
    for (int q = 0; q < Q; q++) check(sqlite3_prepare_v3(db, queries[q], -1, SQLITE_PREPARE_PERSISTENT, &s2[q], 0), db, queries[q]);
    sum += run(db, s2, d);
    for (int q = 0; q < Q; q++) sqlite3_finalize(s2[q]);
    sqlite3_close(db);
  }
  double today = (now() - t0) / (rounds * devices);
  t0 = now(); long sum2 = 0;
  for (int r = 0; r < rounds; r++) for (int d = 0; d < devices; d++) {
    current = &buffers[d]; sqlite3_db_release_memory(pool);
    sum2 += run(pool, st, d);
  }
  double pooled = (now() - t0) / (rounds * devices);
  int reprepared = 0; for (int q = 0; q < Q; q++) reprepared += sqlite3_stmt_status(st[q], SQLITE_STMTSTATUS_REPREPARE, 0);
  int cur, hi; sqlite3_db_status(pool, SQLITE_DBSTATUS_SCHEMA_USED, &cur, &hi, 0);
  // The sums differ by the journal rows the pooled wakes kept (today's copies are dropped).
  printf("%d stores of %lld bytes; a wake and %d statements: today %.1f us, pooled %.1f us (%.1fx); "
         "statements prepared again: %d; every store read its own rows\n",
         devices, buffers[0].size, Q, today * 1e6, pooled * 1e6, today / pooled, reprepared);
  (void)sum; (void)sum2;
  return 0;
}
