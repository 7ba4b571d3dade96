/* SPDX-License-Identifier: MIT */
/*
 * cli.c - flags, addresses, usage, configuration (with the scheduler
 * from PW_SCHED), signals, metrics, the clock and JSON strings shared by
 * the pinwheel subcommands (see cli.h).
 *
 * Numbers are parsed by hand rather than with strtoull(), which takes
 * blanks, signs and wraps "-1" around; every value is checked whole.
 * Signals go through one signalfd owned by the main thread; the count of
 * stop signals and the dump flag are atomics so that any thread may read
 * them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "pinwheel/metrics.h"
#include "pinwheel/topo.h"
#include "apps/cli.h"

int pw_cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s || !out)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
	}
	for (const char *p = s; *p; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Leading digits of *@s into *@v, *@s moved past them: 0; -EINVAL when
 * there is none, -ERANGE past 2^64 - 1. */
static int digits(const char **s, uint64_t *v)
{
	const char *start = *s;

	*v = 0;
	for (; **s >= '0' && **s <= '9'; (*s)++) {
		unsigned d = (unsigned)(**s - '0');
		if (*v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		*v = *v * 10 + d;
	}
	return *s == start ? -EINVAL : 0;
}

int pw_cli_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {
		{ "ns", 1 },
		{ "us", 1000 },
		{ "ms", 1000000 },
		{ "s", 1000000000 },
		{ "", 1000000000 },
		{ "m", 60000000000ull },
		{ "h", 3600000000000ull },
	};
	uint64_t whole, frac = 0, scale = 1, unit = 0;
	int n;

	if (!s || !ns)
		return -EINVAL;
	n = digits(&s, &whole);
	if (n)
		return n;
	if (*s == '.') {
		s++;
		for (n = 0; *s >= '0' && *s <= '9'; s++, n++) {
			if (n >= 9)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*s - '0');
			scale *= 10;
		}
		if (!n)
			return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(s, units[i].name))
			unit = units[i].ns;
	if (!unit)
		return -EINVAL;
	if (whole > UINT64_MAX / unit)
		return -ERANGE;
	whole *= unit;
	/* frac < scale <= 1e9 and unit <= 3.6e12: the product fits. */
	frac = (uint64_t)((unsigned __int128)frac * unit / scale);
	if (whole > UINT64_MAX - frac)
		return -ERANGE;
	*ns = whole + frac;
	return 0;
}

int pw_cli_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t v, mul = 1;
	int n, shift = 0;

	if (!s || !bytes)
		return -EINVAL;
	n = digits(&s, &v);
	if (n)
		return n;
	if (*s) {
		const char *u = strchr("kmgt", *s | 0x20);

		if (u && *s != ' ') {
			shift = 10 * (int)(u - "kmgt" + 1);
			s++;
			if (!strcmp(s, "iB"))
				s += 2;
		}
		if (*s == 'B')
			s++;
		if (*s)
			return -EINVAL;
	}
	mul <<= shift;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*bytes = v * mul;
	return 0;
}

int pw_cli_parse_fraction(const char *s, uint64_t *ppm)
{
	size_t len = s ? strlen(s) : 0;
	bool pct = len && s[len - 1] == '%';
	int maxdec = pct ? 4 : 6, n;
	uint64_t whole, v, scale = PW_CLI_PPM;

	if (!s || !ppm)
		return -EINVAL;
	n = digits(&s, &whole);
	if (n)
		return n;
	if (whole > 100) /* beyond 1 either way; keeps v below from wrapping */
		whole = 101;
	v = whole * scale;
	if (*s == '.') {
		s++;
		for (n = 0; *s >= '0' && *s <= '9'; s++, n++) {
			if (n >= maxdec)
				return -EINVAL;
			scale /= 10;
			v += (uint64_t)(*s - '0') * scale;
		}
		if (!n)
			return -EINVAL;
	}
	if (strcmp(s, pct ? "%" : ""))
		return -EINVAL;
	if (pct)
		v /= 100; /* exact: at most 4 decimals */
	if (v > PW_CLI_PPM)
		return -ERANGE;
	*ppm = v;
	return 0;
}

int pw_cli_fail(struct pw_cli *c, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(c->error, sizeof(c->error),
		     "%s: ", c->cmd ? c->cmd->name : "pinwheel");
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof(c->error))
		vsnprintf(c->error + n, sizeof(c->error) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", c->error);
	return err;
}

/* Shows a duration in the largest unit that divides it. */
static void show_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		uint64_t ns;
		const char *name;
	} units[] = { { 3600000000000ull, "h" },
		      { 60000000000ull, "m" },
		      { 1000000000, "s" },
		      { 1000000, "ms" },
		      { 1000, "us" },
		      { 1, "ns" } };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ns % units[i].ns == 0 && (ns || units[i].ns == 1)) {
			snprintf(buf, len, "%llu%s",
				 (unsigned long long)(ns / units[i].ns),
				 units[i].name);
			return;
		}
}

static void show_size(uint64_t b, char *buf, size_t len)
{
	static const char *units = "kMGT";
	int i = -1;

	while (b && b % 1024 == 0 && i < 3) {
		b /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)b);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)b, units[i]);
}

/* A fraction in millionths as a percentage, e.g. 5% or 0.25%. */
static void show_fraction(uint64_t ppm, char *buf, size_t len)
{
	unsigned long long whole = ppm / 10000, frac = ppm % 10000;
	int dec = 4;

	for (; frac && frac % 10 == 0; frac /= 10)
		dec--;
	if (frac)
		snprintf(buf, len, "%llu.%0*llu%%", whole, dec, frac);
	else
		snprintf(buf, len, "%llu%%", whole);
}

static void show(enum pw_cli_type t, uint64_t v, char *buf, size_t len)
{
	if (t == PW_CLI_DURATION)
		show_duration(v, buf, len);
	else if (t == PW_CLI_SIZE)
		show_size(v, buf, len);
	else if (t == PW_CLI_FRACTION)
		show_fraction(v, buf, len);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

static const char *type_what(enum pw_cli_type t)
{
	switch (t) {
	case PW_CLI_DURATION:
		return "a duration such as 10s, 500ms or 2m";
	case PW_CLI_SIZE:
		return "a size such as 512, 64k or 1M";
	case PW_CLI_FRACTION:
		return "a fraction such as 0.05 or 5%";
	default:
		return "a whole number";
	}
}

/* The message for value @v of @o outside @lo..@hi (UINT64_MAX: no upper
 * bound); @below: it is under @lo (else above @hi or beyond 64 bits). */
static int out_of_range(struct pw_cli *c, const struct pw_cli_opt *o,
			const char *v, uint64_t lo, uint64_t hi, bool below)
{
	char a[32], b[32];

	show(o->type, lo, a, sizeof(a));
	if (hi == UINT64_MAX && below)
		return pw_cli_fail(c, -EINVAL,
				   "%s: '%s' is out of range (at least %s)",
				   o->name, v, a);
	if (hi == UINT64_MAX)
		return pw_cli_fail(c, -EINVAL, "%s: '%s' is too large", o->name,
				   v);
	show(o->type, hi, b, sizeof(b));
	return pw_cli_fail(c, -EINVAL, "%s: '%s' is out of range %s..%s",
			   o->name, v, a, b);
}

static int set_value(struct pw_cli *c, const struct pw_cli_opt *o,
		     const char *v)
{
	uint64_t x, lo = o->min, hi = o->max ? o->max : UINT64_MAX;
	int err;

	switch (o->type) {
	case PW_CLI_STRING:
		*(const char **)o->dst = v;
		return 0;
	case PW_CLI_UINT:
		err = pw_cli_parse_uint(v, 0, UINT64_MAX, &x);
		break;
	case PW_CLI_DURATION:
		err = pw_cli_parse_duration(v, &x);
		break;
	case PW_CLI_SIZE:
		err = pw_cli_parse_size(v, &x);
		break;
	case PW_CLI_FRACTION:
		err = pw_cli_parse_fraction(v, &x);
		break;
	default:
		return pw_cli_fail(c, -EINVAL, "%s takes no value", o->name);
	}
	if (err == -EINVAL)
		return pw_cli_fail(c, -EINVAL, "%s: '%s' is not %s", o->name, v,
				   type_what(o->type));
	if (err || x < lo || x > hi)
		return out_of_range(c, o, v, lo, hi, !err && x < lo);
	*(uint64_t *)o->dst = x;
	return 0;
}

/* The common flags, as options writing into a scratch place. */
struct common_vals {
	uint64_t shards, idle_poll_ns, batch_wait_ns;
	const char *sched, *cpus, *metrics_format, *metrics_listen;
	bool metrics;
};

/* The common flags: which PW_CLI_* bit brings each, and its field. */
#define VAL(field) offsetof(struct common_vals, field)
static const struct {
	uint32_t mask;
	size_t off;	     /* of its value in struct common_vals */
	struct pw_cli_opt o; /* dst unset */
} common_table[] = {
	{ PW_CLI_SHARDS,
	  VAL(shards),
	  { "--shards", PW_CLI_UINT, NULL, 1, PW_MAX_SHARDS, "N",
	    "number of shards (default: one per core)" } },
	{ PW_CLI_SHARDS,
	  VAL(idle_poll_ns),
	  { "--idle-poll", PW_CLI_DURATION, NULL, 0, PW_IDLE_POLL_MAX_NS,
	    "DURATION",
	    "an idle shard polls this long before it sleeps (default 0)" } },
	{ PW_CLI_SHARDS,
	  VAL(batch_wait_ns),
	  { "--batch-wait", PW_CLI_DURATION, NULL, 0, PW_BATCH_WAIT_MAX_NS,
	    "DURATION",
	    "a sleeping shard gathers completions this long (default 0)" } },
	{ PW_CLI_SCHED,
	  VAL(sched),
	  { "--sched", PW_CLI_STRING, NULL, 0, 0, "shard|steal",
	    "scheduler: shard per core or work stealing "
	    "(default: $PW_SCHED, else shard)" } },
	{ PW_CLI_CPUS,
	  VAL(cpus),
	  { "--cpus", PW_CLI_STRING, NULL, 0, 0, "LIST",
	    "run shards on these CPUs, e.g. 0-3,8" } },
	{ PW_CLI_METRICS,
	  VAL(metrics),
	  { "--metrics", PW_CLI_BOOL, NULL, 0, 0, NULL,
	    "print the runtime's metrics and the command's counters at "
	    "exit and on SIGUSR1" } },
	{ PW_CLI_METRICS,
	  VAL(metrics_format),
	  { "--metrics-format", PW_CLI_STRING, NULL, 0, 0, "json|prometheus",
	    "how --metrics prints them (default json)" } },
	{ PW_CLI_METRICS,
	  VAL(metrics_listen),
	  { "--metrics-listen", PW_CLI_STRING, NULL, 0, 0, "ADDR",
	    "serve GET /metrics (Prometheus) and /metrics.json on ADDR, "
	    "e.g. 127.0.0.1:9100" } },
};
#undef VAL
#define NCOMMON (sizeof(common_table) / sizeof(common_table[0]))

/* The common flags of @mask into @out, writing into @v. */
static unsigned common_opts(uint32_t mask, struct common_vals *v,
			    struct pw_cli_opt *out)
{
	unsigned n = 0;

	for (size_t i = 0; i < NCOMMON; i++) {
		if (!(mask & common_table[i].mask))
			continue;
		out[n] = common_table[i].o;
		out[n++].dst = (char *)v + common_table[i].off;
	}
	return n;
}

static void usage_opt(FILE *f, const struct pw_cli_opt *o)
{
	char left[64];

	snprintf(left, sizeof(left), "%s%s%s", o->name, o->arg ? " " : "",
		 o->arg ? o->arg : "");
	if (strlen(left) > 18)
		fprintf(f, "  %s\n  %-18s %s\n", left, "", o->help);
	else
		fprintf(f, "  %-18s %s\n", left, o->help);
}

void pw_cli_usage(const struct pw_cli_cmd *cmd, FILE *f)
{
	struct common_vals v;
	struct pw_cli_opt common[NCOMMON];
	unsigned nc = common_opts(cmd->common, &v, common);
	bool units = false;

	fprintf(f, "usage: %s [FLAGS]\n\n", cmd->name);
	if (cmd->about)
		fprintf(f, "%s\n\n", cmd->about);
	fprintf(f, "flags:\n");
	for (unsigned i = 0; i < cmd->nopts; i++)
		usage_opt(f, &cmd->opts[i]);
	for (unsigned i = 0; i < nc; i++)
		usage_opt(f, &common[i]);
	fprintf(f, "  %-18s %s\n", "--help", "this text");
	for (unsigned i = 0; i < cmd->nopts + nc; i++) {
		const struct pw_cli_opt *o = i < cmd->nopts ?
						     &cmd->opts[i] :
						     &common[i - cmd->nopts];

		if (o->type == PW_CLI_DURATION || o->type == PW_CLI_SIZE)
			units = true;
	}
	if (units)
		fprintf(f, "\nDurations take ns, us, ms, s, m or h; sizes k, "
			   "M, G (1024-based).\n");
}

static const struct pw_cli_opt *find(const struct pw_cli_opt *opts, unsigned n,
				     const char *name, size_t len)
{
	for (unsigned i = 0; i < n; i++)
		if (strlen(opts[i].name) == len &&
		    !strncmp(opts[i].name, name, len))
			return &opts[i];
	return NULL;
}

/* Check --cpus: parse it and make sure each CPU may be used. */
static int take_cpus(struct pw_cli *c, const char *s)
{
	int n = pw_cpulist_parse(s, c->cpus, PW_MAX_SHARDS);
	cpu_set_t *set;
	size_t size;

	if (n == -E2BIG)
		return pw_cli_fail(c, -EINVAL,
				   "--cpus: '%s' lists more than %d CPUs", s,
				   PW_MAX_SHARDS);
	if (n < 0)
		return pw_cli_fail(
			c, -EINVAL,
			"--cpus: '%s' is not a CPU list such as 0-3,8", s);
	set = CPU_ALLOC(PW_CPULIST_LIMIT);
	size = CPU_ALLOC_SIZE(PW_CPULIST_LIMIT);
	if (set && !sched_getaffinity(0, size, set)) {
		for (int i = 0; i < n; i++)
			if (!CPU_ISSET_S((size_t)c->cpus[i], size, set)) {
				CPU_FREE(set);
				return pw_cli_fail(
					c, -EINVAL,
					"--cpus: CPU %d is not available "
					"to this process",
					c->cpus[i]);
			}
	}
	if (set)
		CPU_FREE(set);
	c->cpus_arg = s;
	c->ncpus = (unsigned)n;
	return 0;
}

/* Take argv[*i], and its value from the next argument if it needs one. */
static int take_arg(struct pw_cli *c, const struct pw_cli_opt *common,
		    unsigned nc, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *eq, *val;
	const struct pw_cli_opt *o;
	size_t len;

	if (strncmp(a, "--", 2))
		return pw_cli_fail(c, -EINVAL,
				   "unexpected argument '%s' (see --help)", a);
	eq = strchr(a, '=');
	len = eq ? (size_t)(eq - a) : strlen(a);
	o = find(c->cmd->opts, c->cmd->nopts, a, len);
	if (!o)
		o = find(common, nc, a, len);
	if (!o)
		return pw_cli_fail(c, -EINVAL,
				   "unknown flag '%.*s' (see --help)", (int)len,
				   a);
	if (o->type == PW_CLI_BOOL) {
		if (eq)
			return pw_cli_fail(c, -EINVAL, "%s takes no value",
					   o->name);
		*(bool *)o->dst = true;
		return 0;
	}
	if (eq)
		val = eq + 1;
	else if (*i + 1 < argc)
		val = argv[++*i];
	else
		return pw_cli_fail(c, -EINVAL, "%s needs a value (%s)", o->name,
				   o->arg ? o->arg : "VALUE");
	return set_value(c, o, val);
}

/*
 * The scheduler: --sched, else the environment variable PW_SCHED (shard
 * or steal; unset or empty: shard). This is the one place the pinwheel
 * command reads PW_SCHED; the library itself never does.
 */
static int take_sched(struct pw_cli *c, const char *flag)
{
	const char *s = flag, *from = "--sched";

	if (!s) {
		s = getenv("PW_SCHED");
		from = "PW_SCHED";
		if (!s || !*s)
			return 0;
	}
	if (!strcmp(s, "shard"))
		c->sched = PW_CLI_SCHED_SHARD;
	else if (!strcmp(s, "steal"))
		c->sched = PW_CLI_SCHED_STEAL;
	else
		return pw_cli_fail(c, -EINVAL, "%s: '%s' is not shard or steal",
				   from, s);
	return 0;
}

/* Move the common flags from @v into @c, checking the named ones. */
static int take_common(struct pw_cli *c, const struct common_vals *v)
{
	const char *mf = v->metrics_format;

	c->shards = (unsigned)v->shards;
	c->idle_poll_ns = v->idle_poll_ns;
	c->batch_wait_ns = v->batch_wait_ns;
	c->metrics = v->metrics;
	c->metrics_listen = v->metrics_listen;
	if ((c->cmd->common & PW_CLI_SCHED) && take_sched(c, v->sched))
		return -EINVAL;
	if (mf && !strcmp(mf, "prometheus"))
		c->metrics_format = PW_CLI_METRICS_PROMETHEUS;
	else if (mf && strcmp(mf, "json"))
		return pw_cli_fail(c, -EINVAL,
				   "--metrics-format: '%s' is not json or "
				   "prometheus",
				   mf);
	if (v->cpus)
		return take_cpus(c, v->cpus);
	return 0;
}

int pw_cli_parse(struct pw_cli *c, const struct pw_cli_cmd *cmd, int argc,
		 char **argv)
{
	struct common_vals v = { 0 };
	struct pw_cli_opt common[NCOMMON];
	unsigned nc;
	int err;

	if (!c || !cmd)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	nc = common_opts(cmd->common, &v, common);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			pw_cli_usage(cmd, stdout);
			return PW_CLI_HELP;
		}
		err = take_arg(c, common, nc, argc, argv, &i);
		if (err)
			return err;
	}
	return take_common(c, &v);
}

int pw_cli_status(int rc)
{
	return rc == PW_CLI_HELP || rc == 0 ? 0 : 2;
}

int pw_cli_sched_apply(struct pw_config *cfg, enum pw_cli_sched s)
{
	if (!cfg)
		return -EINVAL;
	switch (s) {
	case PW_CLI_SCHED_SHARD:
		cfg->sched = PW_SCHED_SHARD;
		return 0;
	case PW_CLI_SCHED_STEAL:
		cfg->sched = PW_SCHED_STEAL;
		return 0;
	}
	return -EINVAL;
}

int pw_cli_config(struct pw_cli *c, struct pw_config *cfg)
{
	unsigned shards;

	if (!c || !cfg)
		return -EINVAL;
	if (c->shards)
		cfg->shards = c->shards;
	if (c->ncpus) {
		shards = c->shards ? c->shards : c->ncpus;
		if (shards > c->ncpus)
			return pw_cli_fail(
				c, -EINVAL,
				"--shards %u is more than the %u CPU%s of "
				"--cpus %s",
				shards, c->ncpus, c->ncpus == 1 ? "" : "s",
				c->cpus_arg);
		for (unsigned i = 0; i < shards; i++)
			c->shard_cpu[i] = c->cpus[i];
		cfg->shards = shards;
		cfg->cpus = c->shard_cpu;
	}
	cfg->idle_poll_ns = c->idle_poll_ns;
	cfg->batch_wait_ns = c->batch_wait_ns;
	if (pw_cli_sched_apply(cfg, c->sched))
		return pw_cli_fail(c, -EINVAL, "--sched: unknown scheduler");
	return 0;
}

/* The port of IP address @a, or -1 for a unix address. */
static int addr_port(const struct pw_net_addr *a)
{
	if (a->u.sa.sa_family == AF_INET)
		return ntohs(a->u.in4.sin_port);
	if (a->u.sa.sa_family == AF_INET6)
		return ntohs(a->u.in6.sin6_port);
	return -1;
}

int pw_cli_addr(struct pw_cli *c, const char *flag, const char *s,
		enum pw_cli_addr_use use, struct pw_net_addr *out)
{
	struct pw_net_addr a;

	if (!s)
		return pw_cli_fail(c, -EINVAL,
				   "%s ADDR is required (see --help)", flag);
	if (pw_net_addr_parse(&a, s))
		return pw_cli_fail(c, -EINVAL,
				   "%s: '%s' is not an address (A.B.C.D:PORT, "
				   "[IPv6]:PORT or unix:PATH)",
				   flag, s);
	if (use != PW_CLI_ADDR_LISTEN && addr_port(&a) == 0)
		return pw_cli_fail(c, -EINVAL,
				   "%s: '%s' has port 0, which no server "
				   "listens on (0 means any port only to "
				   "a listener)",
				   flag, s);
	*out = a;
	return 0;
}

static int sig_fd = -1;
static sigset_t sig_old;
static atomic_bool sig_dump;
/* SIGINT and SIGTERM taken so far; written only by the thread that owns
 * sig_fd (relaxed load and store, no read-modify-write), read by any
 * thread in pw_cli_stop_requested(). */
static atomic_uint sig_stops;
static int sig_force; /* the second stop signal, or 0; sig_fd's thread */

static void sig_set(sigset_t *s)
{
	sigemptyset(s);
	sigaddset(s, SIGINT);
	sigaddset(s, SIGTERM);
	sigaddset(s, SIGUSR1);
}

int pw_cli_signals_init(void)
{
	sigset_t s;
	int err;

	if (sig_fd >= 0)
		return 0;
	sig_set(&s);
	err = pthread_sigmask(SIG_BLOCK, &s, &sig_old);
	if (err)
		return -err;
	sig_fd = signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sig_fd < 0) {
		err = -errno;
		pthread_sigmask(SIG_SETMASK, &sig_old, NULL);
		return err;
	}
	return 0;
}

static unsigned stops(void)
{
	/* Relaxed: pairs with the store in take(); no data travels with
	 * the count. */
	return atomic_load_explicit(&sig_stops, memory_order_relaxed);
}

/* Note signal @signo. Return: PW_CLI_DUMP for SIGUSR1, PW_CLI_STOP for
 * the first SIGINT or SIGTERM, PW_CLI_FORCE for a later one. */
static int take(uint32_t signo)
{
	unsigned n = stops();

	if (signo == SIGUSR1) {
		/* Relaxed: pairs with the exchange in
		 * pw_cli_dump_requested(); the flag carries no data. */
		atomic_store_explicit(&sig_dump, true, memory_order_relaxed);
		return PW_CLI_DUMP;
	}
	if (n && !sig_force)
		sig_force = (int)signo;
	/* Relaxed: pairs with the load in stops(); only this thread
	 * writes the count. */
	atomic_store_explicit(&sig_stops, n + 1, memory_order_relaxed);
	return n ? PW_CLI_FORCE : PW_CLI_STOP;
}

/* Read one signal from sig_fd, waiting up to @timeout_ns (< 0: without
 * limit). Return: its number; 0 when the time ran out (or another reader
 * took it); the -errno of poll or read. */
static int read_signal(int64_t timeout_ns)
{
	struct pollfd pfd = { .fd = sig_fd, .events = POLLIN };
	struct signalfd_siginfo si;
	struct timespec ts, *tsp = NULL;
	int n;

	if (timeout_ns >= 0) {
		ts.tv_sec = (time_t)(timeout_ns / 1000000000);
		ts.tv_nsec = (long)(timeout_ns % 1000000000);
		tsp = &ts;
	}
	do
		n = ppoll(&pfd, 1, tsp, NULL);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	for (;;) {
		ssize_t r = read(sig_fd, &si, sizeof(si));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0; /* taken by someone else: a spurious wake */
		if (r < 0)
			return -errno;
		return (int)si.ssi_signo;
	}
}

/*
 * Take every signal still pending, then let go of the signals without
 * being killed by one that comes meanwhile: ignoring a signal discards
 * it while pending (POSIX sigaction), so it is ignored across the unblock
 * and its former action restored after. One that comes between the last
 * read and the ignore is dropped: the command is ending anyway.
 */
void pw_cli_signals_close(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGUSR1 };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old[3];
	int signo;

	if (sig_fd < 0)
		return;
	while ((signo = read_signal(0)) > 0)
		take((uint32_t)signo);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &ign, &old[i]);
	close(sig_fd);
	sig_fd = -1;
	pthread_sigmask(SIG_SETMASK, &sig_old, NULL);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
}

int pw_cli_wait_stop(int64_t timeout_ns)
{
	int signo;

	if (sig_fd < 0)
		return -EBADF;
	if (stops())
		return PW_CLI_STOP;
	signo = read_signal(timeout_ns);
	return signo > 0 ? take((uint32_t)signo) : signo;
}

int pw_cli_wait_force(int64_t timeout_ns)
{
	int signo;

	if (sig_fd < 0)
		return -EBADF;
	if (sig_force)
		return PW_CLI_FORCE;
	signo = read_signal(timeout_ns);
	return signo > 0 ? take((uint32_t)signo) : signo;
}

int pw_cli_force_status(void)
{
	return sig_force ? 128 + sig_force : 0;
}

bool pw_cli_stop_requested(void)
{
	return stops() > 0;
}

bool pw_cli_dump_requested(void)
{
	/* Relaxed: pairs with the store in pw_cli_wait_stop(). */
	return atomic_exchange_explicit(&sig_dump, false, memory_order_relaxed);
}

int pw_cli_metrics_write(FILE *f, struct pw_runtime *rt,
			 enum pw_cli_metrics_format fmt)
{
	struct pw_metrics m;
	int err;

	if (!f || !rt ||
	    (fmt != PW_CLI_METRICS_JSON && fmt != PW_CLI_METRICS_PROMETHEUS))
		return -EINVAL;
	err = pw_metrics_read(rt, &m);
	if (err)
		return err;
	err = fmt == PW_CLI_METRICS_JSON ? pw_metrics_write_json(&m, f) :
					   pw_metrics_write_prometheus(&m, f);
	pw_metrics_free(&m);
	fflush(f);
	return err;
}

int pw_cli_metrics_dump(FILE *f, struct pw_runtime *rt)
{
	return pw_cli_metrics_write(f, rt, PW_CLI_METRICS_JSON);
}

uint64_t pw_cli_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * PW_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void pw_cli_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}
