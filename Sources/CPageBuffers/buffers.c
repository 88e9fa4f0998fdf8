// The page-buffer VFS (include/CPageBuffers.h). A main database file's
// bytes are a buffer (`sightline_pages`): the file's own, or one the
// process owns and attaches between transactions. Every other file SQLite
// asks for is refused, except the nameless temporary files it may spill
// sorts and statement journals to, which go to the default VFS. Its connections are meant to keep
// journal_mode = MEMORY and temp_store = MEMORY, so those do not arise.
//
// A buffer is a range of address space reserved once (`reservedBytes`) and
// never moved: SQLite reads pages in place (xFetch, with a nonzero
// mmap_size) instead of copying them into its page cache, which would hold
// every page twice, and a page it holds stays where it is while the file
// grows. The memory is the kernel's to give when first written, and is
// given back when a fill makes the file shorter.
//
// No lock is taken: a buffer is attached to one connection at a time, which
// one thread uses at a time. No journal or WAL exists, so xAccess finds
// none: SQLite never looks for a hot journal on disk under a buffer's name.
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

/// A database file's bytes: a range reserved once and never moved, or
/// nothing before the first write or fill.
struct sightline_pages {
    unsigned char *data;
    sqlite3_int64 size;
    /// The bytes written since the range was reserved or last trimmed:
    /// what may hold memory.
    sqlite3_int64 touched;
    /// The file they were last attached to, or NULL since they were filled.
    const void *lastFile;
    /// How many writes, truncations and fills changed them.
    unsigned long long writes;
};

typedef struct {
    sqlite3_file base;
    /// The pages the file reads and writes now: `own`, or pages the
    /// process attached (`sightline_page_buffer_attach`) and owns.
    sightline_pages *pages;
    sightline_pages own;
    /// The pages attached before the file went back to its own, if a
    /// transaction ran on them: compared (never read) when pages are next
    /// attached.
    const sightline_pages *lastDetached;
    /// The pages SQLite reads in place now (xFetch less xUnfetch).
    int fetched;
    /// Set by an attach until SQLite next checks whether the file changed
    /// (`changeCheck`), with the 16 bytes at offset 24 the file had before.
    int pendingCheck;
    unsigned char before[16];
} PageBuffer;

// Where SQLite's pager looks to tell whether another connection changed the
// file since its last transaction: the change counter, the page count and
// the free list's first trunk page and length. The pager compares them with
// the copy it took when it last read or wrote page 1, and drops its cache
// (and counts a new data_version, by which FTS5 knows to read its index's
// structure again) when they differ.
enum { changeOffset = 24, changeBytes = 16 };

/// After an attach, the pager's copy is the old file's bytes, and the new
/// file may have the same ones (two stores at the same change counter with
/// as many pages): the first check then reads them with one bit changed,
/// so the pager drops every page of the old file. It takes its new copy
/// from page 1 as it reads it again.
static void changeCheck(PageBuffer *buffer, void *out, int count, sqlite3_int64 offset) {
    if (!buffer->pendingCheck || count != changeBytes || offset != changeOffset) return;
    buffer->pendingCheck = 0;
    if (memcmp(out, buffer->before, changeBytes) == 0) ((unsigned char *)out)[0] ^= 0x80;
}

static sqlite3_vfs *fallback;

// Ranges let go of and kept for the next reservation, with the bytes each
// may still hold in memory. A simulation wakes a store as another sleeps,
// thousands of times a second: the woken store takes the range the other
// left, whose memory is mapped already, instead of mapping a new range and
// faulting its pages in, and unmapping the old one (which takes the
// process's memory map lock for writing, and flushes every core's TLB).
enum { mostKept = 64 };
/// The most bytes a kept range holds; the rest goes back to the kernel.
static const sqlite3_int64 keptBytes = (sqlite3_int64)256 << 10;
/// The most memory a fill leaves past the file's end (`sightline_pages_fill`):
/// at most this much more per buffer, for a fill that gives none back.
static const sqlite3_int64 fillSlack = (sqlite3_int64)64 << 10;
static struct { unsigned char *data; sqlite3_int64 touched; } kept[mostKept];
static int keptCount;
static pthread_mutex_t keptLock = PTHREAD_MUTEX_INITIALIZER;

static void release(sightline_pages *pages) {
    if (pages->data) {
        sqlite3_int64 touched = pages->touched;
        if (touched > keptBytes) {
            madvise(pages->data + keptBytes, (size_t)(touched - keptBytes), MADV_DONTNEED);
            touched = keptBytes;
        }
        pthread_mutex_lock(&keptLock);
        if (keptCount < mostKept) {
            kept[keptCount].data = pages->data;
            kept[keptCount].touched = touched;
            keptCount++;
            pages->data = NULL;
        }
        pthread_mutex_unlock(&keptLock);
        if (pages->data) munmap(pages->data, (size_t)reservedBytes);
    }
    pages->data = NULL;
    pages->size = pages->touched = 0;
}

/// Closing the file frees its own pages; attached pages are the process's.
static int bufferClose(sqlite3_file *file) {
    PageBuffer *buffer = (PageBuffer *)file;
    release(&buffer->own);
    buffer->pages = &buffer->own;
    return SQLITE_OK;
}

static int bufferRead(sqlite3_file *file, void *out, int count, sqlite3_int64 offset) {
    PageBuffer *buffer = (PageBuffer *)file;
    sightline_pages *pages = buffer->pages;
    if (count < 0 || offset < 0) return SQLITE_IOERR_READ;
    if (offset >= pages->size) {
        memset(out, 0, (size_t)count);
        return SQLITE_IOERR_SHORT_READ;
    }
    sqlite3_int64 have = pages->size - offset;
    if (have < count) {
        memcpy(out, pages->data + offset, (size_t)have);
        memset((unsigned char *)out + have, 0, (size_t)(count - have));
        return SQLITE_IOERR_SHORT_READ;
    }
    memcpy(out, pages->data + offset, (size_t)count);
    changeCheck(buffer, out, count, offset);
    return SQLITE_OK;
}

/// Room for `size` bytes: SQLITE_OK, SQLITE_FULL past the reservation, or
/// SQLITE_NOMEM when no address space is left.
static int reserve(sightline_pages *pages, sqlite3_int64 size) {
    if (size > reservedBytes) return SQLITE_FULL;
    if (pages->data) return SQLITE_OK;
    pthread_mutex_lock(&keptLock);
    if (keptCount > 0) {
        keptCount--;
        pages->data = kept[keptCount].data;
        pages->touched = kept[keptCount].touched;
    }
    pthread_mutex_unlock(&keptLock);
    // Bytes a kept range holds past the file's end are never read: reads
    // stop at the end, and a write past it zeroes what lies between.
    if (pages->data) return SQLITE_OK;
    void *range = mmap(NULL, (size_t)reservedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) return SQLITE_NOMEM;
    pages->data = range;
    pages->touched = 0;
    return SQLITE_OK;
}

static int bufferWrite(sqlite3_file *file, const void *in, int count, sqlite3_int64 offset) {
    sightline_pages *pages = ((PageBuffer *)file)->pages;
    if (count < 0 || offset < 0 || offset > reservedBytes) return SQLITE_IOERR_WRITE;
    sqlite3_int64 end = offset + count;
    int status = reserve(pages, end);
    if (status == SQLITE_FULL) return SQLITE_FULL;
    if (status != SQLITE_OK) return SQLITE_IOERR_NOMEM;
    // Bytes past the end may be an older, longer file's.
    if (offset > pages->size) memset(pages->data + pages->size, 0, (size_t)(offset - pages->size));
    memcpy(pages->data + offset, in, (size_t)count);
    pages->writes++;
    if (end > pages->size) pages->size = end;
    if (end > pages->touched) pages->touched = end;
    return SQLITE_OK;
}

static int bufferTruncate(sqlite3_file *file, sqlite3_int64 size) {
    sightline_pages *pages = ((PageBuffer *)file)->pages;
    if (size < 0) return SQLITE_IOERR_TRUNCATE;
    if (size < pages->size) {
        pages->size = size;
        pages->writes++;
    }
    return SQLITE_OK;
}

static int bufferSync(sqlite3_file *file, int flags) { return SQLITE_OK; }

static int bufferFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    *size = ((PageBuffer *)file)->pages->size;
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
    sightline_pages *pages = buffer->pages;
    if (!pages->data || offset < 0 || count < 0 || offset + count > pages->size) {
        *out = NULL;
        return SQLITE_OK;
    }
    buffer->fetched++;
    *out = pages->data + offset;
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
        buffer->own.data = NULL;
        buffer->own.size = buffer->own.touched = 0;
        buffer->pages = &buffer->own;
        buffer->lastDetached = NULL;
        buffer->fetched = 0;
        buffer->pendingCheck = 0;
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
    return sightline_pages_bytes(buffer->pages, data, size);
}

/// Notes the 16 bytes SQLite compares before the file's pages change
/// under the connection, unless a change is noted already.
static void noteChange(PageBuffer *buffer) {
    if (buffer->pendingCheck) return;
    memset(buffer->before, 0, changeBytes);
    sightline_pages *pages = buffer->pages;
    if (pages->size >= changeOffset + changeBytes) memcpy(buffer->before, pages->data + changeOffset, changeBytes);
    buffer->pendingCheck = 1;
}

int sightline_page_buffer_attach(sqlite3 *db, sightline_pages *pages) {
    PageBuffer *buffer = mainBuffer(db);
    if (!buffer || buffer->fetched != 0) return 0;
    sightline_pages *next = pages ? pages : &buffer->own;
    if (next == buffer->pages) return 1;
    if (pages && buffer->pages == &buffer->own && buffer->lastDetached == pages && pages->lastFile == buffer) {
        // The pages this connection had last, which no other connection
        // had since and nothing filled: its cache of them still holds.
        buffer->pendingCheck = 0;
        buffer->pages = pages;
        return 1;
    }
    // Going back to its own file, the connection may take these pages
    // back with its cache, if the pager checked them since they came (a
    // transaction ran on them): else it caches another file's pages.
    buffer->lastDetached = !pages && !buffer->pendingCheck ? buffer->pages : NULL;
    noteChange(buffer);
    buffer->pages = next;
    if (pages) pages->lastFile = buffer;
    return 1;
}

sightline_pages *sightline_pages_new(void) { return calloc(1, sizeof(sightline_pages)); }

void sightline_pages_free(sightline_pages *pages) {
    if (!pages) return;
    release(pages);
    free(pages);
}

int sightline_pages_bytes(const sightline_pages *pages, const unsigned char **data, sqlite3_int64 *size) {
    *data = pages->data;
    *size = pages->size;
    return 1;
}

int sightline_pages_cookie(const sightline_pages *pages, unsigned int *cookie) {
    if (pages->size < 100) return 0;
    const unsigned char *at = pages->data + 40;
    *cookie = (unsigned int)at[0] << 24 | (unsigned int)at[1] << 16 | (unsigned int)at[2] << 8 | at[3];
    return 1;
}

unsigned char *sightline_pages_fill(sightline_pages *pages, sqlite3_int64 size) {
    static unsigned char nothing;
    // No connection's cache holds what is written next.
    pages->lastFile = NULL;
    pages->writes++;
    if (size == 0 && !pages->data) return &nothing;
    if (size < 0 || reserve(pages, size) != SQLITE_OK) return NULL;
    // The memory past the new end goes back to the kernel (it reads as
    // zeros when next touched), unless it is less than `fillSlack`: giving
    // memory back makes every core that runs the process drop what it
    // cached of the range's addresses (an interrupt to each), and a store
    // woken into a kept range (`reserve`) usually finds it a few pages
    // longer than its image.
    sqlite3_int64 page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    sqlite3_int64 keep = (size + page - 1) / page * page;
    if (pages->touched > keep + fillSlack) {
        madvise(pages->data + keep, (size_t)(pages->touched - keep), MADV_DONTNEED);
        pages->touched = keep;
    }
    pages->size = size;
    if (size > pages->touched) pages->touched = size;
    return size == 0 ? &nothing : pages->data;
}

unsigned long long sightline_pages_writes(const sightline_pages *pages) { return pages->writes; }

sqlite3_int64 sightline_page_buffer_limit(void) { return reservedBytes; }
