// The system zlib (Debian's zlib1g-dev), for deflate in sync frames.
#include <zlib.h>
