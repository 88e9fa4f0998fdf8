// libxml2 built with ICU declares its converters from ICU's headers, which
// clash with the ICU Foundation carries; nothing here uses them, and the
// parser is only handed pointers, never the structs they change.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <libxml/encoding.h>
#include <libxml/xmlmemory.h>

/// `xmlFree` is a global function pointer, which Swift 6 will not read
/// from concurrent code; this reads it in C.
static inline void sightline_xml_free(void *pointer) {
    xmlFree(pointer);
}
