"""The load and the prober of tools/router_kernel.sh: a TCP sink with a UDP echo
responder (`server`), and a cubic bulk sender with a UDP RTT probe every 100 ms
(`client DST SECONDS`). Bounded: the client stops after SECONDS, the server after one
connection."""
import socket
import statistics
import struct
import sys
import threading
import time


def server():
    def echo():
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("0.0.0.0", 7000))
        while True:
            data, addr = u.recvfrom(2048)
            u.sendto(data, addr)

    threading.Thread(target=echo, daemon=True).start()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5001))
    s.listen(1)
    c, _ = s.accept()
    n, t0 = 0, time.time()
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        n += len(d)
    print(f"goodput {n * 8 / (time.time() - t0) / 1e6:.1f} Mbit/s", flush=True)


def client(dst, seconds):
    rtts = []
    end = time.time() + seconds

    def probe():
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(2)
        time.sleep(3)
        while time.time() < end - 0.5:
            t = time.time()
            u.sendto(struct.pack("d", t), (dst, 7000))
            try:
                u.recvfrom(64)
                rtts.append((time.time() - t) * 1e3)
            except socket.timeout:
                pass
            time.sleep(0.1)

    th = threading.Thread(target=probe)
    th.start()
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
    s.connect((dst, 5001))
    buf = b"x" * 65536
    while time.time() < end:
        s.send(buf)
    s.close()
    th.join()
    print(f"probes {len(rtts)}: RTT avg {statistics.mean(rtts):.1f} min {min(rtts):.1f} max {max(rtts):.1f} ms", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server()
    else:
        client(sys.argv[2], float(sys.argv[3]))
