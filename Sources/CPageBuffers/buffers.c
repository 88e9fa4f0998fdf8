// The page-buffer VFS (include/CPageBuffers.h). A main database file is a
// buffer the file owns; every other file SQLite asks for is refused, except
// the nameless temporary files it may spill sorts and statement journals
// to, which go to the default VFS. Its connections are meant to keep
// journal_mode = MEMORY and temp_store = MEMORY, so those do not arise.
//
// A buffer is a range of address space reserved once (`reservedBytes`) and
// never moved: SQLite reads pages in place (xFetch, with a nonzero
// mmap_size) instead of copying them into its page cache, which would hold
// every page twice, and a page it holds stays where it is while the file
// grows. The memory is the kernel's to give when first written, and is
// given back when a refill makes the file shorter.
//
// No lock is taken: a buffer belongs to one connection, which one thread
// uses at a time. No journal or WAL exists, so xAccess finds none: SQLite
// never looks for a hot journal on disk under a buffer's name.
#include "CPageBuffers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *const sightline_page_buffers_vfs = "sightline-pages";

/// The largest file a buffer holds: address space, not memory. A write
/// past it fails as a full disk would.
static const sqlite3_int64 reservedBytes = (sqlite3_int64)512 << 20;

typedef struct {
    sqlite3_file base;
    /// The reserved range, or NULL before the first write or refill.
    unsigned char *data;
    sqlite3_int64 size;
    /// The bytes written since the range was reserved or last trimmed:
    /// what may hold memory.
    sqlite3_int64 touched;
    /// The pages SQLite reads in place now (xFetch less xUnfetch).
    int fetched;
    /// Set by a refill until SQLite next checks whether the file changed
    /// (`changeCheck`), with the 16 bytes at offset 24 the file had before.
    int refilled;
    unsigned char before[16];
} PageBuffer;

// Where SQLite's pager looks to tell whether another connection changed the
// file since its last transaction: the change counter, the page count and
// the free list's first trunk page and length. The pager compares them with
// the copy it took when it last read or wrote page 1, and drops its cache
// (and counts a new data_version, by which FTS5 knows to read its index's
// structure again) when they differ.
enum { changeOffset = 24, changeBytes = 16 };

/// After a refill, the pager's copy is the old file's bytes, and the new
/// file may have the same ones (two stores at the same change counter with
/// as many pages): the first check then reads them with one bit changed,
/// so the pager drops every page of the old file. It takes its new copy
/// from page 1 as it reads it again.
static void changeCheck(PageBuffer *buffer, void *out, int count, sqlite3_int64 offset) {
    if (!buffer->refilled || count != changeBytes || offset != changeOffset) return;
    buffer->refilled = 0;
    if (memcmp(out, buffer->before, changeBytes) == 0) ((unsigned char *)out)[0] ^= 0x80;
}

static sqlite3_vfs *fallback;

static int bufferClose(sqlite3_file *file) {
    PageBuffer *buffer = (PageBuffer *)file;
    if (buffer->data) munmap(buffer->data, (size_t)reservedBytes);
    buffer->data = NULL;
    buffer->size = buffer->touched = 0;
    return SQLITE_OK;
}

static int bufferRead(sqlite3_file *file, void *out, int count, sqlite3_int64 offset) {
    PageBuffer *buffer = (PageBuffer *)file;
    if (count < 0 || offset < 0) return SQLITE_IOERR_READ;
    if (offset >= buffer->size) {
        memset(out, 0, (size_t)count);
        return SQLITE_IOERR_SHORT_READ;
    }
    sqlite3_int64 have = buffer->size - offset;
    if (have < count) {
        memcpy(out, buffer->data + offset, (size_t)have);
        memset((unsigned char *)out + have, 0, (size_t)(count - have));
        return SQLITE_IOERR_SHORT_READ;
    }
    memcpy(out, buffer->data + offset, (size_t)count);
    changeCheck(buffer, out, count, offset);
    return SQLITE_OK;
}

/// Room for `size` bytes: SQLITE_OK, SQLITE_FULL past the reservation, or
/// SQLITE_NOMEM when no address space is left.
static int reserve(PageBuffer *buffer, sqlite3_int64 size) {
    if (size > reservedBytes) return SQLITE_FULL;
    if (buffer->data) return SQLITE_OK;
    void *range = mmap(NULL, (size_t)reservedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) return SQLITE_NOMEM;
    buffer->data = range;
    buffer->touched = 0;
    return SQLITE_OK;
}

static int bufferWrite(sqlite3_file *file, const void *in, int count, sqlite3_int64 offset) {
    PageBuffer *buffer = (PageBuffer *)file;
    if (count < 0 || offset < 0 || offset > reservedBytes) return SQLITE_IOERR_WRITE;
    sqlite3_int64 end = offset + count;
    int status = reserve(buffer, end);
    if (status == SQLITE_FULL) return SQLITE_FULL;
    if (status != SQLITE_OK) return SQLITE_IOERR_NOMEM;
    // Bytes past the end may be an older, longer file's.
    if (offset > buffer->size) memset(buffer->data + buffer->size, 0, (size_t)(offset - buffer->size));
    memcpy(buffer->data + offset, in, (size_t)count);
    if (end > buffer->size) buffer->size = end;
    if (end > buffer->touched) buffer->touched = end;
    return SQLITE_OK;
}

static int bufferTruncate(sqlite3_file *file, sqlite3_int64 size) {
    PageBuffer *buffer = (PageBuffer *)file;
    if (size < 0) return SQLITE_IOERR_TRUNCATE;
    if (size < buffer->size) buffer->size = size;
    return SQLITE_OK;
}

static int bufferSync(sqlite3_file *file, int flags) { return SQLITE_OK; }

static int bufferFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    *size = ((PageBuffer *)file)->size;
    return SQLITE_OK;
}

static int bufferLock(sqlite3_file *file, int level) { return SQLITE_OK; }
static int bufferUnlock(sqlite3_file *file, int level) { return SQLITE_OK; }
static int bufferCheckReservedLock(sqlite3_file *file, int *out) { *out = 0; return SQLITE_OK; }
static int bufferFileControl(sqlite3_file *file, int op, void *argument) { return SQLITE_NOTFOUND; }
static int bufferSectorSize(sqlite3_file *file) { return 512; }
static int bufferDeviceCharacteristics(sqlite3_file *file) {
    return SQLITE_IOCAP_ATOMIC | SQLITE_IOCAP_SAFE_APPEND | SQLITE_IOCAP_SEQUENTIAL | SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

/// A page read in place: SQLite holds the pointer until xUnfetch, and the
/// range never moves. Past the end of the file, no pointer: SQLite reads
/// the page with xRead instead.
static int bufferFetch(sqlite3_file *file, sqlite3_int64 offset, int count, void **out) {
    PageBuffer *buffer = (PageBuffer *)file;
    if (!buffer->data || offset < 0 || count < 0 || offset + count > buffer->size) {
        *out = NULL;
        return SQLITE_OK;
    }
    buffer->fetched++;
    *out = buffer->data + offset;
    return SQLITE_OK;
}

static int bufferUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    PageBuffer *buffer = (PageBuffer *)file;
    // A NULL page asks to unmap everything: nothing is mapped but the range.
    if (page && buffer->fetched > 0) buffer->fetched--;
    return SQLITE_OK;
}

// Version 3 for xFetch; no shared memory (xShm*), which only WAL asks for.
static const sqlite3_io_methods bufferMethods = {
    3, bufferClose, bufferRead, bufferWrite, bufferTruncate, bufferSync, bufferFileSize, bufferLock, bufferUnlock,
    bufferCheckReservedLock, bufferFileControl, bufferSectorSize, bufferDeviceCharacteristics,
    NULL, NULL, NULL, NULL, bufferFetch, bufferUnfetch,
};

static int vfsOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    if (flags & SQLITE_OPEN_MAIN_DB) {
        PageBuffer *buffer = (PageBuffer *)file;
        buffer->data = NULL;
        buffer->size = buffer->touched = 0;
        buffer->fetched = 0;
        buffer->refilled = 0;
        file->pMethods = &bufferMethods;
        if (outFlags) *outFlags = flags;
        return SQLITE_OK;
    }
    // A nameless temporary file (a sort or a statement journal that spills):
    // the default VFS's, which deletes it on close.
    int temporary = SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_SUBJOURNAL | SQLITE_OPEN_TRANSIENT_DB;
    if (name == NULL && (flags & temporary)) return fallback->xOpen(fallback, name, file, flags, outFlags);
    file->pMethods = NULL;
    return SQLITE_CANTOPEN;
}

static int vfsDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) { return SQLITE_OK; }

static int vfsAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    *out = 0;
    return SQLITE_OK;
}

static int vfsFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    sqlite3_snprintf(size, out, "%s", name);
    return SQLITE_OK;
}

static sqlite3_vfs pageBuffers;
static pthread_once_t registration = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static void registerOnce(void) {
    fallback = sqlite3_vfs_find(NULL);
    if (!fallback) return;
    // The default VFS's randomness, clock, sleep and loader; files are ours.
    pageBuffers = *fallback;
    pageBuffers.iVersion = 2;
    pageBuffers.szOsFile = fallback->szOsFile > (int)sizeof(PageBuffer) ? fallback->szOsFile : (int)sizeof(PageBuffer);
    pageBuffers.pNext = NULL;
    pageBuffers.zName = sightline_page_buffers_vfs;
    pageBuffers.pAppData = NULL;
    pageBuffers.xOpen = vfsOpen;
    pageBuffers.xDelete = vfsDelete;
    pageBuffers.xAccess = vfsAccess;
    pageBuffers.xFullPathname = vfsFullPathname;
    registered = sqlite3_vfs_register(&pageBuffers, 0);
}

int sightline_page_buffers_register(void) {
    pthread_once(&registration, registerOnce);
    return registered;
}

static PageBuffer *mainBuffer(sqlite3 *db) {
    sqlite3_file *file = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file) return NULL;
    return file->pMethods == &bufferMethods ? (PageBuffer *)file : NULL;
}

int sightline_page_buffer_bytes(sqlite3 *db, const unsigned char **data, sqlite3_int64 *size) {
    PageBuffer *buffer = mainBuffer(db);
    if (!buffer) return 0;
    *data = buffer->data;
    *size = buffer->size;
    return 1;
}

int sightline_page_buffer_cookie(sqlite3 *db, unsigned int *cookie) {
    PageBuffer *buffer = mainBuffer(db);
    if (!buffer || buffer->size < 100) return 0;
    const unsigned char *at = buffer->data + 40;
    *cookie = (unsigned int)at[0] << 24 | (unsigned int)at[1] << 16 | (unsigned int)at[2] << 8 | at[3];
    return 1;
}

unsigned char *sightline_page_buffer_refill(sqlite3 *db, sqlite3_int64 size) {
    PageBuffer *buffer = mainBuffer(db);
    // Between transactions SQLite holds no page in place; a refill then
    // would change pages under it.
    if (!buffer || size < 0 || buffer->fetched != 0) return NULL;
    if (!buffer->refilled) {
        memset(buffer->before, 0, changeBytes);
        if (buffer->size >= changeOffset + changeBytes) memcpy(buffer->before, buffer->data + changeOffset, changeBytes);
        buffer->refilled = 1;
    }
    if (reserve(buffer, size) != SQLITE_OK) return NULL;
    // The memory past the new end goes back to the kernel (it reads as
    // zeros when next touched).
    sqlite3_int64 page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    sqlite3_int64 keep = (size + page - 1) / page * page;
    if (buffer->touched > keep) {
        madvise(buffer->data + keep, (size_t)(buffer->touched - keep), MADV_DONTNEED);
        buffer->touched = keep;
    }
    buffer->size = size;
    if (size > buffer->touched) buffer->touched = size;
    static unsigned char nothing;
    return size == 0 ? &nothing : buffer->data;
}

sqlite3_int64 sightline_page_buffer_limit(void) { return reservedBytes; }
