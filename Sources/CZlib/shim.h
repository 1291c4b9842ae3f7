// The system zlib (part of Apple's SDKs and of every Linux distribution), for crc32 only.
#include <zlib.h>
