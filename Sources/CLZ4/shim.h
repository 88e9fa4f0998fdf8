// The system LZ4 library (Debian's liblz4-dev), for the images of sleeping
// stores (ByteCoding's LZ4Block).
#include <lz4.h>
