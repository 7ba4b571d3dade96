/* SPDX-License-Identifier: MIT */
/*
 * takeover.c - hands the listening sockets from one generation of a
 * server to the next over the Unix socket of `--takeover PATH`
 * (takeover.h). Its one job is that exchange: the new side on the main
 * thread at start, the old side on a thread of its own that serves one
 * client at a time, never blocking a shard.
 *
 * The exchange, each message one struct tko_msg on a stream socket:
 *
 *	new -> old   HELLO    (the command's name)
 *	old -> new   SOCKETS  (count, address, name) + the fds, SCM_RIGHTS
 *	             or REFUSED (why, as text)
 *	new -> old   READY    once it serves on them
 *
 * The old process stops only on READY, by raising SIGTERM: the driver
 * then drains exactly as on a signal. A new process that dies or hangs
 * before READY (PW_TKO_READY_NS) leaves the old one serving; it says so
 * on stderr. A client that sends anything else is dropped, with a line
 * on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "apps/takeover.h"

#define TKO_MAGIC   "pinwheel"
#define TKO_VERSION 1u
#define TKO_MAX_FDS 253 /* sockets one hand-over carries (SCM_MAX_FD) */

enum { TKO_HELLO = 1, TKO_SOCKETS, TKO_REFUSED, TKO_READY };

struct tko_msg {
	char magic[8]; /* TKO_MAGIC, no NUL */
	uint32_t version, kind, count, addr_len;
	struct sockaddr_storage addr;
	char cmd[32];
	char text[128];
};

struct pw_tko {
	const char *cmd, *path;
	struct pw_net_listener *l; /* the old side's sockets */
	struct pw_net_addr addr;   /* their address */
	int c;			   /* new side: the link to the old one */
	int lfd;		   /* the socket on PATH */
	int wake[2];		   /* a byte ends the thread */
	int fds[TKO_MAX_FDS];	   /* new side: what came */
	ino_t inos[TKO_MAX_FDS];   /* their sockets' inodes */
	unsigned nfds;
	char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
	ino_t ino; /* PATH's inode once ours */
	bool thread, stopping, handed;
	pthread_mutex_t lock; /* guards stopping, handed and l's use */
	pthread_t tid;
};

/* ---- messages ------------------------------------------------------- */

static uint64_t now_ns(void)
{
	return pw_cli_mono_ns();
}

/* Wait until @fd is readable, @wake (if >= 0) says stop, or @ns pass
 * (UINT64_MAX: no limit). Return: 0 readable; -ETIMEDOUT; -ECANCELED for @wake. */
static int wait_in(int fd, int wake, uint64_t ns)
{
	bool forever = ns == UINT64_MAX;
	uint64_t end = forever ? 0 : now_ns() + ns;

	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = wake, .events = POLLIN } };
		uint64_t now = now_ns();
		int ms = -1;
		if (!forever && now >= end)
			return -ETIMEDOUT;
		if (!forever)
			ms = (int)((end - now) / PW_NSEC_PER_MSEC) + 1;
		int r = poll(p, wake >= 0 ? 2 : 1, ms);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && wake >= 0 && p[1].revents)
			return -ECANCELED;
		if (r > 0 && p[0].revents)
			return 0;
	}
}

/*
 * Read one message from @fd within @ns in all, however it trickles in
 * (fds that come with it, up to
 * @cap, go to @fds and their number to *@nfds). Return: 0; -EPROTO for
 * an early end or a bad header; -ETIMEDOUT, -ECANCELED or -errno.
 */
static int msg_read(int fd, int wake, uint64_t ns, struct tko_msg *m, int *fds,
		    unsigned cap, unsigned *nfds)
{
	union {
		char buf[CMSG_SPACE(TKO_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	uint64_t end = now_ns() + ns;
	size_t got = 0;

	if (nfds)
		*nfds = 0;
	memset(m, 0, sizeof(*m));
	while (got < sizeof(*m)) {
		struct iovec iov = { (char *)m + got, sizeof(*m) - got };
		struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };
		uint64_t now = now_ns();
		int err = now < end ? wait_in(fd, wake, end - now) : -ETIMEDOUT;
		if (err)
			return err;
		if (!got) {
			h.msg_control = u.buf;
			h.msg_controllen = sizeof(u.buf);
		}
		ssize_t n = recvmsg(fd, &h, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPROTO;
		for (struct cmsghdr *c = got ? NULL : CMSG_FIRSTHDR(&h); c;
		     c = CMSG_NXTHDR(&h, c)) {
			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) /
						sizeof(int));
			const int *in = (const int *)(void *)CMSG_DATA(c);
			for (unsigned i = 0; i < k; i++) {
				if (nfds && *nfds < cap)
					fds[(*nfds)++] = in[i];
				else
					close(in[i]);
			}
		}
		got += (size_t)n;
	}
	if (memcmp(m->magic, TKO_MAGIC, sizeof(m->magic)) ||
	    m->version != TKO_VERSION)
		return -EPROTO;
	m->cmd[sizeof(m->cmd) - 1] = '\0';
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}

/* A message of @kind from this command. */
static void msg_init(struct tko_msg *m, uint32_t kind, const char *cmd)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->magic, TKO_MAGIC, sizeof(m->magic));
	m->version = TKO_VERSION;
	m->kind = kind;
	snprintf(m->cmd, sizeof(m->cmd), "%s", cmd);
}

/* Send @m with @n fds attached. Return: 0 or -errno. */
static int msg_send(int fd, const struct tko_msg *m, const int *fds, unsigned n)
{
	union {
		char buf[CMSG_SPACE(TKO_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr h = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (n) {
		memset(u.buf, 0, sizeof(u.buf));
		h.msg_control = u.buf;
		h.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	/* One message of a few hundred bytes: the buffer takes it whole. */
	ssize_t r = sendmsg(fd, &h, MSG_NOSIGNAL);
	if (r < 0)
		return -errno;
	return (size_t)r == sizeof(*m) ? 0 : -EPROTO;
}

/* ---- the old side: the thread on PATH ------------------------------- */

/* The pid at the other end of @c, 0 if unknown. */
static int peer_pid(int c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	return getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) ? 0 :
								   (int)cr.pid;
}

/* Answer @c's request with REFUSED and @why, told on stderr too. */
static void refuse(struct pw_tko *t, int c, int pid, const char *why)
{
	struct tko_msg m;

	msg_init(&m, TKO_REFUSED, t->cmd);
	snprintf(m.text, sizeof(m.text), "%s", why);
	(void)msg_send(c, &m, NULL, 0);
	fprintf(stderr, "%s: --takeover: refused pid %d: %s\n", t->cmd, pid,
		why);
}

/* Send the sockets unless the process stops. Return: 0 sent; 1 refused;
 * -errno. */
static int send_sockets(struct pw_tko *t, int c, int pid)
{
	int fds[TKO_MAX_FDS];
	struct tko_msg m;
	int n, err;

	pthread_mutex_lock(&t->lock);
	if (t->stopping) {
		pthread_mutex_unlock(&t->lock);
		refuse(t, c, pid, "the process is stopping");
		return 1;
	}
	n = pw_net_listener_fds(t->l, fds, TKO_MAX_FDS);
	if (n > TKO_MAX_FDS) {
		pthread_mutex_unlock(&t->lock);
		refuse(t, c, pid, "more sockets than one hand-over carries");
		return 1;
	}
	msg_init(&m, TKO_SOCKETS, t->cmd);
	m.count = n > 0 ? (uint32_t)n : 0;
	m.addr_len = t->addr.len;
	memcpy(&m.addr, &t->addr.u, t->addr.len);
	/* Once sent, the kernel holds the sockets for the receiver: the
	 * drain may close ours from then on. */
	err = m.count ? msg_send(c, &m, fds, m.count) : -EINVAL;
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* The old process's part once READY came: stop as on SIGTERM. */
static void handed(struct pw_tko *t, int pid)
{
	pthread_mutex_lock(&t->lock);
	t->handed = true;
	if (!t->stopping) {
		fprintf(stderr,
			"%s: handed the listening sockets to pid %d; "
			"draining\n",
			t->cmd, pid);
		kill(getpid(), SIGTERM);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Serve one client @c. Return: true once the sockets were handed over. */
static bool serve_one(struct pw_tko *t, int c)
{
	int pid = peer_pid(c);
	struct tko_msg m;
	int err = msg_read(c, t->wake[0], PW_TKO_MSG_NS, &m, NULL, 0, NULL);

	if (!err && m.kind != TKO_HELLO)
		err = -EPROTO;
	if (err) {
		if (err != -ECANCELED)
			fprintf(stderr,
				"%s: --takeover: dropped a client on %s "
				"(pid %d): %s\n",
				t->cmd, t->path, pid,
				err == -EPROTO ? "not a takeover request" :
						 strerror(-err));
		return false;
	}
	if (strcmp(m.cmd, t->cmd)) {
		char why[96];
		snprintf(why, sizeof(why), "this process runs %s, not %.32s",
			 t->cmd, m.cmd);
		refuse(t, c, pid, why);
		return false;
	}
	err = send_sockets(t, c, pid);
	if (err) {
		if (err < 0)
			fprintf(stderr,
				"%s: --takeover: sending to pid %d: %s\n",
				t->cmd, pid, strerror(-err));
		return false;
	}
	err = msg_read(c, t->wake[0], PW_TKO_READY_NS, &m, NULL, 0, NULL);
	if (!err && m.kind == TKO_READY) {
		handed(t, pid);
		return true;
	}
	if (err != -ECANCELED)
		fprintf(stderr,
			"%s: --takeover: pid %d ended before it was ready (%s); "
			"still serving\n",
			t->cmd, pid,
			err == -EPROTO || !err ? "no ready message" :
						 strerror(-err));
	return false;
}

/* The thread: one client at a time until a hand-over or the end. */
static void *tko_thread(void *arg)
{
	struct pw_tko *t = arg;

	for (;;) {
		if (wait_in(t->lfd, t->wake[0], UINT64_MAX))
			return NULL;
		int c = accept4(t->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		bool done = serve_one(t, c);
		close(c);
		if (done)
			return NULL;
	}
}

/* ---- the new side --------------------------------------------------- */

/* PATH as a Unix address in @sa; its length, 0 when too long. */
static socklen_t path_addr(const char *path, struct sockaddr_un *sa)
{
	size_t n = strlen(path);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!n || n >= sizeof(sa->sun_path))
		return 0;
	memcpy(sa->sun_path, path, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* Whether @got is the address @want asks for: the same host, and the
 * same port unless @want's is 0 (any). */
static bool addr_fits(const struct pw_net_addr *want,
		      const struct pw_net_addr *got)
{
	int family = want->u.sa.sa_family;

	if (family != got->u.sa.sa_family)
		return false;
	if (family == AF_INET)
		return want->u.in4.sin_addr.s_addr ==
			       got->u.in4.sin_addr.s_addr &&
		       (!want->u.in4.sin_port ||
			want->u.in4.sin_port == got->u.in4.sin_port);
	if (family == AF_INET6)
		return !memcmp(&want->u.in6.sin6_addr, &got->u.in6.sin6_addr,
			       sizeof(got->u.in6.sin6_addr)) &&
		       (!want->u.in6.sin6_port ||
			want->u.in6.sin6_port == got->u.in6.sin6_port);
	return want->len == got->len && !memcmp(&want->u, &got->u, want->len);
}

/* The address of the sockets that came, in @a; false when malformed. */
static bool msg_addr(const struct tko_msg *m, struct pw_net_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (!m->addr_len || m->addr_len > sizeof(a->u))
		return false;
	memcpy(&a->u, &m->addr, m->addr_len);
	a->len = m->addr_len;
	return true;
}

/* Whether the answer @m and its @n sockets fit this command. Return: 0,
 * or 1 after telling why. */
static int check_answer(struct pw_drv *d, const struct tko_msg *m, unsigned n)
{
	const char *p = d->takeover;
	char got[PW_NET_ADDR_STRLEN], want[PW_NET_ADDR_STRLEN];
	struct pw_net_addr a;

	if (m->kind == TKO_REFUSED)
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: the running process "
				   "refused: %s",
				   p, m->text);
	if (m->kind != TKO_SOCKETS || !msg_addr(m, &a))
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: not a takeover answer", p);
	if (strcmp(m->cmd, d->cmd->name))
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: the process there runs %s, "
				   "not %s",
				   p, m->cmd, d->cmd->name);
	if (!n || n != m->count)
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: %u sockets announced, %u "
				   "came",
				   p, m->count, n);
	if (d->listen && !addr_fits(d->listen, &a)) {
		pw_net_addr_format(&a, got, sizeof(got));
		pw_net_addr_format(d->listen, want, sizeof(want));
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: the running process serves "
				   "%s, not %s",
				   p, got, want);
	}
	if (n > d->cfg.shards)
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: the running process has %u "
				   "sockets, one per shard: start this one "
				   "with --shards %u or more",
				   p, n, n);
	if (n > 1 && d->cfg.sched == PW_SCHED_STEAL)
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: the running process has %u "
				   "sockets, one per shard; the stealing "
				   "scheduler accepts from one: run both with "
				   "the same scheduler",
				   p, n);
	return 0;
}

/* Ask the process on PATH (connected on t->c) for its sockets. Return:
 * 0 with them in t->fds; or 1 after telling why. */
static int ask(struct pw_drv *d, struct pw_tko *t)
{
	struct tko_msg m;
	int err;

	msg_init(&m, TKO_HELLO, t->cmd);
	err = msg_send(t->c, &m, NULL, 0);
	if (!err)
		err = msg_read(t->c, -1, PW_TKO_MSG_NS, &m, t->fds, TKO_MAX_FDS,
			       &t->nfds);
	if (err == -EPROTO)
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: no takeover answer from the "
				   "process there (another version, or not "
				   "pinwheel)",
				   t->path);
	if (err)
		return pw_cli_fail(&d->cli, 1, "--takeover %s: %s", t->path,
				   strerror(-err));
	return check_answer(d, &m, t->nfds);
}

int pw_tko_begin(struct pw_drv *d)
{
	struct sockaddr_un sa;
	socklen_t len = d->takeover ? path_addr(d->takeover, &sa) : 0;
	struct stat st;
	struct pw_tko *t;

	if (!d->takeover)
		return 0;
	/* Room for the ".PID" of the next socket's temporary name. */
	if (!len || len + 12 > sizeof(sa))
		return pw_cli_fail(&d->cli, 1, "--takeover %s: path too long",
				   d->takeover);
	if (!lstat(d->takeover, &st) && !S_ISSOCK(st.st_mode))
		return pw_cli_fail(&d->cli, 1,
				   "--takeover %s: exists and is not a socket; "
				   "not replaced",
				   d->takeover);
	t = calloc(1, sizeof(*t));
	if (!t)
		return pw_cli_fail(&d->cli, 1, "--takeover: %s",
				   strerror(ENOMEM));
	t->cmd = d->cmd->name;
	t->path = d->takeover;
	t->c = t->lfd = t->wake[0] = t->wake[1] = -1;
	pthread_mutex_init(&t->lock, NULL);
	d->tko = t;
	t->c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->c < 0 || connect(t->c, (struct sockaddr *)&sa, len)) {
		int err = errno;
		if (t->c >= 0)
			close(t->c);
		t->c = -1;
		if (err == ENOENT || err == ECONNREFUSED)
			return 0; /* nobody there: bind fresh */
		return pw_cli_fail(&d->cli, 1, "--takeover %s: %s", t->path,
				   strerror(err));
	}
	int err = ask(d, t);
	for (unsigned i = 0; i < t->nfds; i++)
		t->inos[i] = fstat(t->fds[i], &st) ? 0 : st.st_ino;
	if (!err) {
		d->adopt = t->fds;
		d->nadopt = t->nfds;
	}
	return err;
}

/* Listen on a temporary name next to PATH, mode 0600. Return: 0 or
 * -errno. */
static int bind_next(struct pw_tko *t)
{
	struct sockaddr_un sa;
	socklen_t len;

	snprintf(t->tmp, sizeof(t->tmp), "%s.%d", t->path, (int)getpid());
	len = path_addr(t->tmp, &sa);
	(void)unlink(t->tmp);
	/* Non-blocking: a client gone between poll and accept4 is EAGAIN. */
	t->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (t->lfd < 0)
		return -errno;
	if (!len || bind(t->lfd, (struct sockaddr *)&sa, len))
		return len ? -errno : -ENAMETOOLONG;
	if (chmod(t->tmp, 0600) || listen(t->lfd, 8))
		return -errno;
	return 0;
}

/* Put the socket at PATH, replacing a socket only. Return: 0 or -errno
 * (-EEXIST: PATH became a file of another kind). */
static int place(struct pw_tko *t)
{
	struct stat st;

	if (!lstat(t->path, &st) && !S_ISSOCK(st.st_mode))
		return -EEXIST;
	if (rename(t->tmp, t->path))
		return -errno;
	t->tmp[0] = '\0';
	if (!stat(t->path, &st))
		t->ino = st.st_ino;
	if (pipe2(t->wake, O_CLOEXEC))
		return -errno;
	if (pthread_create(&t->tid, NULL, tko_thread, t))
		return -EAGAIN;
	t->thread = true;
	return 0;
}

/* Tell the old process we serve; close the link. */
static void say_ready(struct pw_tko *t)
{
	struct tko_msg m;
	int err;

	msg_init(&m, TKO_READY, t->cmd);
	err = msg_send(t->c, &m, NULL, 0);
	if (err)
		fprintf(stderr, "%s: --takeover %s: telling ready: %s\n",
			t->cmd, t->path, strerror(-err));
	close(t->c);
	t->c = -1;
}

int pw_tko_ready(struct pw_drv *d)
{
	struct pw_tko *t = d->tko;
	int err;

	if (!t)
		return 0;
	t->nfds = 0; /* the listener owns what came */
	t->l = d->listener;
	if (!t->l || pw_net_listener_addr(t->l, &t->addr))
		return pw_cli_fail(&d->cli, 1, "--takeover: no listener");
	err = bind_next(t);
	if (err)
		return pw_cli_fail(&d->cli, 1, "--takeover %s: %s", t->path,
				   strerror(-err));
	if (t->c >= 0)
		say_ready(t);
	err = place(t);
	if (err)
		fprintf(stderr, "%s: --takeover %s: %s; serving without it\n",
			t->cmd, t->path,
			err == -EEXIST ? "became a file that is not a socket" :
					 strerror(-err));
	return 0;
}

void pw_tko_stopping(struct pw_drv *d)
{
	struct pw_tko *t = d->tko;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_mutex_unlock(&t->lock);
}

void pw_tko_end(struct pw_drv *d)
{
	struct pw_tko *t = d->tko;
	struct stat st;

	if (!t)
		return;
	if (t->thread) {
		(void)!write(t->wake[1], "x", 1);
		pthread_join(t->tid, NULL);
	}
	/* PATH is ours still unless a newer process put its socket there. */
	if (t->ino && !t->handed && !stat(t->path, &st) && st.st_ino == t->ino)
		unlink(t->path);
	if (t->tmp[0])
		unlink(t->tmp);
	/* Those a failed start did not close already (with the listener
	 * that took them): the same descriptor still names the socket. */
	for (unsigned i = 0; i < t->nfds; i++)
		if (!fstat(t->fds[i], &st) && st.st_ino == t->inos[i])
			close(t->fds[i]);
	int fds[] = { t->c, t->lfd, t->wake[0], t->wake[1] };
	for (unsigned i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pthread_mutex_destroy(&t->lock);
	free(t);
	d->tko = NULL;
}
