/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_call: the private header of the http module's two files (http.h is
 * its public one). http.c is the multi loop on libev: sockets, timers,
 * finished calls handed to their callbacks, the pool of kept calls;
 * http_req.c builds a request on a call's easy handle (the options every
 * call shares, the method, body and header lines in our own buffers),
 * reads the answer's body and headers, and says why a call got no answer
 * (http_req_classify, callfail.h). Nothing outside src/http includes it.
 */
#ifndef WARRANTD_HTTP_CALL_H
#define WARRANTD_HTTP_CALL_H

#include <stdint.h>
#include <sys/queue.h>

#include <curl/curl.h>

#include "http/http.h"

/* Under ASan a kept call is poisoned while it is idle, so a use of a call
 * after its callback or cancel is still reported, as when calls were freed. */
#if defined(__SANITIZE_ADDRESS__)
#define HTTP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HTTP_ASAN 1
#endif
#endif
#ifdef HTTP_ASAN
#include <sanitizer/asan_interface.h>
#define KEPT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define KEPT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define KEPT_POISON(p, n) ((void)(p), (void)(n))
#define KEPT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

enum call_state { CALL_ACTIVE, CALL_DONE, CALL_IN_CALLBACK };

TAILQ_HEAD(call_list, http_call);


/* Calls kept between calls, each with its easy handle (one per slot at
 * max_in_flight 256 and more): curl_easy_init and curl_easy_cleanup per call
 * were 5 % of a job; curl_easy_reset and setting every option again per call
 * another 4 % (issue 10). */
#define HTTP_EASY_POOL 512
/* curl's receive buffer, one per transfer under way: its default 16 KiB made
 * a third of the heap at 256 calls in flight (issue 10: peak RSS 16.6-18.6
 * MiB, 14.0-15.5 with 2 KiB); 1 KiB, curl's least, is another 1 KiB less per
 * transfer (160 of them at the heap's peak with token = exchange). The
 * answers we read are a status line, a few headers and a small body (an
 * exchange's token answer about 700 bytes in all); headers are gathered
 * across reads, so a longer answer only takes more reads. */
#define HTTP_RECV_BUFFER 1024L
/* A kept call keeps its buffers (header lines, request body, answer) up to
 * this size each for the next call; a bigger one is freed when the call ends.
 * It holds a call without a token whole (the bench's: header lines 185
 * bytes, R7 body 234, no answer body), so auth none allocates nothing per
 * call. Not a bearer's header lines (about 630), a token exchange's request
 * (1,010) or its answer (470): kept up to 4 KiB, every pooled call grew to
 * the largest of each it ever held, 2.7 KiB a call (issue 10: with
 * token = exchange 0.55 MB of the heap at 220 calls in flight). */
#define HTTP_KEEP_BUF 256
/* No curl adds "Expect: 100-continue" to a CURLOPT_POSTFIELDS body of this
 * many bytes or fewer (the threshold was 1 KiB, it is 1 MiB since 7.6x), so
 * the "Expect:" line that turns it off is only sent along with a bigger body:
 * one header line fewer for curl to scan in every small call. */
#define HTTP_EXPECT_MIN 1024

struct http_client {
	struct ev_loop *loop;
	CURLM *multi;
	struct ev_timer timer;
	struct call_list active;	/* attached to the multi */
	struct call_list done;		/* finished, callback not yet run */
	LIST_HEAD(, http_sock) socks;	/* every watcher we own */
	struct http_call *idle[HTTP_EASY_POOL];	/* owned: finished calls, kept with their handles */
	size_t nidle;
	size_t in_flight;
	int dispatching;
	int env_proxy;		/* a proxy variable was set when the client was made */
};

struct http_call {
	struct http_client *hc;
	TAILQ_ENTRY(http_call) link;	/* in active or done */
	enum call_state state;
	/* Kept with the call between calls: the handle, with the options that
	 * are the same for every call set once (easy_setup), and our buffers. */
	CURL *easy;
	int in_multi;
	char *hdr;			/* the header list's nodes, then its lines: may
					   hold a bearer or Basic credentials */
	size_t hdr_lines, hdr_len, hdr_cap;	/* where the lines start, where they end */
	struct curl_slist *headers;	/* CURLOPT_HTTPHEADER: in hdr, or NULL */
	char *req_body;			/* CURLOPT_POSTFIELDS: may hold a client secret */
	size_t req_body_len, req_body_cap;
	int has_req_body;
	int custom, nobody;		/* CURLOPT_CUSTOMREQUEST, CURLOPT_NOBODY set */
	/* This call's own: set by http_start */
	http_done_cb *cb;
	void *arg;
	char method[16];		/* for the log line only */
	char errbuf[CURL_ERROR_SIZE];
	char *body;
	size_t body_len, body_cap;
	int body_too_large;
	char *retry_after, *www_authenticate;
	char *dpop_nonce;	/* RFC 9449 §8: DPoP-Nonce */
	CURLcode result;
	enum callfail fail;	/* classify()'s, CALLFAIL_NONE when it answered */
	long status, connects;
	int no_descriptor;	/* a socket() of this call met EMFILE or ENFILE */
	int64_t started_ms, elapsed_ms;
};

/* The options every call of a new handle shares, set once. 0 or -1. */
int http_req_easy_setup(struct http_call *c) __attribute__((warn_unused_result));

/* Wipes the call's header lines and request body (a token, Basic
 * credentials, a client secret may be there). */
void http_req_wipe(struct http_call *c);

/* 1 when req may be started: a url and a method, no CR/LF in a method,
 * url, userpwd or header, timeout_ms > 0. */
int http_req_valid(const struct http_request *req) __attribute__((warn_unused_result));

/* Sets everything of req that differs between calls (URL, timeouts,
 * method, body, header lines) on c's handle, req copied into c's buffers.
 * 0 or -1 (out of memory, or curl refused an option). */
int http_req_set(struct http_call *c, const struct http_request *req)
	__attribute__((warn_unused_result));

/* At debug: the finished call's method, host and path (never its query or
 * userinfo), status, time and curl's message. */
void http_req_log_done(const struct http_call *c);

/* Why a call that ended with result (not CURLE_OK) got no answer. */
enum callfail http_req_classify(const struct http_call *c, CURLcode result)
	__attribute__((warn_unused_result));

#endif
