//! The kernel backend: runs a scenario on the running kernel in network namespaces.
//! See docs/design.md "The kernel backend" and
//! docs/reference/real-kernel-notes.md (what the development kernel can do).
//!
//! - [`caps`]: `darkbuf check`, what this kernel can do, and leftovers of killed runs.
//! - [`topo`]: namespaces, veth/tap, qdisc, BQL, NAPI mode, rules; guaranteed teardown.
//! - [`load`]: the load generator, sink, prober and tap reader (threads in this process).
//! - [`tcp`]: `kind = "tcp"` traffic: checks, sysctls, flows and their metrics.
//! - [`counters`], [`xstats`], [`trace`], [`probe_trace`]: what is measured, and how it is parsed.
//! - [`backend`]: one scenario run → a `RunRecord` in the results contract's names.
//! - [`calibrate`]: a measured matrix fitted into a simulator machine profile.
//! - [`compare`]: simulator and kernel side by side.

pub mod backend;
pub mod bql;
pub mod calibrate;
pub mod caps;
pub mod cmd;
pub mod compare;
pub mod counters;
pub mod error;
pub mod ethtool_ioctl;
pub mod load;
pub mod names;
pub mod nics;
pub mod probe_trace;
pub mod rules;
pub mod session;
pub mod signals;
pub mod stalls;
pub mod tcargs;
pub mod tcp;
pub mod calibrate_tcp;
pub mod tcp_header;
pub mod timers;
pub mod timing;
pub mod web;
pub mod xstats;
pub mod topo;
pub mod trace;

pub use error::{KernelError, Result};

/// A kernel release as (major, minor, patch), ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize)]
pub struct KernelVersion(pub u32, pub u32, pub u32);

impl KernelVersion {
    /// Parses the leading "X.Y[.Z]" of a release string such as "6.18.44-fc-v445".
    pub fn parse(release: &str) -> Option<KernelVersion> {
        let head: String = release.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let mut it = head.split('.').filter(|s| !s.is_empty()).map(|s| s.parse::<u32>());
        let major = it.next()?.ok()?;
        let minor = it.next()?.ok()?;
        let patch = it.next().and_then(|r| r.ok()).unwrap_or(0);
        Some(KernelVersion(major, minor, patch))
    }

    /// The running kernel's.
    pub fn running() -> KernelVersion {
        KernelVersion::parse(&uname_release()).unwrap_or_default()
    }
}

impl std::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// `uname -r`.
pub fn uname_release() -> String {
    // SAFETY: uname fills a zeroed struct; the fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr()).to_string_lossy().into_owned()
    }
}

/// The CPU model from /proc/cpuinfo, with the CPU count.
pub fn cpu_model() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{model} ({} CPUs)", online_cpus())
}

/// CPUs this process may run on.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CONFIG_HZ from /proc/config.gz (needs `zcat`), if the kernel exposes its config.
pub fn config_hz() -> Option<u32> {
    let o = cmd::run("zcat", &["/proc/config.gz"]).ok()?;
    o.stdout
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_version_parse_and_order() {
        assert_eq!(KernelVersion::parse("6.18.44-fc-v445"), Some(KernelVersion(6, 18, 44)));
        assert_eq!(KernelVersion::parse("6.1.0-28-amd64"), Some(KernelVersion(6, 1, 0)));
        assert_eq!(KernelVersion::parse("6.16"), Some(KernelVersion(6, 16, 0)));
        assert_eq!(KernelVersion::parse("x"), None);
        assert!(KernelVersion(6, 16, 0) > KernelVersion(6, 15, 99));
        assert_eq!(KernelVersion(6, 18, 44).to_string(), "6.18.44");
    }
}
