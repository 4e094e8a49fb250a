/* Unit tests for log.c: values quoted so that a client cannot forge fields or lines. */
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"

static void quote_escapes_what_could_forge_a_field(void)
{
    char b[128];
    ASSERT_STR(log_quote(b, sizeof b, "/v1/jobs"), "\"/v1/jobs\"");
    ASSERT_STR(log_quote(b, sizeof b, "/x\tlevel=error"), "\"/x\\tlevel=error\"");
    ASSERT_STR(log_quote(b, sizeof b, "/x\" level=error msg=\"y"),
               "\"/x\\\" level=error msg=\\\"y\"");
    ASSERT_STR(log_quote(b, sizeof b, "a\nb\rc\\d"), "\"a\\nb\\rc\\\\d\"");
    ASSERT_STR(log_quote(b, sizeof b, "\x1b[31m\x7f\xc3\xa9"), "\"\\x1b[31m\\x7f\\xc3\\xa9\"");
    ASSERT_STR(log_quote(b, sizeof b, NULL), "\"\"");
}

static void quote_cuts_to_fit(void)
{
    char b[16];
    log_quote(b, sizeof b, "0123456789abcdefghij");
    ASSERT_STR(b, "\"0123456789...\"");
    ASSERT(strlen(b) < sizeof b);
    char t[8];
    log_quote(t, sizeof t, "\t\t\t\t");
    ASSERT(strlen(t) < sizeof t);
    ASSERT_EQ(t[0], '"');
    ASSERT_EQ(t[strlen(t) - 1], '"');
}

/* A caller that forgets log_quote still cannot break the line. */
static void tail_carries_no_control_byte(void)
{
    char path[] = "/tmp/governor-test-log-XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    log_write(LOG_INFO, "test", "m\"sg\n", "path=%s", "/x\nts=forged\tlevel=error");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[512] = "";
    FILE *f = fopen(path, "r");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    close(fd);
    unlink(path);
    buf[n] = '\0';
    ASSERT(n > 0 && buf[n - 1] == '\n');
    ASSERT(strchr(buf, '\n') == buf + n - 1); /* one line */
    ASSERT(strchr(buf, '\t') == NULL);
    ASSERT(strstr(buf, "msg=\"m\\\"sg\\n\" path=/x?ts=forged?level=error") != NULL);
}

TEST_MAIN(TEST_ENTRY(quote_escapes_what_could_forge_a_field), TEST_ENTRY(quote_cuts_to_fit),
          TEST_ENTRY(tail_carries_no_control_byte))
