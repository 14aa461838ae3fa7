#!/usr/bin/env python3
"""A hostile HTTP client of the target's metrics listener (tests/test-ops-metrics-hostile.sh).

usage: http-hostile.py HOST:PORT MAX_CLIENTS TIMEOUT_S

Each scenario prints "ok: ..." or "FAIL: ..."; the exit status is the number of failures.
"""
import socket
import sys
import time

host, port = sys.argv[1].rsplit(":", 1)
port = int(port)
max_clients = int(sys.argv[2])
timeout_s = float(sys.argv[3])
failures = 0


def verdict(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures += 1


def conn():
    s = socket.create_connection((host, port), timeout=timeout_s + 10)
    return s


def read_all(s, limit=None):
    """Everything until the target closes; None if it did not within the socket's timeout."""
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
            if limit is not None and len(data) > limit:
                return data
    except ConnectionResetError:
        return data
    except socket.timeout:
        return None


def status_of(request):
    s = conn()
    s.sendall(request)
    reply = read_all(s)
    s.close()
    if not reply:
        return None
    return reply.split(b"\r\n", 1)[0].decode("latin-1")


def good_scrape():
    st = status_of(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    return st is not None and st.startswith("HTTP/1.1 200")


verdict(good_scrape(), "a plain GET /metrics gets 200")
for req, want, what in [
    (b"POST /metrics HTTP/1.1\r\n\r\n", "404", "POST /metrics"),
    (b"HEAD /metrics HTTP/1.1\r\n\r\n", "404", "HEAD /metrics"),
    (b"GET / HTTP/1.1\r\n\r\n", "404", "GET /"),
    (b"GET /metrics/../etc/passwd HTTP/1.1\r\n\r\n", "404", "GET /metrics/../etc/passwd"),
    (b"GET /metricsx HTTP/1.0\r\n\r\n", "404", "GET /metricsx"),
    (b"hello\r\n\r\n", "400", "a line that is not HTTP"),
    (b"GET /metrics SPDY/3\r\n\r\n", "400", "GET /metrics with a version that is not HTTP/1"),
    (b"\x00\xff\xfe\r\n\r\n", "400", "binary garbage"),
]:
    st = status_of(req)
    verdict(st is not None and st.split(" ")[1] == want, "%s gets %s (got %r)" % (what, want, st))

# An oversized request line: closed, never answered with metrics.
s = conn()
t0 = time.time()
try:
    s.sendall(b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n")
except (BrokenPipeError, ConnectionResetError):
    pass
reply = read_all(s)
s.close()
verdict(reply is not None and b"200 OK" not in reply,
        "a 20 KB request line is closed without metrics in %.1f s" % (time.time() - t0))

# Slowloris: every slot trickles a header byte by byte; the target drops each one once it
# has had TIMEOUT_S, and meanwhile a client beyond the limit is closed at once.
slow = []
for _ in range(max_clients):
    s = conn()
    s.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
    slow.append(s)
time.sleep(0.5)
s = conn()
s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
extra = read_all(s)
s.close()
verdict(extra is not None and b"200 OK" not in extra,
        "with %d slow clients holding every slot, one more is closed, unanswered" % max_clients)
t0 = time.time()
dropped = 0
deadline = t0 + timeout_s + 10
for s in slow:
    s.setblocking(False)
while dropped < len(slow) and time.time() < deadline:
    for s in slow:
        if s.fileno() < 0:
            continue
        try:
            s.send(b"a")
            if s.recv(1) == b"":
                s.close()
                dropped += 1
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError, OSError):
            s.close()
            dropped += 1
    time.sleep(0.5)
for s in slow:
    if s.fileno() >= 0:
        s.close()
verdict(dropped == len(slow), "the target dropped %d of %d slowloris clients within %.1f s"
        % (dropped, len(slow), time.time() - t0))
verdict(good_scrape(), "after the slowloris, GET /metrics gets 200")

# Many connections at once: none is left hanging, and the target serves again after.
many = []
for _ in range(200):
    try:
        many.append(conn())
    except OSError:
        break
for s in many:
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
    except OSError:
        pass
answered = closed = hung = 0
for s in many:
    r = read_all(s)
    s.close()
    if r is None:
        hung += 1
    elif b"200 OK" in r:
        answered += 1
    else:
        closed += 1
verdict(hung == 0, "200 connections at once: %d answered, %d closed, %d left hanging"
        % (answered, closed, hung))
verdict(good_scrape(), "after 200 connections, GET /metrics gets 200")
sys.exit(failures)
