/*
 * vemit_check: pylogsink_vemit's formatting alone, built with the
 * sanitizers (tests/test_c_abi.py): the two functions it calls are
 * stand-ins here that check and record what they are given.
 */
#include "pylogsink_emit.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static char last[PYLOGSINK_FORMAT_MAX + 256];
static size_t last_len;
static int emitted;
static int allow = 1;

int pylogsink_enabled(int level, const char *target) {
    (void)level;
    (void)target;
    return allow;
}

void pylogsink_emit(int level, const char *target, const char *file, unsigned line,
                    const char *message, size_t len) {
    (void)level;
    (void)target;
    (void)file;
    (void)line;
    assert(len < sizeof last);
    memcpy(last, message, len);
    last_len = len;
    emitted++;
}

static int is(const char *expected) {
    return last_len == strlen(expected) && memcmp(last, expected, last_len) == 0;
}

int main(void) {
    pylogsink_emitf(PYLOGSINK_INFO, "t", __FILE__, __LINE__, "fits: %d items\n", 3);
    assert(is("fits: 3 items"));
    /* Exactly the stack buffer, one more, and the largest kept whole. */
    for (int width = 1020; width <= 1030; width++) {
        pylogsink_emitf(PYLOGSINK_INFO, "t", __FILE__, __LINE__, "%*d", width, 5);
        assert(last_len == (size_t)width && last[width - 1] == '5');
    }
    pylogsink_emitf(PYLOGSINK_INFO, "t", __FILE__, __LINE__, "%*d", PYLOGSINK_FORMAT_MAX, 5);
    assert(last_len == PYLOGSINK_FORMAT_MAX && last[last_len - 1] == '5');
    /* Longer: cut, with the note. */
    pylogsink_emitf(PYLOGSINK_INFO, "t", __FILE__, __LINE__, "%1000000d|end", 7);
    char note[80];
    snprintf(note, sizeof note, " [pylogsink] cut: %d bytes left out", 1000004 - PYLOGSINK_FORMAT_MAX);
    assert(last_len == PYLOGSINK_FORMAT_MAX + strlen(note));
    assert(memcmp(last + PYLOGSINK_FORMAT_MAX, note, strlen(note)) == 0);
    /* Filtered out: not formatted (the argument would crash). */
    int before = emitted;
    allow = 0;
    pylogsink_emitf(PYLOGSINK_TRACE, "t", __FILE__, __LINE__, "%s", (const char *)1);
    allow = 1;
    assert(emitted == before);
    /* No format: nothing. */
    pylogsink_emitf(PYLOGSINK_INFO, "t", __FILE__, __LINE__, NULL);
    assert(emitted == before);
    puts("ok");
    return 0;
}
