//! Thin, checked wrappers over the libc calls the load tools share: the monotonic
//! clock, busy-spinning, sleeping, socket options, CPU pinning.
//!
//! Everything here returns `io::Result` built from `errno`; nothing panics.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// CLOCK_MONOTONIC in nanoseconds. The same clock in every namespace and thread of
/// the host, so a stamp written by the flood can be compared with a reading taken by
/// the sink or the tap reader (one-way delay).
#[inline]
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds (only used to convert SO_TIMESTAMPNS receive stamps,
/// which the kernel takes with `ktime_get_real()`).
#[inline]
pub fn real_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; clock_gettime cannot fail for these clocks.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// Saturating conversion of a Duration to nanoseconds.
#[inline]
pub fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Busy-spins (no syscall, no sleep) for `ns` nanoseconds of wall time: the
/// per-packet `consumer.app_cost` of the sink and the tap reader. A spinning thread
/// keeps its CPU, like an application doing per-packet work.
#[inline]
pub fn spin_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let end = mono_ns().saturating_add(ns);
    while mono_ns() < end {
        std::hint::spin_loop();
    }
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns` (clock_nanosleep with
/// TIMER_ABSTIME, so interruptions do not stretch the schedule).
pub fn sleep_until_ns(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec pointer, null remainder (allowed with TIMER_ABSTIME).
        let rc = unsafe {
            libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut())
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// Sets the calling thread's timer slack to 1 ns (prctl PR_SET_TIMERSLACK), so
/// clock_nanosleep/ppoll wake close to the requested time instead of up to 50 µs
/// late (the default slack). Best effort.
pub fn tight_timer_slack() {
    // SAFETY: plain prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Pins the calling thread to one CPU (sched_setaffinity on tid 0 = this thread).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("cpu {cpu} out of range")));
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET is bounds-checked above.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `Err(last_os_error)` when a libc call returned a negative value.
#[inline]
pub fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Creates a socket with SOCK_CLOEXEC.
pub fn socket(domain: libc::c_int, ty: libc::c_int, proto: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; on success we own the returned descriptor.
    let fd = cvt(unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) })?;
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// setsockopt with a plain-data value.
pub fn setsockopt<T: Copy>(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, val: T) -> io::Result<()> {
    // SAFETY: `val` lives for the call and its size is passed exactly.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            &val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// setsockopt for an `int` option, naming the option in the error.
pub fn setsockopt_int(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, val: libc::c_int, what: &str) -> io::Result<()> {
    setsockopt(fd, level, name, val).map_err(|e| io::Error::new(e.kind(), format!("setsockopt {what}={val}: {e}")))
}

/// getsockopt for an `int` option.
pub fn getsockopt_int(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: valid out-pointers of the declared size.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, &mut v as *mut _ as *mut libc::c_void, &mut len) })?;
    Ok(v)
}

/// Sets SO_SNDTIMEO or SO_RCVTIMEO: the bound on one blocking send/receive, so
/// a blocked tool notices `stop` and its deadline within this time.
pub fn set_timeout(fd: &impl AsRawFd, opt: libc::c_int, d: Duration) -> io::Result<()> {
    let tv = libc::timeval { tv_sec: d.as_secs() as libc::time_t, tv_usec: d.subsec_micros() as libc::suseconds_t };
    setsockopt(fd, libc::SOL_SOCKET, opt, tv)
}

/// An IPv4 socket address in kernel layout.
pub fn sockaddr_in(ip: std::net::Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(ip.octets()) },
        sin_zero: [0; 8],
    }
}

/// Back from kernel layout.
pub fn from_sockaddr_in(sa: &libc::sockaddr_in) -> (std::net::Ipv4Addr, u16) {
    (std::net::Ipv4Addr::from(sa.sin_addr.s_addr.to_ne_bytes()), u16::from_be(sa.sin_port))
}

pub fn bind(fd: &impl AsRawFd, ip: std::net::Ipv4Addr, port: u16) -> io::Result<()> {
    let sa = sockaddr_in(ip, port);
    // SAFETY: sa is a valid sockaddr_in of the given length.
    cvt(unsafe {
        libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
    })
    .map(|_| ())
    .map_err(|e| io::Error::new(e.kind(), format!("bind {ip}:{port}: {e}")))
}

pub fn connect(fd: &impl AsRawFd, ip: std::net::Ipv4Addr, port: u16) -> io::Result<()> {
    let sa = sockaddr_in(ip, port);
    // SAFETY: sa is a valid sockaddr_in of the given length.
    cvt(unsafe {
        libc::connect(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
    })
    .map(|_| ())
    .map_err(|e| io::Error::new(e.kind(), format!("connect {ip}:{port}: {e}")))
}

/// Local address of a bound socket.
pub fn local_addr(fd: &impl AsRawFd) -> io::Result<(std::net::Ipv4Addr, u16)> {
    // SAFETY: zeroed sockaddr_in is valid; getsockname writes at most `len` bytes.
    unsafe {
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        cvt(libc::getsockname(fd.as_raw_fd(), &mut sa as *mut _ as *mut libc::sockaddr, &mut len))?;
        Ok(from_sockaddr_in(&sa))
    }
}

/// poll() one descriptor for `events` for at most `timeout_ns` (ppoll, ns precision).
/// Returns the revents (0 on timeout). EINTR counts as a timeout.
pub fn poll_one(fd: RawFd, events: libc::c_short, timeout_ns: u64) -> io::Result<libc::c_short> {
    let mut pfd = libc::pollfd { fd, events, revents: 0 };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd, valid timespec, no signal mask.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(if rc == 0 { 0 } else { pfd.revents })
}

/// Room for the control messages the tools ask for: SCM_TIMESTAMPNS, SCM_TIMESTAMPING
/// and IP_RECVERR's extended error, together.
pub type CmsgBuf = [u64; 32];

/// recvmsg() of one datagram into `buf`, its control messages into `ctl` and, when
/// `from` is given, its source address. Returns recvmsg's result (-1 with errno set) and
/// the msghdr for reading the control messages (CMSG_FIRSTHDR/CMSG_NXTHDR, while `ctl`
/// lives); its iovec and name pointers are cleared, as they pointed into this call.
pub fn recvmsg_ctl(fd: RawFd, buf: &mut [u8], ctl: &mut CmsgBuf, from: Option<&mut libc::sockaddr_in>, flags: libc::c_int) -> (isize, libc::msghdr) {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    // SAFETY: all-zero msghdr is valid; buf, ctl, iov and from are valid for their
    // lengths during the call, and the pointers into this frame are cleared after it.
    unsafe {
        let mut mh: libc::msghdr = std::mem::zeroed();
        if let Some(f) = from {
            mh.msg_name = f as *mut libc::sockaddr_in as *mut libc::c_void;
            mh.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        }
        mh.msg_iov = &mut iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
        mh.msg_controllen = std::mem::size_of_val(ctl) as _;
        let r = libc::recvmsg(fd, &mut mh, flags);
        mh.msg_iov = std::ptr::null_mut();
        mh.msg_iovlen = 0;
        mh.msg_name = std::ptr::null_mut();
        (r, mh)
    }
}

/// errno of the last failed call.
#[inline]
pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
