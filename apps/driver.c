/* SPDX-License-Identifier: MIT */
/*
 * driver.c - the one life of a command that runs a runtime (see
 * driver.h): flags, signals, runtime, banner, the wait with its tick and
 * SIGUSR1 report, the drain deadline (cut short by a second SIGINT or
 * SIGTERM), the final metrics and the exit status. The commands supply
 * only their hooks.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pinwheel/metrics.h"
#include "apps/driver.h"
#include "apps/scrape.h"
#include "apps/takeover.h"

enum pw_expo_format pw_drv_format(const struct pw_drv *d)
{
	return d->cli.metrics_format == PW_CLI_METRICS_PROMETHEUS ?
		       PW_EXPO_PROMETHEUS :
		       PW_EXPO_JSON;
}

/* The runtime's JSON object without its closing brace, to @f, so that
 * the counters go on as members of the same object. */
static int runtime_json(const struct pw_metrics *m, FILE *f)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int err;

	if (!mem)
		return -ENOMEM;
	err = pw_metrics_write_json(m, mem);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	/* "{...}" and a newline: drop the newline and the brace. */
	while (!err && len && text[len - 1] == '\n')
		len--;
	if (!err && len && text[len - 1] == '}')
		len--;
	if (!err && fwrite(text, 1, len, f) != len)
		err = -EIO;
	free(text);
	return err;
}

/* The short name of the command as metric names spell it into @out
 * (@size bytes): "http" of "pinwheel http", "udp_echo" of "pinwheel
 * udp-echo" (a dash is not allowed in a metric name). */
static const char *cmd_name(const struct pw_drv *d, char *out, size_t size)
{
	const char *sp = strrchr(d->cmd->name, ' ');
	size_t i;

	sp = sp ? sp + 1 : d->cmd->name;
	for (i = 0; sp[i] && i + 1 < size; i++)
		out[i] = sp[i] == '-' ? '_' : sp[i];
	out[i] = '\0';
	return out;
}

int pw_drv_report(struct pw_drv *d, FILE *f, enum pw_expo_format fmt)
{
	struct pw_metrics m;
	struct pw_expo e;
	char name[32];
	int err, end;

	if (!d->rt || !f)
		return -EINVAL;
	err = pw_metrics_read(d->rt, &m);
	if (err)
		return err;
	err = fmt == PW_EXPO_JSON ? runtime_json(&m, f) :
				    pw_metrics_write_prometheus(&m, f);
	pw_metrics_free(&m);
	if (err)
		return err;
	pw_expo_begin_members(&e, f, fmt, cmd_name(d, name, sizeof(name)));
	if (d->ops->counters)
		d->ops->counters(d, &e);
	if (d->scrape)
		pw_scrape_counters(d->scrape, &e);
	end = pw_expo_end(&e);
	return end;
}

void pw_drv_metrics(struct pw_drv *d, FILE *f)
{
	if (d->cli.metrics && d->rt)
		pw_drv_report(d, f, pw_drv_format(d));
}

/* A scrape's body (pw_scrape_write_fn). */
static int scrape_write(void *arg, FILE *f, enum pw_expo_format fmt)
{
	return pw_drv_report(arg, f, fmt);
}

/* With --metrics-listen: the scrape server and its line. */
static int scrape_start(struct pw_drv *d)
{
	char text[PW_NET_ADDR_STRLEN];
	struct pw_net_addr a;
	int err;

	if (!d->cli.metrics_listen)
		return 0;
	err = pw_scrape_start(&d->scrape, d->rt, &d->metrics_addr, scrape_write,
			      d);
	if (err) {
		d->scrape = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot serve metrics on %s: %s",
				   d->cli.metrics_listen, strerror(-err));
	}
	pw_scrape_addr(d->scrape, &a);
	pw_net_addr_format(&a, text, sizeof(text));
	printf("%s: metrics on %s (GET /metrics, /metrics.json)\n",
	       d->cmd->name, text);
	fflush(stdout);
	return 0;
}

/* The report hook, or the metrics when there is none. */
static void report(struct pw_drv *d, bool final)
{
	if (d->ops->report)
		d->ops->report(d, final);
	else
		pw_drv_metrics(d, stdout);
}

bool pw_drv_wait(struct pw_drv *d, uint64_t ns)
{
	int rc = pw_cli_wait_stop((int64_t)ns);

	if (rc == PW_CLI_DUMP)
		report(d, false);
	return rc == PW_CLI_STOP;
}

/* d->cfg as the runtime would take it: "NAME: cannot start the runtime:
 * FIELD: WHY" (pw_config_check) when a field is wrong. */
static int check_config(struct pw_drv *d)
{
	char msg[256] = "";
	int err = pw_config_check(&d->cfg, msg, sizeof(msg));

	if (!err)
		return 0;
	return pw_cli_fail(&d->cli, 1, "cannot start the runtime: %s",
			   *msg ? msg : pw_strerror_setup(err));
}

/* The runtime from d->cfg; what went wrong is told as above. */
static int create_runtime(struct pw_drv *d)
{
	int err = pw_runtime_create(&d->rt, &d->cfg);

	if (err) {
		d->rt = NULL;
		return pw_cli_fail(&d->cli, 1, "cannot start the runtime: %s",
				   pw_strerror_setup(err));
	}
	return 0;
}

/* "NAME: listening on ADDR" and the command's rest of the line. */
static void banner(struct pw_drv *d)
{
	char text[PW_NET_ADDR_STRLEN];

	if (!d->addr.len)
		return;
	pw_net_addr_format(&d->addr, text, sizeof(text));
	printf("%s: listening on %s", d->cmd->name, text);
	if (d->ops->banner)
		d->ops->banner(d, stdout);
	printf("\n");
	fflush(stdout);
}

/* Signals, the runtime, the service and its banner. */
static int start(struct pw_drv *d)
{
	const struct pw_drv_ops *o = d->ops;
	int err;

	if (!o->no_signals) {
		/* Before any thread starts: every thread inherits the mask. */
		err = pw_cli_signals_init();
		if (err)
			return pw_cli_fail(&d->cli, 1, "signals: %s",
					   strerror(-err));
		signal(SIGPIPE, SIG_IGN);
	}
	if ((err = check_config(d)))
		return err;
	if (!o->own_runtime && (err = create_runtime(d)))
		return err;
	if ((err = pw_tko_begin(d)))
		return err;
	if (o->start && (err = o->start(d)))
		return err;
	d->served = true;
	if ((err = pw_tko_ready(d)))
		return err;
	banner(d);
	return scrape_start(d);
}

/* Wait up to @ns for a second SIGINT or SIGTERM, reporting on SIGUSR1.
 * Return: whether one came. */
static bool wait_force(struct pw_drv *d, uint64_t ns)
{
	int rc = pw_cli_wait_force((int64_t)ns);

	if (rc == PW_CLI_DUMP)
		report(d, false);
	if (rc < 0) {
		/* No signals to wait for (or a failed wait): just pause. */
		struct timespec nap = { 0, (long)ns };

		nanosleep(&nap, NULL);
	}
	return rc == PW_CLI_FORCE;
}

/*
 * Stop accepting; give the open connections up to d->drain_ns, looking at
 * open() every 5 ms. A second SIGINT or SIGTERM ends the wait at once;
 * then, as at the deadline, the runtime's end closes what is left.
 */
static void drain(struct pw_drv *d)
{
	uint64_t t0 = pw_cli_mono_ns(); /* an elapsed time cannot overflow */
	uint64_t step = 5 * PW_NSEC_PER_MSEC, spent;
	bool forced = false;
	int open = 0;

	if (!d->ops->drain)
		return;
	d->ops->drain(d);
	while (d->ops->open && (open = d->ops->open(d)) > 0 &&
	       (spent = pw_cli_mono_ns() - t0) < d->drain_ns) {
		if (d->drain_ns - spent < step)
			step = d->drain_ns - spent;
		if ((forced = wait_force(d, step))) {
			open = d->ops->open(d);
			break;
		}
	}
	if (open <= 0)
		return;
	d->left = open;
	if (forced)
		printf("%s: second signal; closing %d connection%s now\n",
		       d->cmd->name, open, open == 1 ? "" : "s");
	else
		printf("%s: drain deadline passed with %d connection%s open; "
		       "closing them\n",
		       d->cmd->name, open, open == 1 ? "" : "s");
	fflush(stdout);
}

/* Serve until SIGINT or SIGTERM: tick, report on SIGUSR1; then drain. */
static int serve(struct pw_drv *d)
{
	uint64_t next = pw_cli_mono_ns() + d->tick_ns;
	int rc;

	for (;;) {
		uint64_t now = pw_cli_mono_ns();
		int64_t wait = -1;

		if (d->tick_ns && now >= next) {
			d->ops->tick(d);
			next += d->tick_ns;
			continue;
		}
		if (d->tick_ns)
			wait = (int64_t)(next - now);
		rc = pw_cli_wait_stop(wait);
		if (rc == PW_CLI_STOP)
			break;
		if (rc < 0) {
			pw_cli_fail(&d->cli, 1, "signals: %s", strerror(-rc));
			break;
		}
		if (rc == PW_CLI_DUMP)
			report(d, false);
	}
	pw_tko_stopping(d);
	drain(d);
	return rc < 0 ? 1 : 0;
}

int pw_drv_main(const struct pw_cli_cmd *cmd, const struct pw_drv_ops *ops,
		int argc, char **argv)
{
	struct pw_drv d = { .cmd = cmd, .ops = ops };
	int rc;

	rc = pw_cli_parse(&d.cli, cmd, argc, argv);
	if (rc)
		return pw_cli_status(rc);
	pw_config_init(&d.cfg);
	rc = pw_cli_config(&d.cli, &d.cfg);
	if (rc)
		return pw_cli_status(rc);
	if (d.cli.metrics_listen &&
	    pw_cli_addr(&d.cli, "--metrics-listen", d.cli.metrics_listen,
			PW_CLI_ADDR_LISTEN, &d.metrics_addr))
		return 2;
	if (ops->setup && (rc = ops->setup(&d)))
		return rc;
	rc = start(&d);
	if (!rc)
		rc = ops->run ? ops->run(&d) : serve(&d);
	pw_tko_end(&d);
	if (d.served && d.cli.metrics)
		report(&d, true);
	pw_scrape_stop(d.scrape); /* its counters were in the report */
	d.scrape = NULL;
	if (!ops->own_runtime && d.rt)
		pw_runtime_destroy(d.rt);
	if (ops->stop)
		rc = ops->stop(&d, rc);
	/* The summary reaches a pipe whatever happens next. */
	fflush(stdout);
	if (!ops->no_signals) {
		pw_cli_signals_close();
		if (pw_cli_force_status())
			rc = pw_cli_force_status();
	}
	return rc;
}
