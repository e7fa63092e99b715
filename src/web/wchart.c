/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <string.h>

#include "wchart.h"

#define W	720	/* the plot's size in SVG units; CSS scales it */
#define H	160
#define MAX_SERIES 16

static const char *const outcomes[] = {"done", "failed", "dead", "expired", "denied",
    "cancelled"};
#define NOUT (sizeof outcomes / sizeof outcomes[0])

/* The last `minutes` buckets: *from the index of the first. */
static const json_t *
window(const json_t *stats, long minutes, size_t *from, size_t *n)
{
	const json_t *all = json_object_get(stats, "buckets");
	size_t len = json_array_size(all);

	*n = minutes > 0 && (size_t)minutes < len ? (size_t)minutes : len;
	*from = len - *n;
	return all;
}

static long long
field_of(const json_t *bucket, const char *field)
{
	return json_integer_value(json_object_get(bucket, field));
}

long long
wchart_sum(const json_t *stats, long minutes, const char *field)
{
	size_t from, n;
	const json_t *all = window(stats, minutes, &from, &n);
	long long s = 0;

	for (size_t i = from; i < from + n; i++)
		s += field_of(json_array_get(all, i), field);
	return s;
}

/* The sum of field over bar k (per minutes). */
static long long
bar_sum(const json_t *all, size_t from, size_t n, long per, size_t k, const char *field)
{
	long long s = 0;

	for (size_t i = from + k * (size_t)per; i < from + (k + 1) * (size_t)per && i < from + n; i++)
		s += field_of(json_array_get(all, i), field);
	return s;
}

static void
svg_open(struct whtml *b, const char *label)
{
	whtml_rawf(b, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", W,
	    H + 16);
	whtml_text(b, label);
	whtml_rawf(b, "\"><line class=\"axis\" x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", H, W, H);
}

/* The time axis's two ends and the scale's top. */
static void
svg_close(struct whtml *b, long minutes, long long top, const char *unit)
{
	whtml_rawf(b, "<text x=\"0\" y=\"%d\">-%ld %s</text><text x=\"%d\" y=\"%d\" "
	    "text-anchor=\"end\">now</text><text x=\"4\" y=\"12\">%lld%s</text></svg>", H + 14,
	    minutes >= 120 ? minutes / 60 : minutes, minutes >= 120 ? "h" : "min", W, H + 14, top,
	    unit);
}

void
wchart_outcomes(struct whtml *b, const json_t *stats, long minutes, long per)
{
	size_t from, n;
	const json_t *all = window(stats, minutes, &from, &n);
	size_t bars = per > 0 ? (n + (size_t)per - 1) / (size_t)per : 0;
	char field[32];
	long long top = 1;

	for (size_t k = 0; k < bars; k++) {
		long long t = 0;
		for (size_t o = 0; o < NOUT; o++) {
			snprintf(field, sizeof field, "o.%s", outcomes[o]);
			t += bar_sum(all, from, n, per, k, field);
		}
		top = t > top ? t : top;
	}
	svg_open(b, "jobs by outcome");
	for (size_t k = 0; k < bars; k++) {
		long long y = H;
		for (size_t o = 0; o < NOUT; o++) {
			snprintf(field, sizeof field, "o.%s", outcomes[o]);
			long long v = bar_sum(all, from, n, per, k, field);
			long long h = v * H / (top > 0 ? top : 1);
			if (v == 0)
				continue;
			y -= h > 0 ? h : 1;
			whtml_rawf(b, "<rect class=\"o-%s\" x=\"%zu\" y=\"%lld\" width=\"%zu\" "
			    "height=\"%lld\"><title>%lld %s</title></rect>", outcomes[o],
			    k * W / bars, y, W / bars > 1 ? W / bars - 1 : 1, h > 0 ? h : 1, v,
			    outcomes[o]);
		}
	}
	svg_close(b, minutes, top, per == 1 ? " a minute" : " a bar");
	whtml_raw(b, "<table class=\"legend\"><tbody>");
	for (size_t o = 0; o < NOUT; o++) {
		snprintf(field, sizeof field, "o.%s", outcomes[o]);
		whtml_rawf(b, "<tr><td><span class=\"sw o-%s\"></span>%s</td><td class=\"num\" "
		    "data-total=\"%s\">%lld</td></tr>", outcomes[o], outcomes[o], field,
		    wchart_sum(stats, minutes, field));
	}
	whtml_raw(b, "</tbody></table>");
}

/* The names after "<kind>." in the window's buckets, at most max. */
static size_t
names_of(const json_t *all, size_t from, size_t n, const char *kind, const char **out,
	 size_t max)
{
	size_t k = 0, klen = strlen(kind);

	for (size_t i = from; i < from + n; i++) {
		const char *f;
		const json_t *v;
		json_object_foreach((json_t *)json_array_get(all, i), f, v) {
			if (strncmp(f, kind, klen) != 0)
				continue;
			size_t j;
			for (j = 0; j < k && strcmp(out[j], f + klen) != 0; j++)
				;
			if (j == k && k < max)
				out[k++] = f + klen;
		}
	}
	return k;
}

void
wchart_latency(struct whtml *b, const json_t *stats, long minutes, long per)
{
	size_t from, n;
	const json_t *all = window(stats, minutes, &from, &n);
	size_t bars = per > 0 ? (n + (size_t)per - 1) / (size_t)per : 0;
	const char *names[MAX_SERIES];
	size_t ns = names_of(all, from, n, "c.", names, MAX_SERIES);
	char c[200], ms[200];
	long long top = 1;

	for (size_t a = 0; a < ns; a++)
		for (size_t k = 0; k < bars; k++) {
			snprintf(c, sizeof c, "c.%s", names[a]);
			snprintf(ms, sizeof ms, "ms.%s", names[a]);
			long long calls = bar_sum(all, from, n, per, k, c);
			long long mean = calls ? bar_sum(all, from, n, per, k, ms) / calls : 0;
			top = mean > top ? mean : top;
		}
	svg_open(b, "call duration by action");
	for (size_t a = 0; a < ns; a++) {
		snprintf(c, sizeof c, "c.%s", names[a]);
		snprintf(ms, sizeof ms, "ms.%s", names[a]);
		whtml_rawf(b, "<polyline class=\"s%zu\" points=\"", a % 6);
		for (size_t k = 0; k < bars; k++) {
			long long calls = bar_sum(all, from, n, per, k, c);
			if (calls > 0)
				whtml_rawf(b, "%zu,%lld ", k * W / bars + W / bars / 2, H - H *
				    (bar_sum(all, from, n, per, k, ms) / calls) / (top > 0 ? top : 1));
		}
		whtml_raw(b, "\"/>");
	}
	svg_close(b, minutes, top, " ms");
	whtml_raw(b, "<table class=\"legend\"><tbody>");
	for (size_t a = 0; a < ns; a++) {
		snprintf(c, sizeof c, "c.%s", names[a]);
		snprintf(ms, sizeof ms, "ms.%s", names[a]);
		long long calls = wchart_sum(stats, minutes, c);
		whtml_rawf(b, "<tr><td><span class=\"sw s%zu\"></span>", a % 6);
		whtml_text(b, names[a]);
		whtml_rawf(b, "</td><td class=\"num\">%lld calls, mean %lld ms</td></tr>", calls,
		    calls ? wchart_sum(stats, minutes, ms) / calls : 0);
	}
	if (ns == 0)
		whtml_raw(b, "<tr><td class=\"none\">no call</td></tr>");
	whtml_raw(b, "</tbody></table>");
}

void
wchart_dead(struct whtml *b, const json_t *stats, long minutes)
{
	size_t from, n;
	const json_t *all = window(stats, minutes, &from, &n);
	const char *names[MAX_SERIES];
	size_t nr = names_of(all, from, n, "d.", names, MAX_SERIES);
	long long tot[MAX_SERIES], top = 1;
	char f[200];

	for (size_t r = 0; r < nr; r++) {
		snprintf(f, sizeof f, "d.%s", names[r]);
		tot[r] = wchart_sum(stats, minutes, f);
		top = tot[r] > top ? tot[r] : top;
	}
	whtml_rawf(b, "<svg class=\"chart bars\" viewBox=\"0 0 %d %zu\" role=\"img\" "
	    "aria-label=\"dead letters by reason\">", W, 22 * (nr ? nr : 1));
	for (size_t r = 0; r < nr; r++) {
		whtml_rawf(b, "<rect class=\"o-dead\" x=\"200\" y=\"%zu\" width=\"%lld\" "
		    "height=\"16\"/><text x=\"0\" y=\"%zu\">", 22 * r, (W - 260) * tot[r] / (top > 0 ? top : 1),
		    22 * r + 13);
		whtml_text(b, names[r]);
		whtml_rawf(b, "</text><text x=\"%lld\" y=\"%zu\" data-total=\"d.", 206 +
		    (W - 260) * tot[r] / (top > 0 ? top : 1), 22 * r + 13);
		whtml_text(b, names[r]);
		whtml_rawf(b, "\">%lld</text>", tot[r]);
	}
	if (nr == 0)
		whtml_raw(b, "<text x=\"0\" y=\"14\">no dead letter</text>");
	whtml_raw(b, "</svg>");
}
