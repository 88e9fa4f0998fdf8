// jemalloc instead of glibc's malloc for the whole sightline process.
//
// A simulation runs its event loop and its call lane on two threads that
// take turns on the same devices: memory one thread allocated, the other
// often frees (a call's results, a replaced store, SQLite's pages and
// statements). glibc returns such a chunk to the arena that made it, under
// that arena's lock, so the two threads waited on each other's locks: 9 s of
// blocked time in a 10,000-device run.
// jemalloc puts a freed chunk in the freeing thread's cache and hands chunks
// back in batches.
//
// `thp:always` backs jemalloc's memory with transparent huge pages where the
// kernel gives them only on request (Debian's `madvise` default): a large
// simulation touches gigabytes of small allocations in no order, and 4 KiB
// pages cost it a TLB miss on most of them.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <jemalloc/jemalloc.h>
#include "CAllocator.h"

// jemalloc reads this when it starts, before main; its own definition is weak.
const char *malloc_conf = "thp:always";

/// True when the `malloc` every library of the process calls is jemalloc's:
/// linking jemalloc after the C library would leave glibc's in place.
static int jemalloc_answers(void) {
    Dl_info info;
    void *resolved = dlsym(RTLD_DEFAULT, "malloc");
    if (resolved == NULL || dladdr(resolved, &info) == 0 || info.dli_fname == NULL) return 0;
    return strstr(info.dli_fname, "jemalloc") != NULL;
}

static const char *read_string(const char *name) {
    if (!jemalloc_answers()) return NULL;
    const char *value = NULL;
    size_t length = sizeof(value);
    if (mallctl(name, &value, &length, NULL, 0) != 0) return NULL;
    return value;
}

const char *sightline_allocator_version(void) { return read_string("version"); }

const char *sightline_allocator_huge_pages(void) { return read_string("opt.thp"); }
