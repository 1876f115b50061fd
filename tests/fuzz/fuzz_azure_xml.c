/*
 * fuzz_azure_xml.c - the Azure answers the driver parses
 * (storage/azure/xml.c): errors and List Blobs pages. Whoever answers for
 * the endpoint chooses these bytes. The first byte of the input chooses
 * the parser; the rest is the body.
 */
#include "fuzz_common.h"

#include "storage/azure/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pgd_error err = {0};
    azure_xml_fault fault;
    azure_xml_listing l;
    char *text;

    if (size < 1)
        return 0;
    /* a NUL after the body, as curl's buffer has, which the parsers must not need */
    text = fuzz_text(data + 1, size - 1);
    memset(&fault, 0, sizeof(fault));
    if (data[0] % 2 == 0) {
        if (azure_xml_error(text, size - 1, &fault)) {
            /* the message goes into one log line: no control characters, terminated */
            fuzz_assert(memchr(fault.code, '\0', sizeof(fault.code)) != NULL);
            fuzz_assert(memchr(fault.message, '\0', sizeof(fault.message)) != NULL);
            for (const char *p = fault.message; *p != '\0'; p++)
                fuzz_assert((unsigned char)*p >= 0x20 && *p != 0x7f);
        }
    } else if (azure_xml_listing_parse(text, size - 1, &l, &err)) {
        for (size_t i = 0; i < l.n; i++)
            fuzz_assert(l.entries[i].name != NULL && l.entries[i].name[0] != '\0');
        fuzz_assert(l.next_marker == NULL || l.next_marker[0] != '\0');
        azure_xml_listing_free(&l);
    } else {
        fuzz_assert(err.set && l.n == 0 && l.entries == NULL);
    }
    free(text);
    return 0;
}
