/* SPDX-License-Identifier: MIT */
/*
 * net_fixtures.h - helpers shared by the socket tests (test_net.c,
 * test_proxy.c, test_udp.c, ...): blocking client sockets, bound
 * sockets, loopback listeners, ports that refuse or never answer (each held by its socket while in use), descriptor exhaustion and forked scenarios.
 */
#ifndef PW_TESTS_NET_FIXTURES_H
#define PW_TESTS_NET_FIXTURES_H

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/common.h"
#include "pinwheel/net.h"

static inline uint64_t pw_test_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A blocking socket connected to @a, or -errno. */
static inline int pw_test_dial(const struct pw_net_addr *a)
{
	int fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, &a->u.sa, a->len)) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Wait up to @ms for @fd to become readable; true if it did. */
static inline bool pw_test_readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	return poll(&p, 1, ms) == 1;
}

/* The address the socket @fd is bound to, into *@a; fails the test if
 * it cannot be read. Any thread. */
static inline void pw_test_local_addr(int fd, struct pw_net_addr *a)
{
	socklen_t len = sizeof(a->u);

	cr_assert_eq(getsockname(fd, &a->u.sa, &len), 0);
	a->len = len;
}

/*
 * A socket of @type (SOCK_STREAM, SOCK_DGRAM) bound to the address @text
 * ("127.0.0.1:0", "[::1]:0": a free port), not listening; its address as
 * bound, with the port the kernel chose, goes to *@a. Fails the test if
 * a step fails. Returns the socket (close-on-exec, blocking): close it
 * when done. Any thread of the test.
 */
static inline int pw_test_bind(int type, const char *text,
			       struct pw_net_addr *a)
{
	cr_assert_eq(pw_net_addr_parse(a, text), 0, "%s", text);
	int fd = socket(a->u.sa.sa_family, type | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, &a->u.sa, a->len), 0, "bind: %d", errno);
	pw_test_local_addr(fd, a);
	return fd;
}

/* A listening socket on a free loopback port, whose address goes to *@a. */
static inline int pw_test_listen_any(struct pw_net_addr *a, int backlog)
{
	int fd = pw_test_bind(SOCK_STREAM, "127.0.0.1:0", a);

	cr_assert_eq(listen(fd, backlog), 0);
	return fd;
}

/*
 * A loopback TCP port that refuses connects for as long as the returned
 * socket is open: it is bound (so no other socket, in this process or
 * another test's, can take the port) but not listening, so a SYN to it
 * gets a reset. Its address goes to *@a; close the socket when done.
 */
static inline int pw_test_refusing_port(struct pw_net_addr *a)
{
	return pw_test_bind(SOCK_STREAM, "127.0.0.1:0", a);
}

/* Whether a socket of this process's is in the set of @n inodes. */
static inline bool pw_test_inode_in(unsigned long ino, const unsigned long *set,
				    int n)
{
	for (int i = 0; i < n; i++)
		if (set[i] == ino)
			return true;
	return false;
}

/*
 * How many sockets of this process listen on the IPv4 TCP port of @a
 * (from /proc/self/net/tcp and /proc/self/fd): whether a listener is
 * closed, asked without connecting to a port that may have been given
 * to someone else since.
 */
static inline int pw_test_listening(const struct pw_net_addr *a)
{
	static unsigned long mine[4096];
	int nmine = 0, found = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[64], line[512];

	cr_assert_not_null(d);
	while ((e = readdir(d)) && nmine < 4096) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		unsigned long ino;
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (sscanf(link, "socket:[%lu]", &ino) == 1)
			mine[nmine++] = ino;
	}
	closedir(d);
	FILE *f = fopen("/proc/self/net/tcp", "r");
	cr_assert_not_null(f);
	unsigned port = ntohs(a->u.in4.sin_port);
	while (fgets(line, sizeof(line), f)) {
		unsigned lport, st;
		unsigned long ino;
		if (sscanf(line,
			   " %*u: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x "
			   "%*u %*u %lu",
			   &lport, &st, &ino) == 3 &&
		    lport == port && st == 0x0a /* LISTEN */ &&
		    pw_test_inode_in(ino, mine, nmine))
			found++;
	}
	fclose(f);
	return found;
}

/* True once the listener @lfd's accept queue is full, so that the
 * kernel drops new SYNs to it (for a listener, TCP_INFO's unacked is the
 * queue's length and sacked its limit; full means longer than that). */
static inline bool pw_test_accept_queue_full(int lfd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	cr_assert_eq(getsockopt(lfd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	return ti.tcpi_unacked > ti.tcpi_sacked;
}

/*
 * A listener on *@a with backlog 0 whose accept queue is full drops SYNs,
 * so a connect to it hangs. Returns the listener; the connections that
 * fill its queue go to @fill (room for 16), their number to *@nfill.
 * Each connect is followed by a wait for the event that decides: the
 * connect completes (the queue had room) or the listener reports its
 * queue full.
 */
static inline int pw_test_blackhole(struct pw_net_addr *a, int *fill,
				    int *nfill)
{
	int lfd = pw_test_listen_any(a, 0);
	*nfill = 0;
	while (!pw_test_accept_queue_full(lfd)) {
		cr_assert_lt(*nfill, 16, "the backlog never filled");
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		cr_assert_geq(fd, 0);
		fill[(*nfill)++] = fd;
		if (connect(fd, &a->u.sa, a->len) == 0)
			continue;
		cr_assert_eq(errno, EINPROGRESS);
		struct pollfd pf = { fd, POLLOUT, 0 };
		PW_TEST_WAIT_UNTIL(poll(&pf, 1, 0) == 1 ||
					   pw_test_accept_queue_full(lfd),
				   PW_TEST_WAIT_SECS,
				   "connect %d neither completed nor filled "
				   "the accept queue",
				   *nfill);
	}
	return lfd;
}

/* Close the blackhole @lfd and the @nfill connections of @fill. */
static inline void pw_test_blackhole_close(int lfd, const int *fill, int nfill)
{
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(lfd);
}

/*
 * In a forked scenario (pw_test_run_child()), where Criterion's asserts
 * do not reach the runner: fail the scenario, naming the line.
 */
#define EXPECT(c)                                                       \
	do {                                                            \
		if (!(c)) {                                             \
			fprintf(stderr, "line %d: %s\n", __LINE__, #c); \
			return 1;                                       \
		}                                                       \
	} while (0)

/* Run @fn in a child process of its own and return its wait status. */
static inline int pw_test_run_child(int (*fn)(void))
{
	fflush(NULL);
	pid_t pid = pw_test_fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn());
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

/* Run the scenario @fn in a child (a test of its own process's
 * descriptors or limits) and expect it to exit with status 0. */
static inline void pw_test_scenario(int (*fn)(void))
{
	int st = pw_test_run_child(fn);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the scenario failed (status %#x; see stderr)", st);
}

/* Lower the soft descriptor limit to @cur; the old limits go to *@old.
 * 0 on success. */
static inline int pw_test_nofile_lower(struct rlimit *old, rlim_t cur)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, old))
		return -1;
	lim.rlim_cur = cur;
	lim.rlim_max = old->rlim_max;
	return setrlimit(RLIMIT_NOFILE, &lim);
}

/*
 * Open @n unconnected TCP sockets into @cfd, then take every descriptor
 * left (at most @max, into @hog). Returns how many were taken, or -1 if
 * a socket failed, more than @max were free, or the table did not end
 * with EMFILE.
 */
static inline int pw_test_fds_exhaust(int *cfd, int n, int *hog, int max)
{
	int nhog = 0;

	for (int i = 0; i < n; i++) {
		cfd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (cfd[i] < 0) {
			fprintf(stderr, "socket %d: %s\n", i, strerror(errno));
			return -1;
		}
	}
	for (;;) {
		int fd = dup(0);
		if (fd < 0)
			break;
		if (nhog >= max) {
			fprintf(stderr, "more than %d descriptors free\n", max);
			return -1;
		}
		hog[nhog++] = fd;
	}
	if (errno != EMFILE) {
		fprintf(stderr, "dup: %s\n", strerror(errno));
		return -1;
	}
	return nhog;
}

/* Give back the @nhog descriptors of @hog and the limits *@old. 0 on
 * success. */
static inline int pw_test_fds_restore(int *hog, int nhog,
				      const struct rlimit *old)
{
	while (nhog)
		close(hog[--nhog]);
	return setrlimit(RLIMIT_NOFILE, old);
}

#endif /* PW_TESTS_NET_FIXTURES_H */
