// The process's allocator: jemalloc, linked into the sightline binary
// (tools/install-deps installs libjemalloc-dev). See allocator.c for why.
#ifndef SIGHTLINE_ALLOCATOR_H
#define SIGHTLINE_ALLOCATOR_H

/// jemalloc's version, or NULL when jemalloc is not the allocator that
/// answers (it always is in a sightline binary; the tests check it).
const char *sightline_allocator_version(void);

/// jemalloc's transparent huge page setting ("always", "never" or
/// "default"), or NULL as above.
const char *sightline_allocator_huge_pages(void);

#endif
