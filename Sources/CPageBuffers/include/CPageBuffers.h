// A SQLite VFS whose database files are buffers in this process's memory,
// which the process may read, and attach to other connections, between
// transactions (SQLiteSupport's PageBuffers says why and how).
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

/// A database file's bytes that the process owns and attaches to a
/// connection between transactions (`sightline_page_buffer_attach`).
typedef struct sightline_pages sightline_pages;

/// New, empty pages (no address space reserved yet); NULL without memory.
sightline_pages *sightline_pages_new(void);

/// Frees `pages`, which no connection may have attached.
void sightline_pages_free(sightline_pages *pages);

/// The bytes of `pages`: `*data` (NULL when empty) and `*size`. Valid
/// until they are next written or filled. Returns 1.
int sightline_pages_bytes(const sightline_pages *pages, const unsigned char **data, sqlite3_int64 *size);

/// The schema cookie in the header of `pages`: 1 with `*cookie` set, or
/// 0 for less than a header.
int sightline_pages_cookie(const sightline_pages *pages, unsigned int *cookie);

/// Makes `pages` `size` bytes long and returns where to write them (the
/// previous content is not kept), or NULL past the reservation or without
/// address space. Not while they are attached inside a transaction.
unsigned char *sightline_pages_fill(sightline_pages *pages, sqlite3_int64 size);

/// How many times `pages` were changed (written, truncated or filled):
/// equal counts mean equal bytes.
unsigned long long sightline_pages_writes(const sightline_pages *pages);

/// Makes `pages` (NULL: the file's own, empty) the bytes of
/// `db`'s main database file: 1, or 0 if the file is not a page buffer or
/// SQLite holds a page of it in place (inside a transaction). SQLite's
/// next transaction drops its page cache, unless `pages`
/// are those the connection had before it went back to its own file and
/// no other connection had them since. The caller must keep `pages` alive
/// and attached to no other connection until it attaches others, and
/// change them only through a connection or `sightline_pages_fill`.
int sightline_page_buffer_attach(sqlite3 *db, sightline_pages *pages);

/// The largest file a page buffer holds.
sqlite3_int64 sightline_page_buffer_limit(void);

#endif
