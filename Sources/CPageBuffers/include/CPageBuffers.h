// A SQLite VFS whose database files are buffers in this process's memory,
// which the process may read and refill between transactions
// (SQLiteSupport's PageBuffer says why and how).
#ifndef SIGHTLINE_PAGE_BUFFERS_H
#define SIGHTLINE_PAGE_BUFFERS_H

#include <sqlite3.h>

/// The VFS's name, for a URI's `vfs=` parameter.
extern const char *const sightline_page_buffers_vfs;

/// Registers the VFS once (not as the default); later calls return the
/// first call's result: SQLITE_OK, or SQLite's error.
int sightline_page_buffers_register(void);

/// The bytes of `db`'s main database file, if that file is a page buffer:
/// 1 with `*data` and `*size` set (`*data` may be NULL for an empty file),
/// 0 if the file is not one. Valid until the connection next writes; the
/// caller must hold the connection (no other thread may use it).
int sightline_page_buffer_bytes(sqlite3 *db, const unsigned char **data, sqlite3_int64 *size);

/// The schema cookie in the header of `db`'s main database file, if that
/// file is a page buffer of at least a header's bytes: 1 with `*cookie`
/// set, else 0. It reads the buffer, not the connection: callable on a
/// connection no thread is using, without its mutex.
int sightline_page_buffer_cookie(sqlite3 *db, unsigned int *cookie);

/// Makes `db`'s main database file `size` bytes long and returns where to
/// write them (the previous content is not kept), or NULL if the file is
/// not a page buffer, SQLite holds a page of it in place (inside a
/// transaction), `size` is past the reservation or there is no address
/// space. The memory past the new end goes back to the kernel. The caller
/// must then drop the connection's page cache (`sqlite3_db_release_memory`)
/// before its next statement.
unsigned char *sightline_page_buffer_refill(sqlite3 *db, sqlite3_int64 size);

/// The largest file a page buffer holds.
sqlite3_int64 sightline_page_buffer_limit(void);

#endif
