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
