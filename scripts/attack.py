#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""attack.py - hostile clients for `pinwheel http` and `pinwheel proxy`.

One process, one epoll loop, every socket non-blocking; the modes combine
freely and run until --duration or SIGINT/SIGTERM, then a summary per mode
goes to stdout. Every count takes an optional @ADDR (the mode's target;
default --target).

  --nonreaders N      connect with a small SO_RCVBUF (--rcvbuf, set before
                      connect), pipeline GETs while the socket takes them,
                      never read.
  --slowloris N       send a request head one byte every --interval seconds,
                      never finishing it; read what the server answers
                      (408s and other statuses are counted) and reconnect
                      when it closes.
  --stalled-uploaders N
                      (through a proxy) send bulk bytes toward an upstream
                      that never reads, never read.
  --stalled-downloaders N
                      (through a proxy) be sent bulk bytes by an upstream
                      that writes endlessly, never read.
  --idle N            send one GET, read its answer, then stay idle
                      (keep-alive memory per connection).
  --sink-listen ADDR  run the upstream that never reads.
  --source-listen ADDR
                      run the upstream that writes endlessly.

Placing stalled clients. A proxy picks the upstream, not the client; so
with --sink-listen (uploaders) or --source-listen (downloaders) each such
client first sends a tag, "PWATTACK <id>\\r\\n\\r\\n", and waits. The sink
or source reads the tag (and, the sink, nothing after it) and tells the
client in-process where it landed; a client that lands on the wrong
server, or on an upstream of the proxy that is neither (an HTTP server
answers the tag with 400), closes and connects again. So the proxy may
have the good upstream first and the sink and the source after it, used
round robin: the clients sort themselves. Stalled clients send their
bulk bytes (and the source starts writing) only once every client is in
place, so that the tags still pass a proxy that is not stalled yet.
With --close-listeners the sink and the source then close their
listening sockets (keeping the connections they have): a proxy's later
connections that it sends to them are refused and fail over to its next
upstream, the good one. Without the matching server a stalled client
sends no tag.

A line "attack: ready ..." goes to stdout once every client is in place
(connected, first bytes sent; idle clients answered; stalled clients
placed) and the stalled ones have started. Closed clients connect again
after --reconnect-delay, whatever the mode, except placed stalled
clients after --close-listeners (they could not be placed again).
RLIMIT_NOFILE is raised to the hard limit at start.

Addresses: A.B.C.D:PORT, [IPv6]:PORT or unix:/path.
"""
import argparse
import errno
import heapq
import os
import random
import resource
import select
import signal
import socket
import sys
import time

REQ = b"GET / HTTP/1.1\r\nHost: attack\r\n\r\n"
# Pipelined GETs, written again and again from where the last send ended.
BATCH = REQ * (65536 // len(REQ))
# The slowloris head: a request line and a header, then header bytes that
# never end the head (no empty line ever comes).
LORIS_HEAD = b"GET / HTTP/1.1\r\nHost: attack\r\n"
LORIS_TAIL = b"X-a: b\r\n"

EP_IN, EP_OUT = select.EPOLLIN, select.EPOLLOUT
EP_RDHUP = select.EPOLLRDHUP
EP_BAD = select.EPOLLERR | select.EPOLLHUP

MODES = ("nonreaders", "slowloris", "stalled-uploaders",
         "stalled-downloaders", "idle")
STATS = ("opened", "connect_errors", "closed_by_server", "resets",
         "status_408", "status_other", "misplaced", "bytes_sent",
         "bytes_received")


def parse_addr(text):
    """Return (family, sockaddr) for A.B.C.D:PORT, [IPv6]:PORT, unix:/path."""
    if text.startswith("unix:"):
        return socket.AF_UNIX, text[5:]
    if text.startswith("["):
        host, _, port = text[1:].partition("]:")
        return socket.AF_INET6, (host, int(port))
    host, _, port = text.rpartition(":")
    if not host or not port:
        raise argparse.ArgumentTypeError("bad address: " + text)
    return socket.AF_INET, (host, int(port))


def parse_count(text):
    """N or N@ADDR: return (N, address text or None)."""
    n, _, addr = text.partition("@")
    try:
        count = int(n, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("bad count: " + text)
    if count < 0:
        raise argparse.ArgumentTypeError("negative count: " + text)
    return count, addr or None


def parse_duration(text):
    """Seconds from 10, 10s, 500ms, 2m; 0 means until a signal."""
    units = (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0),
             ("h", 3600.0))
    for suffix, scale in units:
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * scale
    return float(text)


class Client:
    """One hostile connection; its mode decides what it does."""

    def __init__(self, mode, ident, addr):
        self.mode, self.ident, self.addr = mode, ident, addr
        self.sock = None
        self.state = "down"   # down, connecting, placing, placed, up
        self.off = 0          # where the next bulk send starts in BATCH
        self.want_out = False
        self.ready = False    # counted once in the ready total
        self.place = None     # "sink" or "source" for stalled clients
        self.peer = None      # its server-side socket at the sink/source
        self.head_off = 0     # slowloris: bytes of the head sent
        self.inbuf = b""


class Attack:
    """The loop: clients, the sink and source servers, timers, stats."""

    def __init__(self, args):
        self.args = args
        self.ep = select.epoll()
        self.fds = {}          # fd -> handler callable(events)
        self.timers = []       # heap of (due, seq, callable)
        self.seq = 0
        self.stats = {m: dict.fromkeys(STATS, 0) for m in MODES}
        self.clients = []
        self.tags = {}         # ident -> Client, for the sink and source
        self.sink = self.source = None
        self.stop = False
        self.nready = 0
        self.announced = False
        self.go = False        # stalled clients start sending
        self.closed_listeners = False
        self.view = memoryview(BATCH)

    # --- plumbing -------------------------------------------------------
    def at(self, delay, fn):
        self.seq += 1
        heapq.heappush(self.timers, (time.monotonic() + delay, self.seq, fn))

    def watch(self, sock, events, handler):
        fd = sock.fileno()
        if fd in self.fds:
            self.ep.modify(fd, events)
        else:
            self.ep.register(fd, events)
        self.fds[fd] = handler

    def forget(self, sock):
        fd = sock.fileno()
        if fd in self.fds:
            del self.fds[fd]
            self.ep.unregister(fd)

    def listen(self, text, on_accept):
        fam, sa = parse_addr(text)
        if fam == socket.AF_UNIX and os.path.exists(sa):
            os.unlink(sa)
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(sa)
        ls.listen(4096)
        ls.setblocking(False)
        self.watch(ls, EP_IN, lambda ev: self.accept_all(ls, on_accept))
        return ls

    def accept_all(self, ls, on_accept):
        while True:
            try:
                s, _ = ls.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                print("attack: accept: %s" % e, file=sys.stderr)
                return
            s.setblocking(False)
            on_accept(s)

    # --- clients --------------------------------------------------------
    def connect(self, c):
        st = self.stats[c.mode]
        fam, sa = c.addr
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setblocking(False)
        if c.mode == "nonreaders":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                         self.args.rcvbuf)
        c.sock, c.state, c.off, c.want_out = s, "connecting", 0, False
        c.head_off, c.inbuf, c.place = 0, b"", None
        try:
            s.connect(sa)
        except (BlockingIOError, InterruptedError):
            # A unix socket says EAGAIN when its backlog is full.
            if fam == socket.AF_UNIX:
                st["connect_errors"] += 1
                self.drop(c, reconnect=True)
                return
        except OSError:
            st["connect_errors"] += 1
            self.drop(c, reconnect=True)
            return
        self.watch(s, EP_OUT | EP_RDHUP, lambda ev: self.on_client(c, ev))

    def drop(self, c, reconnect):
        """Close the client (and its sink/source peer); maybe reconnect."""
        if c.sock is not None:
            self.forget(c.sock)
            c.sock.close()
            c.sock = None
        self.drop_peer(c)
        c.state = "down"
        if self.closed_listeners and self.placed_by(c):
            return
        if reconnect and not self.stop:
            self.at(self.args.reconnect_delay, lambda: self.connect(c))

    def drop_peer(self, c):
        if c.peer is not None:
            self.forget(c.peer)
            c.peer.close()
            c.peer = None
        self.tags.pop(c.ident, None)

    def sock_error(self, c):
        return c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)

    def on_client(self, c, ev):
        st = self.stats[c.mode]
        if c.state == "connecting":
            err = self.sock_error(c)
            if err or (ev & EP_BAD and not ev & EP_OUT):
                st["connect_errors"] += 1
                self.drop(c, reconnect=True)
                return
            st["opened"] += 1
            self.connected(c)
            return
        if ev & EP_BAD:
            err = self.sock_error(c)
            st["resets" if err else "closed_by_server"] += 1
            self.drop(c, reconnect=True)
            return
        if ev & EP_IN:
            self.client_read(c)
            if c.sock is None:
                return
        elif ev & EP_RDHUP:
            st["closed_by_server"] += 1
            self.drop(c, reconnect=True)
            return
        if ev & EP_OUT and c.want_out:
            self.pump(c)

    def connected(self, c):
        """A fresh connection: start the mode's first step."""
        m = c.mode
        if m == "nonreaders":
            c.state = "up"
            self.mark_ready(c)
            self.pump(c)
        elif m == "slowloris":
            c.state = "up"
            self.rearm(c)
            self.loris_send(c, len(LORIS_HEAD))
            self.mark_ready(c)
        elif m == "idle":
            c.state = "placing"
            self.rearm(c)
            self.send(c, REQ)
        elif self.placed_by(c):
            c.state = "placing"
            self.tags[c.ident] = c
            self.rearm(c)
            self.send(c, b"PWATTACK %d\r\n\r\n" % c.ident)
        else:
            self.hold(c)

    def placed_by(self, c):
        """True when an in-process sink/source confirms where c lands."""
        if c.mode not in ("stalled-uploaders", "stalled-downloaders"):
            return False
        if c.mode == "stalled-uploaders":
            return self.sink is not None
        return self.source is not None

    def hold(self, c):
        """A stalled client in place: it starts with the others (start())."""
        c.state = "placed"
        self.rearm(c)
        self.mark_ready(c)
        if self.go:
            self.start_stalled(c)

    def start_stalled(self, c):
        c.state = "up"
        if c.mode == "stalled-uploaders":
            self.pump(c)
            return
        if c.peer is not None:
            self.watch(c.peer, EP_OUT, lambda ev: self.source_pump(c))
        self.rearm(c)

    def rearm(self, c):
        """Events for c's socket from its mode and state."""
        ev = EP_RDHUP
        if c.mode in ("slowloris", "idle") or c.state == "placing":
            ev |= EP_IN
        if c.want_out:
            ev |= EP_OUT
        self.watch(c.sock, ev, lambda e: self.on_client(c, e))

    def send(self, c, data):
        """One send of small data; True if the socket is still open."""
        st = self.stats[c.mode]
        try:
            n = c.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            st["resets"] += 1
            self.drop(c, reconnect=True)
            return False
        st["bytes_sent"] += n
        return True

    def pump(self, c):
        """Bulk: write BATCH round and round while the socket takes it."""
        st = self.stats[c.mode]
        while True:
            try:
                n = c.sock.send(self.view[c.off:])
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                st["resets"] += 1
                self.drop(c, reconnect=True)
                return
            st["bytes_sent"] += n
            c.off = (c.off + n) % len(BATCH)
        if not c.want_out:
            c.want_out = True
            self.rearm(c)

    def client_read(self, c):
        st = self.stats[c.mode]
        try:
            data = c.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            st["resets"] += 1
            self.drop(c, reconnect=True)
            return
        if not data:
            if c.state == "placing" and c.mode != "idle":
                st["misplaced"] += 1
            else:
                st["closed_by_server"] += 1
            self.drop(c, reconnect=True)
            return
        st["bytes_received"] += len(data)
        if c.state == "placing" and c.mode not in ("idle", "slowloris"):
            # Only an upstream that is not ours answers the tag.
            st["misplaced"] += 1
            self.drop(c, reconnect=True)
            return
        c.inbuf += data
        self.count_statuses(c)
        if c.mode == "idle" and c.state == "placing" and self.answered(c):
            c.state = "up"
            self.rearm(c)
            self.mark_ready(c)

    def count_statuses(self, c):
        """Count each status line that begins in c.inbuf; keep the tail."""
        st = self.stats[c.mode]
        buf = c.inbuf
        start = 0
        while True:
            i = buf.find(b"HTTP/1.1 ", start)
            if i < 0 or len(buf) < i + 12:
                break
            code = buf[i + 9:i + 12]
            st["status_408" if code == b"408" else "status_other"] += 1
            start = i + 12
        if c.mode != "idle":
            c.inbuf = buf[max(start, len(buf) - 11):]

    def answered(self, c):
        """True once the head and Content-Length body of one answer came."""
        head, sep, body = c.inbuf.partition(b"\r\n\r\n")
        if not sep:
            return False
        length = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip() or 0)
        if len(body) < length:
            return False
        c.inbuf = b""
        return True

    def loris_send(self, c, n=1):
        """Send the next n head bytes; schedule the next byte."""
        if c.sock is None or c.mode != "slowloris":
            return
        if c.head_off < len(LORIS_HEAD):
            data = LORIS_HEAD[c.head_off:c.head_off + n]
        else:
            i = (c.head_off - len(LORIS_HEAD)) % len(LORIS_TAIL)
            data = LORIS_TAIL[i:i + 1]
        if not self.send(c, data):
            return
        c.head_off += len(data)
        sock = c.sock
        jitter = random.uniform(0.5, 1.5) * self.args.interval
        self.at(jitter, lambda: c.sock is sock and self.loris_send(c))

    def mark_ready(self, c):
        if not c.ready:
            c.ready = True
            self.nready += 1
            if self.nready == len(self.clients):
                self.at(0, self.start)

    # --- the sink and the source ------------------------------------------
    def on_upstream_accept(self, s, kind):
        buf = [b""]
        self.watch(s, EP_IN, lambda ev: self.read_tag(s, kind, buf))

    def read_tag(self, s, kind, buf):
        """Read exactly the tag, byte runs up to its end, then place it."""
        try:
            data = s.recv(64 - len(buf[0]), socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        end = data.find(b"\r\n\r\n")
        take = len(data) if end < 0 else end + 4
        if take:
            data = s.recv(take)
            buf[0] += data
        if not data or (end < 0 and len(buf[0]) >= 60):
            self.forget(s)
            s.close()
            return
        if end < 0:
            return
        tag = buf[0].split()
        c = None
        if len(tag) == 2 and tag[0] == b"PWATTACK" and tag[1].isdigit():
            c = self.tags.get(int(tag[1]))
        if c is None or c.sock is None:
            self.forget(s)
            s.close()
            return
        self.placed(c, s, kind)

    def placed(self, c, s, kind):
        """Client c landed on the sink or the source (server side s)."""
        c.peer, c.place = s, kind
        want = {"stalled-uploaders": "sink",
                "stalled-downloaders": "source"}.get(c.mode)
        if kind != want:
            self.stats[c.mode]["misplaced"] += 1
            self.drop(c, reconnect=True)
            return
        # The sink never reads again: only hang-ups are watched.
        self.watch(s, EP_RDHUP, lambda ev: self.drop_peer(c))
        self.hold(c)

    def source_pump(self, c):
        s = c.peer
        while s is not None:
            try:
                s.send(self.view)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.drop_peer(c)
                return

    # --- readiness -----------------------------------------------------
    def start(self):
        """Every client is in place: the stalled ones start; ready."""
        if self.announced or self.stop:
            return
        self.announced = True
        self.go = True
        for c in self.clients:
            if c.state == "placed":
                self.start_stalled(c)
        if self.args.close_listeners:
            for ls in (self.sink, self.source):
                if ls is not None:
                    self.forget(ls)
                    ls.close()
            self.closed_listeners = True
        print("attack: ready: %d clients in place" % len(self.clients),
              flush=True)

    # --- the loop -------------------------------------------------------
    def run(self):
        a = self.args
        if a.sink_listen:
            self.sink = self.listen(
                a.sink_listen, lambda s: self.on_upstream_accept(s, "sink"))
        if a.source_listen:
            self.source = self.listen(
                a.source_listen,
                lambda s: self.on_upstream_accept(s, "source"))
        ident = 0
        for m in MODES:
            count, addr = getattr(a, m.replace("-", "_"))
            for _ in range(count):
                ident += 1
                self.clients.append(Client(m, ident, addr))
        # Connects are spread so that the listen backlog never overflows.
        for i, c in enumerate(self.clients):
            self.at(i / a.connect_rate, lambda c=c: self.connect(c))
        if not self.clients:
            self.at(0, self.start)
        t_end = time.monotonic() + a.duration if a.duration else None
        while not self.stop:
            now = time.monotonic()
            if t_end is not None and now >= t_end:
                break
            while self.timers and self.timers[0][0] <= now:
                _, _, fn = heapq.heappop(self.timers)
                fn()
            wait = 0.25
            if self.timers:
                wait = min(wait, max(0.0, self.timers[0][0] - now))
            for fd, ev in self.ep.poll(wait):
                h = self.fds.get(fd)
                if h is not None:
                    h(ev)

    def summary(self):
        print("attack: summary (opened, connect errors, closed by the "
              "server, resets, 408s, other statuses, misplaced, MiB sent)")
        for m in MODES:
            st = self.stats[m]
            count = sum(1 for c in self.clients if c.mode == m)
            if not count:
                continue
            print("  %-20s %5d clients: opened %d, connect errors %d, "
                  "closed by server %d, resets %d, 408s %d, "
                  "other statuses %d, misplaced %d, %.1f MiB sent" % (
                      m, count, st["opened"], st["connect_errors"],
                      st["closed_by_server"], st["resets"],
                      st["status_408"], st["status_other"],
                      st["misplaced"], st["bytes_sent"] / 2 ** 20))
        sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--target", help="default target of every mode")
    for m in MODES:
        p.add_argument("--" + m, type=parse_count, default=(0, None),
                       metavar="N[@ADDR]")
    p.add_argument("--sink-listen", metavar="ADDR")
    p.add_argument("--source-listen", metavar="ADDR")
    p.add_argument("--close-listeners", action="store_true",
                   help="once every client is in place, the sink and the\n"
                   "source stop listening (see above)")
    p.add_argument("--duration", type=parse_duration, default=0.0,
                   help="run this long (10s, 2m); 0: until a signal")
    p.add_argument("--rcvbuf", type=int, default=4096,
                   help="non-readers' SO_RCVBUF (4096)")
    p.add_argument("--interval", type=float, default=3.0,
                   help="slowloris: seconds between bytes, +-50%% (3)")
    p.add_argument("--reconnect-delay", type=float, default=0.1,
                   help="seconds before a closed client connects again")
    p.add_argument("--connect-rate", type=float, default=5000.0,
                   help="new connections per second at start (5000)")
    a = p.parse_args()
    for m in MODES:
        count, addr = getattr(a, m.replace("-", "_"))
        addr = addr or a.target
        if count and not addr:
            p.error("--%s needs @ADDR or --target" % m)
        setattr(a, m.replace("-", "_"),
                (count, parse_addr(addr) if count else None))

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    att = Attack(a)

    def on_signal(signum, frame):
        att.stop = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        att.run()
    finally:
        att.summary()


if __name__ == "__main__":
    main()
