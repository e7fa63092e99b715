/* fuzz_h1: the native HTTP client's answer reader and its URL check. The
 * input is read as an answer twice, whole and in pieces whose sizes the
 * first byte chooses, with the end of the connection after it: neither may
 * crash or read out of bounds, both must end alike (code, status, body,
 * keep-alive, Retry-After), a body never exceeds the limit, and what the
 * reader says it used is never more than it was given. The input as a URL:
 * when h1 takes it, the head written for it fits h1_head_size and has no
 * line break but the line ends it writes itself. */
#define _DEFAULT_SOURCE	/* strdup */
#include "fuzz.h"
#include "h1.h"

#define BODY_MAX 4096

struct outcome {
	enum h1_rc rc;
	long status;
	int keep;
	size_t body_len;
	char *body, *retry_after;
};

static struct outcome
read_answer(struct h1_reader *r, const uint8_t *d, size_t n, size_t step)
{
	struct outcome o = {.rc = H1_MORE};
	size_t off = 0, used, len;
	const char *b;

	h1_reader_reset(r, 0, BODY_MAX, 256);
	while (off < n && o.rc == H1_MORE) {
		size_t piece = step == 0 || step > n - off ? n - off : step;
		o.rc = h1_reader_feed(r, (const char *)d + off, piece, &used);
		if (used > piece || (o.rc == H1_MORE && used != piece))
			abort();
		off += used;
	}
	if (o.rc == H1_MORE)
		o.rc = h1_reader_eof(r);
	o.status = h1_reader_status(r);
	o.keep = h1_reader_keep_alive(r);
	b = h1_reader_body(r, &len);
	if (b == NULL || len > BODY_MAX || b[len] != '\0' || (o.rc == H1_DONE) != (o.status > 0))
		abort();
	o.body_len = len;
	o.body = malloc(len + 1);
	if (o.body == NULL)
		abort();
	memcpy(o.body, b, len + 1);
	o.retry_after = h1_reader_retry_after(r) ? strdup(h1_reader_retry_after(r)) : NULL;
	return o;
}

static void
answers(const uint8_t *data, size_t size)
{
	struct h1_reader *r = h1_reader_new();
	struct outcome a, b;
	size_t step = size > 0 ? (size_t)data[0] % 17 + 1 : 1;

	if (r == NULL)
		abort();
	a = read_answer(r, data, size, 0);
	b = read_answer(r, data, size, step);
	if (a.rc != b.rc || a.status != b.status || a.keep != b.keep ||
	    a.body_len != b.body_len || memcmp(a.body, b.body, a.body_len) != 0 ||
	    (a.retry_after == NULL) != (b.retry_after == NULL) ||
	    (a.retry_after != NULL && strcmp(a.retry_after, b.retry_after) != 0))
		abort();
	free(a.body);
	free(b.body);
	free(a.retry_after);
	free(b.retry_after);
	h1_reader_free(r);
}

static void
url(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	const char *hdrs[] = {"Content-Type: application/json", NULL};
	struct h1_url u;
	struct h1_head h = {.method = "POST", .url = &u, .headers = hdrs, .basic = "a:b",
	    .has_body = 1, .body_len = 3};

	if (h1_url_parse(s, &u) == 0) {
		size_t cap = h1_head_size(&h), n;
		char *buf = malloc(cap), *line;
		if (buf == NULL)
			abort();
		n = h1_head_write(buf, &h);
		if (n > cap || n < 4 || memcmp(buf + n - 4, "\r\n\r\n", 4) != 0)
			abort();
		for (line = buf; line < buf + n;) {
			char *lf = memchr(line, '\n', (size_t)(buf + n - line));
			if (lf == NULL || lf == line || lf[-1] != '\r' ||
			    memchr(line, '\r', (size_t)(lf - 1 - line)) != NULL)
				abort();
			line = lf + 1;
		}
		free(buf);
	}
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	answers(data, size);
	url(data, size);
	return 0;
}
