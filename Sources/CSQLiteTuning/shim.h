// Process-wide SQLite settings, which Swift cannot make itself:
// sqlite3_config() is variadic.
#include <sqlite3.h>

/// Turns off SQLite's memory statistics. Debian's SQLite counts every
/// allocation under one process-wide mutex, and it is built without lookaside
/// memory, so every small allocation of every statement takes that mutex: it
/// cost a restore's replay about a third of its time, and more while a second
/// thread used SQLite too. Only works before SQLite is first used: returns
/// SQLITE_OK, or SQLITE_MISUSE when it is too late (nothing changes then).
static inline int sightline_disable_sqlite_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// Connections without a mutex of their own (SQLite's multi-thread mode)
/// unless opened with SQLITE_OPEN_FULLMUTEX. Debian's SQLite is built
/// serialized, so every call into a connection (each bind, step, column read
/// and reset) locks and unlocks the connection's mutex; GRDB already lets
/// only one thread use a connection at a time, which is all multi-thread
/// mode asks. Only works before SQLite is first used, as above.
static inline int sightline_use_sqlite_multithread_mode(void) {
    return sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
}
