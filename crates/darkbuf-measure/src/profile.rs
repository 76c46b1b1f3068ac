//! The machine cost profile: how long each step of the transmit path takes on a CPU.
//!
//! A profile is a TOML file of per-operation costs in nanoseconds plus a noise level.
//! Built-in profiles live in `profiles/` at the repository root and are compiled in;
//! each one records the data it was fitted to, and which costs were not fitted but
//! assumed. `darkbuf calibrate` (kernel backend) writes profiles in the same format.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Per-operation costs, ns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    /// A UDP `sendmsg()` from the syscall to the qdisc enqueue (socket, UDP, IP, route).
    pub send_ns: f64,
    /// An ICMP echo request from the pinger, to the qdisc enqueue.
    pub ping_send_ns: f64,
    /// One `q->dequeue()` plus the `dequeue_skb()` bookkeeping, per packet.
    pub dequeue_ns: f64,
    /// `veth_xmit()`: forward the skb and produce it into the peer's ptr_ring.
    pub xmit_ns: f64,
    /// Entering `net_tx_action()` / `net_rx_action()` for one queue or NAPI.
    pub softirq_ns: f64,
    /// Fixed cost of one NAPI poll (`__napi_poll`, `veth_poll` entry and exit).
    pub napi_poll_ns: f64,
    /// Consuming one ptr_ring entry and handing it to GRO (`veth_xdp_rcv` per packet).
    pub consume_ns: f64,
    /// Stack processing per received packet with no netfilter rules (ip_rcv .. socket).
    pub consumer_base_ns: f64,
    /// Extra per packet for each netfilter rule it traverses.
    pub consumer_per_rule_ns: f64,
    /// Latency from waking a task on an idle CPU to the task running.
    pub wakeup_ns: f64,
    /// The echo reply's way back to the pinger (reverse veth, NAPI, ICMP socket).
    pub ping_reply_ns: f64,
    /// tun/tap: one `read()` of a frame by the user-space reader (`tun_do_read` and the
    /// syscall), without the application's own per-packet cost.
    #[serde(default = "default_tun_read_ns")]
    pub tun_read_ns: f64,
    /// vhost-net: one batched consume of up to 64 entries (`vhost_net_buf_produce`).
    #[serde(default = "default_vhost_batch_ns")]
    pub vhost_batch_ns: f64,
    /// vhost-net: handing one frame to the guest (copy into its virtqueue), per packet.
    #[serde(default = "default_vhost_pkt_ns")]
    pub vhost_pkt_ns: f64,
    /// A NIC's `ndo_start_xmit` per skb: descriptors, DMA mapping (the doorbell's MMIO
    /// write included).
    #[serde(default = "default_nic_xmit_ns")]
    pub nic_xmit_ns: f64,
    /// Reclaiming one completed skb in the TX NAPI poll: unmap, the destructor, free.
    #[serde(default = "default_nic_tx_clean_ns")]
    pub nic_tx_clean_ns: f64,
    /// Receiving one frame from a NIC's RX ring into GRO (descriptor, `build_skb`).
    #[serde(default = "default_nic_rx_ns")]
    pub nic_rx_ns: f64,
    /// One hard interrupt: entry, the handler's `napi_schedule()`, exit.
    #[serde(default = "default_nic_irq_ns")]
    pub nic_irq_ns: f64,
    /// TCP: copying the application's data into the write queue, per KiB.
    #[serde(default = "default_tcp_copy_ns_per_kb")]
    pub tcp_copy_ns_per_kb: f64,
    /// TCP: one skb through `__tcp_transmit_skb()` and the IP output path.
    #[serde(default = "default_tcp_xmit_ns")]
    pub tcp_xmit_ns: f64,
    /// TCP: one ACK processed by the sender (`tcp_ack()`), or built by the receiver.
    #[serde(default = "default_tcp_ack_ns")]
    pub tcp_ack_ns: f64,
    /// TCP: one data skb through the receiver's `tcp_rcv_established()`.
    #[serde(default = "default_tcp_rcv_ns")]
    pub tcp_rcv_ns: f64,
    /// TCP: one `recvmsg()` by a modelled receiving application, without its copy
    /// (the syscall, `lock_sock()`/`release_sock()`; an EAGAIN read costs this alone).
    /// The copy is [`Costs::tcp_recv_copy_ns_per_kb`].
    #[serde(default = "default_tcp_recvmsg_ns")]
    pub tcp_recvmsg_ns: f64,
    /// TCP: the receiving application's copy out of the receive queue
    /// (`skb_copy_datagram_iter()` in `tcp_recvmsg_locked()`, with the skbs it frees),
    /// per KiB. Data the NIC wrote by DMA is not in the reader's cache the way a
    /// sender's own buffer is, so a profile may cost it apart from
    /// `tcp_copy_ns_per_kb`; absent, it is `tcp_copy_ns_per_kb`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_recv_copy_ns_per_kb: Option<f64>,
    /// TCP: the receiving application's `poll()`: per call, and per connection polled.
    #[serde(default = "default_tcp_poll_ns")]
    pub tcp_poll_ns: f64,
    #[serde(default = "default_tcp_poll_fd_ns")]
    pub tcp_poll_fd_ns: f64,
    /// sch_fq's own work per skb beyond a FIFO's (flow lookup, rb-trees, the
    /// throttle check), charged at dequeue. 0 = not modelled (the seed VM's profile
    /// has no data for it).
    #[serde(default)]
    pub fq_pkt_ns: f64,
    /// From a kernel hrtimer's expiry to its handler running on a CPU that was idle:
    /// the timer interrupt and the exit from idle (`hrtimer_interrupt()` on a CPU in
    /// `do_idle()`). Charged where the model fires a qdisc's watchdog
    /// (`qdisc_watchdog()`: htb, tbf, netem, fq) on an idle CPU. 0 = not modelled, the
    /// default: a host's is microseconds, an emulated guest's hundreds.
    #[serde(default)]
    pub hrtimer_ns: f64,
}

fn default_tun_read_ns() -> f64 {
    2000.0
}
fn default_vhost_batch_ns() -> f64 {
    500.0
}
fn default_vhost_pkt_ns() -> f64 {
    400.0
}
// The NIC costs are assumptions of the order driver profiles report on current x86
// servers, not fits: a calibration for a NIC needs a NIC darkbuf may drive.
fn default_nic_xmit_ns() -> f64 {
    250.0
}
fn default_nic_tx_clean_ns() -> f64 {
    100.0
}
fn default_nic_rx_ns() -> f64 {
    250.0
}
fn default_nic_irq_ns() -> f64 {
    1000.0
}
// The TCP costs are assumptions of the same kind (perf profiles of bulk TCP on current
// x86 servers: copies near 10 GB/s, a few hundred ns per skb and per ACK).
fn default_tcp_copy_ns_per_kb() -> f64 {
    100.0
}
fn default_tcp_xmit_ns() -> f64 {
    600.0
}
fn default_tcp_ack_ns() -> f64 {
    400.0
}
fn default_tcp_rcv_ns() -> f64 {
    600.0
}
// The receiving application's syscalls, measured on the 2-vCPU development VM (a KVM
// guest; 2026-11-27, kernel 6.18, loopback TCP with the data queued before the timed
// reads; medians of 4 rounds, each round's figures within 15-30%): read() of N queued
// bytes fits 700 ns + 117 ns per KiB for N = 1448 .. 131072 (the copy is
// tcp_copy_ns_per_kb's assumption, 100), a read() that finds nothing 450 ns (taken
// as a read's 700 here); poll() over 1, 8 and 64 idle TCP sockets fits 260 ns + 72 ns
// per socket.
fn default_tcp_recvmsg_ns() -> f64 {
    700.0
}
fn default_tcp_poll_ns() -> f64 {
    260.0
}
fn default_tcp_poll_fd_ns() -> f64 {
    72.0
}

/// A machine profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// Relative per-step cost noise: each step's cost is multiplied by a factor drawn
    /// uniformly from [1 - noise, 1 + noise] using the scenario's seeded RNG.
    pub noise: f64,
    pub costs: Costs,
    /// What the fitted costs were fitted to.
    pub fit: Option<Fit>,
    /// Stalls: times the machine takes a CPU away from the kernel (a hypervisor's
    /// steal, the host's interrupts), measured as gaps in a busy loop. None by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<Stall>,
    /// `MAX_TCP_HEADER` of the machine's kernel build, bytes: every TCP skb's headroom,
    /// and part of the send buffer's charge per segment (`tcp_sndbuf_expand()`): at MTU
    /// 1500, 2304 bytes with 256 and 4352 with 320. It is `L1_CACHE_ALIGN(128 + MAX_HEADER)`:
    /// 320 where `LL_MAX_HEADER` is 96 or 128 (`CONFIG_WLAN`, `CONFIG_HYPERV_NET`: the
    /// distributions' kernels), 256 or 192 without. Default 320.
    #[serde(default = "default_max_tcp_header")]
    pub max_tcp_header: u32,
    /// What a TCP skb's truesize carries beyond its payload, bytes: `SKB_TRUESIZE()` of
    /// the head `tcp_stream_alloc_skb()` allocates (`alloc_skb_fclone(MAX_TCP_HEADER)`),
    /// which `sk_wmem_queued`, `sk_wmem_alloc` and so TSQ's limit (twice an skb's
    /// truesize) count. The kernel decides it by its allocator: 6.1 takes a kmalloc-1k
    /// head (1280, measured in the Debian 6.1 guest); 6.3 on (bf9f1baa279f) a head from
    /// the small-head cache, `SKB_HEAD_ALIGN(MAX_TCP_HEADER)` (832 with 256, measured on
    /// this host's 6.18; 896 with 320). `darkbuf calibrate` measures it; default 768, the
    /// simulator's assumption before it was measured (the built-in profiles keep it).
    #[serde(default = "default_tcp_skb_overhead")]
    pub tcp_skb_overhead: u32,
    /// A profile read from a file: its path and an FNV-1a 64 digest of its text, so
    /// results name the very costs they ran with (two files may share a `name`).
    #[serde(skip)]
    pub file: Option<(String, u64)>,
}

/// `MAX_TCP_HEADER` of a distribution's x86_64 kernel.
pub const DEFAULT_MAX_TCP_HEADER: u32 = 320;

fn default_max_tcp_header() -> u32 {
    DEFAULT_MAX_TCP_HEADER
}

/// The simulator's TCP skb overhead before profiles carried a measured one.
pub const DEFAULT_TCP_SKB_OVERHEAD: u32 = 768;

fn default_tcp_skb_overhead() -> u32 {
    DEFAULT_TCP_SKB_OVERHEAD
}

/// FNV-1a, 64 bits: a stable digest of a profile file's text (not a security hash).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// One class of stalls (`[[stalls]]`): `per_s` times a second on each CPU, at random
/// (a Poisson process), each lasting between `min_us` and `max_us` (log-uniform).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stall {
    pub per_s: f64,
    pub min_us: f64,
    pub max_us: f64,
}

/// The data a profile's consumer costs were fitted to, kept in the profile so the fit
/// can be checked (and redone) from the file alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fit {
    pub source: String,
    pub method: String,
    /// Which cost fields the fit produced; all others are assumptions stated in `description`.
    pub fitted: Vec<String>,
    pub points: Vec<FitPoint>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitPoint {
    pub nrules: u32,
    /// Measured consumer packets per second (consumer-bound, full 64-packet polls).
    pub pps: f64,
}

const SEED_VM: &str = include_str!("../../../profiles/seed-vm.toml");
const BAREMETAL_100G: &str = include_str!("../../../profiles/baremetal-100g.toml");

/// Names of the built-in profiles (the scenario's check of `machine.profile` knows
/// them too).
pub const BUILTIN: &[&str] = darkbuf_scenario::BUILTIN_PROFILES;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown machine profile `{0}`: built-in profiles are {builtin}, or give a path to a profile TOML", builtin = BUILTIN.join(", "))]
    Unknown(String),
    #[error("cannot read profile {path}: {err}")]
    Io { path: String, err: std::io::Error },
    /// `at` is the line and column of the error in the profile's text.
    #[error("profile {path}{} is not valid: {}", at.map_or(String::new(), |(l, c)| format!(":{l}:{c}")), err.message().trim())]
    Parse { path: String, err: toml::de::Error, at: Option<(usize, usize)> },
    /// `at` is the line and column of the offending key's value, when the profile is a
    /// file that sets it.
    #[error("profile {path}{}: {msg}", at.map_or(String::new(), |(l, c)| format!(":{l}:{c}")))]
    Invalid { path: String, msg: String, at: Option<(usize, usize)> },
}

impl Costs {
    /// The receiving application's copy per KiB: `tcp_recv_copy_ns_per_kb`, or the
    /// sender's `tcp_copy_ns_per_kb` when the profile does not cost it apart.
    pub fn recv_copy_ns_per_kb(&self) -> f64 {
        self.tcp_recv_copy_ns_per_kb.unwrap_or(self.tcp_copy_ns_per_kb)
    }
}

impl Profile {
    /// A built-in profile by name, or a profile file by path.
    // A ProfileError is returned once, before anything runs; boxing it buys nothing.
    #[allow(clippy::result_large_err)]
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        // `from_file`: a file, which results name by its path and digest.
        let (path, text, from_file) = match name_or_path {
            "seed-vm" => ("seed-vm".to_string(), SEED_VM.to_string(), false),
            "baremetal-100g" => ("baremetal-100g".to_string(), BAREMETAL_100G.to_string(), false),
            p if p.ends_with(".toml") || p.contains('/') => {
                // Bounded like a scenario file: a profile path of /dev/zero is an error.
                let max = darkbuf_scenario::limits::MAX_FILE_BYTES;
                let text = darkbuf_scenario::read_bounded(Path::new(p), max)
                    .map_err(|err| ProfileError::Io { path: p.into(), err })?
                    .ok_or_else(|| ProfileError::Invalid { path: p.into(), msg: format!("larger than {max} bytes: not a profile"), at: None })?;
                (p.to_string(), text, true)
            }
            other => return Err(ProfileError::Unknown(other.into())),
        };
        let mut profile: Profile = toml::from_str(&text).map_err(|err| {
            let at = err.span().map(|s| darkbuf_scenario::diag::line_col(&text, s.start));
            ProfileError::Parse { path: path.clone(), err, at }
        })?;
        profile.validate().map_err(|(key, msg)| {
            let at = value_position(&text, &key);
            ProfileError::Invalid { path: path.clone(), msg, at }
        })?;
        if from_file {
            profile.file = Some((path, fnv1a64(text.as_bytes())));
        }
        Ok(profile)
    }

    /// How results' `environment.profile` names it: a built-in profile by its name, a
    /// file by its name, path and digest (`lab (profiles/lab.toml, fnv1a64 9f3c...)`).
    pub fn identity(&self) -> String {
        match &self.file {
            None => self.name.clone(),
            Some((path, digest)) => format!("{} ({path}, fnv1a64 {digest:016x})", self.name),
        }
    }

    /// Checks the values serde cannot: on error, the key at fault (`noise`, or a field of
    /// `[costs]`) and why.
    fn validate(&self) -> Result<(), (String, String)> {
        let c = &self.costs;
        let all = [
            ("send_ns", c.send_ns), ("ping_send_ns", c.ping_send_ns), ("dequeue_ns", c.dequeue_ns),
            ("xmit_ns", c.xmit_ns), ("softirq_ns", c.softirq_ns), ("napi_poll_ns", c.napi_poll_ns),
            ("consume_ns", c.consume_ns), ("consumer_base_ns", c.consumer_base_ns),
            ("consumer_per_rule_ns", c.consumer_per_rule_ns), ("wakeup_ns", c.wakeup_ns),
            ("ping_reply_ns", c.ping_reply_ns), ("tun_read_ns", c.tun_read_ns),
            ("vhost_batch_ns", c.vhost_batch_ns), ("vhost_pkt_ns", c.vhost_pkt_ns),
            ("nic_xmit_ns", c.nic_xmit_ns), ("nic_tx_clean_ns", c.nic_tx_clean_ns),
            ("nic_rx_ns", c.nic_rx_ns), ("nic_irq_ns", c.nic_irq_ns),
            ("tcp_copy_ns_per_kb", c.tcp_copy_ns_per_kb), ("tcp_xmit_ns", c.tcp_xmit_ns),
            ("tcp_ack_ns", c.tcp_ack_ns), ("tcp_rcv_ns", c.tcp_rcv_ns), ("fq_pkt_ns", c.fq_pkt_ns),
            ("tcp_recvmsg_ns", c.tcp_recvmsg_ns), ("tcp_poll_ns", c.tcp_poll_ns), ("tcp_poll_fd_ns", c.tcp_poll_fd_ns), ("hrtimer_ns", c.hrtimer_ns),
            ("tcp_recv_copy_ns_per_kb", c.recv_copy_ns_per_kb()),
        ];
        for (k, v) in all {
            if !(v.is_finite() && (0.0..1e12).contains(&v)) {
                return Err((k.into(), format!("costs.{k} = {v} must be a finite number of ns >= 0")));
            }
        }
        if !(128..=1024).contains(&self.max_tcp_header) || !self.max_tcp_header.is_multiple_of(64) {
            return Err((
                "max_tcp_header".into(),
                format!("max_tcp_header = {} must be a multiple of 64 (L1_CACHE_ALIGN) in [128, 1024] bytes", self.max_tcp_header),
            ));
        }
        if !(256..=4096).contains(&self.tcp_skb_overhead) {
            return Err((
                "tcp_skb_overhead".into(),
                format!("tcp_skb_overhead = {} must be in [256, 4096] bytes (an sk_buff and its head beyond the payload)", self.tcp_skb_overhead),
            ));
        }
        for (i, st) in self.stalls.iter().enumerate() {
            if !(st.per_s.is_finite() && (0.0..=1e5).contains(&st.per_s)) {
                return Err((format!("stalls.{i}.per_s"), format!("stalls[{i}]: per_s = {} must be a rate in [0, 100000] per second", st.per_s)));
            }
            if !(st.min_us.is_finite() && st.max_us.is_finite() && 0.0 < st.min_us && st.min_us <= st.max_us && st.max_us <= 1e6) {
                return Err((
                    format!("stalls.{i}.min_us"),
                    format!("stalls[{i}]: min_us = {} and max_us = {} must satisfy 0 < min_us <= max_us <= 1000000 (1 s)", st.min_us, st.max_us),
                ));
            }
        }
        if !(0.0..0.9).contains(&self.noise) {
            return Err(("noise".into(), format!("noise = {} must be in [0, 0.9)", self.noise)));
        }
        if c.consume_ns + c.consumer_base_ns <= 0.0 {
            return Err(("consume_ns".into(), "the consumer's per-packet cost (costs.consume_ns + costs.consumer_base_ns) must be > 0".into()));
        }
        // The costs that pace a sender: a send that can cost 0 ns (`World::cost()`
        // truncates to whole ns) lets a flood into a full qdisc, whose sends are dropped
        // and free their buffer at once, send forever at one instant; a send of a few ns
        // makes each simulated second minutes of wall clock (1 ns: seven minutes for one
        // second of veth-bql, found by a newcomer's try). No CPU sends that fast.
        for (k, v) in [("send_ns", c.send_ns), ("ping_send_ns", c.ping_send_ns), ("tcp_xmit_ns", c.tcp_xmit_ns)] {
            let least = v * (1.0 - self.noise);
            if least < MIN_SEND_NS {
                return Err((
                    k.into(),
                    format!(
                        "costs.{k} = {v} with noise = {}: a send may cost {least:.3} ns, faster than any CPU sends a packet \
                         (a system call's entry and exit alone take about {MIN_SEND_NS} ns), and a sender that fast makes a \
                         simulated second minutes of wall clock (under the 1 ns clock step, a flood into a full qdisc never \
                         lets the clock advance); expected {k} >= {MIN_SEND_NS} / (1 - noise) = {:.3} ns",
                        self.noise,
                        MIN_SEND_NS / (1.0 - self.noise)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Per-packet consumer time the fit attributes to `nrules` rules, excluding the
    /// per-packet costs that are assumed rather than fitted (consume, a 64th of a poll).
    pub fn consumer_cost_ns(&self, nrules: u32) -> f64 {
        self.costs.consumer_base_ns + nrules as f64 * self.costs.consumer_per_rule_ns
    }
}

/// The least a profile's per-packet send costs (`send_ns`, `ping_send_ns`, `tcp_xmit_ns`)
/// may come to with the noise, ns: about a system call's entry and exit on current x86
/// (with the speculation mitigations, several times more). It bounds how many packets a
/// simulated second holds, and with it the wall clock of a run.
pub const MIN_SEND_NS: f64 = 50.0;

/// Line and column of the value of `key` (`noise`, or a field of `[costs]`) in a
/// profile's text, for an error about it. `None` for a key the text leaves to its
/// default.
fn value_position(text: &str, key: &str) -> Option<(usize, usize)> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let item = match key {
        // The top-level keys; every other is a field of [costs].
        "noise" | "max_tcp_header" | "tcp_skb_overhead" => doc.get(key)?,
        stall if stall.starts_with("stalls.") => {
            // stalls.<index>.<field>: that entry's value.
            let mut parts = stall.split('.').skip(1);
            let i: usize = parts.next()?.parse().ok()?;
            doc.get("stalls")?.as_array_of_tables()?.get(i)?.get(parts.next()?)?
        }
        field => doc.get("costs")?.get(field)?,
    };
    Some(darkbuf_scenario::diag::line_col(text, item.span()?.start))
}

/// Fits `consumer_base_ns` and `consumer_per_rule_ns` to measured consumer rates.
///
/// A consumer-bound NAPI consumer with full 64-packet polls spends per packet
/// `overhead_ns + base + nrules * per_rule`, where `overhead_ns` is the assumed
/// `consume_ns + napi_poll_ns / 64`. The fit minimizes the squared *relative* error of
/// the predicted per-packet time, so a point at 1.8 Mpps weighs as much as one at 7 kpps.
/// Returns (base, per_rule), both clamped at >= 0.
pub fn fit_consumer(points: &[FitPoint], overhead_ns: f64) -> (f64, f64) {
    // Minimize sum_i w_i (b + k n_i - y_i)^2 with y_i = 1e9/pps_i - overhead, w_i = 1/y_i^2.
    let (mut sw, mut swn, mut swnn, mut swy, mut swny) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let y = 1e9 / p.pps - overhead_ns;
        let n = p.nrules as f64;
        let w = 1.0 / (y * y);
        sw += w;
        swn += w * n;
        swnn += w * n * n;
        swy += w * y;
        swny += w * n * y;
    }
    let det = sw * swnn - swn * swn;
    if det.abs() < f64::EPSILON {
        return ((swy / sw).max(0.0), 0.0);
    }
    let k = (sw * swny - swn * swy) / det;
    let b = (swy - k * swn) / sw;
    (b.max(0.0), k.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_vm_loads_and_its_costs_are_its_fit() {
        let p = Profile::load("seed-vm").unwrap();
        let fit = p.fit.as_ref().expect("seed-vm records its fit");
        let overhead = p.costs.consume_ns + p.costs.napi_poll_ns / 64.0;
        let (b, k) = fit_consumer(&fit.points, overhead);
        // The file stores the fit rounded to 0.01 ns.
        assert!((p.costs.consumer_base_ns - b).abs() < 0.01, "base {} vs fit {b}", p.costs.consumer_base_ns);
        assert!((p.costs.consumer_per_rule_ns - k).abs() < 0.01, "per_rule {} vs fit {k}", p.costs.consumer_per_rule_ns);
    }

    #[test]
    fn fit_recovers_exact_line() {
        let pts: Vec<FitPoint> = [0u32, 1000, 5000]
            .iter()
            .map(|&n| FitPoint { nrules: n, pps: 1e9 / (100.0 + 500.0 + n as f64 * 10.0) })
            .collect();
        let (b, k) = fit_consumer(&pts, 100.0);
        assert!((b - 500.0).abs() < 1e-6 && (k - 10.0).abs() < 1e-9, "{b} {k}");
    }

    /// Every built-in profile loads and validates; baremetal-100g claims no fit.
    #[test]
    fn builtin_profiles_load() {
        for name in BUILTIN {
            let p = Profile::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.name, *name);
        }
        let p = Profile::load("baremetal-100g").unwrap();
        assert!(p.fit.is_none(), "its costs are assumptions, not a fit");
        assert!(p.costs.fq_pkt_ns > 0.0);
    }

    /// seed-vm's text with one line replaced, loaded from a file.
    #[allow(clippy::result_large_err)]
    fn load_edited(tag: &str, line_start: &str, with: &str) -> Result<Profile, ProfileError> {
        let text: String = SEED_VM
            .lines()
            .map(|l| if l.starts_with(line_start) { with.to_string() } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(text.contains(with), "seed-vm has a line starting with {line_start:?}");
        let path = std::env::temp_dir().join(format!("darkbuf-profile-test-{}-{tag}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let r = Profile::load(path.to_str().unwrap());
        std::fs::remove_file(&path).unwrap();
        r
    }

    /// A send that may cost 0 whole ns would let a flood into a full qdisc loop forever
    /// at one instant, and one of a few ns makes a simulated second minutes long:
    /// refused below MIN_SEND_NS, at the value's line and column. seed-vm's noise is
    /// 0.05, so the least send_ns is 50 / 0.95 = 52.632 ns; ping_send_ns and tcp_xmit_ns
    /// have the same floor.
    #[test]
    fn a_send_that_may_cost_no_time_is_refused_where_it_is_set() {
        let line = SEED_VM.lines().position(|l| l.starts_with("send_ns")).unwrap() + 1;
        match load_edited("tiny", "send_ns", "send_ns = 52.6") {
            Err(ProfileError::Invalid { msg, at, .. }) => {
                assert_eq!(at, Some((line, 11)), "{msg}");
                assert!(msg.contains("expected send_ns >= 50 / (1 - noise) = 52.632 ns"), "{msg}");
            }
            other => panic!("accepted or wrong error: {other:?}"),
        }
        let p = load_edited("least", "send_ns", "send_ns = 52.632").expect("every send takes at least 50 ns");
        assert_eq!(p.costs.send_ns, 52.632);
        let line = SEED_VM.lines().position(|l| l.starts_with("ping_send_ns")).unwrap() + 1;
        match load_edited("tiny-ping", "ping_send_ns", "ping_send_ns = 1.0") {
            Err(ProfileError::Invalid { msg, at, .. }) => {
                assert_eq!(at, Some((line, 16)), "{msg}");
                assert!(msg.contains("costs.ping_send_ns = 1 with noise = 0.05: a send may cost 0.950 ns"), "{msg}");
            }
            other => panic!("accepted or wrong error: {other:?}"),
        }
    }

    /// A profile without `tcp_skb_overhead` (the built-in ones) charges the 768 bytes the
    /// simulator assumed before it was measured; a measured one loads; one that is no
    /// sk_buff and head is refused at its line.
    #[test]
    fn the_tcp_skb_overhead_loads_and_a_bad_one_is_refused_where_it_is_set() {
        assert_eq!(Profile::load("seed-vm").unwrap().tcp_skb_overhead, DEFAULT_TCP_SKB_OVERHEAD);
        let p = load_edited("overhead", "noise", "noise = 0.05\ntcp_skb_overhead = 1280").expect("6.1's");
        assert_eq!(p.tcp_skb_overhead, 1280);
        let line = SEED_VM.lines().position(|l| l.starts_with("noise")).unwrap() + 2;
        match load_edited("overhead-bad", "noise", "noise = 0.05\ntcp_skb_overhead = 64") {
            Err(ProfileError::Invalid { msg, at, .. }) => {
                assert_eq!(at.map(|a| a.0), Some(line), "{msg}");
                assert!(msg.contains("tcp_skb_overhead = 64 must be in [256, 4096] bytes"), "{msg}");
            }
            other => panic!("accepted or wrong error: {other:?}"),
        }
    }

    #[test]
    fn a_noise_out_of_range_is_refused_where_it_is_set() {
        let line = SEED_VM.lines().position(|l| l.starts_with("noise")).unwrap() + 1;
        match load_edited("noise", "noise", "noise = 0.9") {
            Err(ProfileError::Invalid { msg, at, .. }) => {
                assert_eq!(at, Some((line, 9)), "{msg}");
                assert!(msg.contains("must be in [0, 0.9)"), "{msg}");
            }
            other => panic!("accepted or wrong error: {other:?}"),
        }
    }

    #[test]
    fn stalls_load_and_bad_ones_are_refused_where_they_are_set() {
        let stall = "noise = 0.05\n[[stalls]]\nper_s = 2.5\nmin_us = 1000.0\nmax_us = 2000.0\n";
        let p = load_edited("stalls", "noise", stall).expect("a valid class");
        assert_eq!(p.stalls, vec![Stall { per_s: 2.5, min_us: 1000.0, max_us: 2000.0 }]);
        // The second of two classes is bad: the error is at its per_s (6 lines below the
        // noise line) or its min_us (7 lines below).
        let noise = SEED_VM.lines().position(|l| l.starts_with("noise")).unwrap() + 1;
        let good = "[[stalls]]\nper_s = 1.0\nmin_us = 1.0\nmax_us = 2.0\n";
        for (tag, bad, line, says) in [
            ("rate", "per_s = -1.0\nmin_us = 1.0\nmax_us = 2.0", noise + 6, "stalls[1]: per_s = -1 must be a rate in [0, 100000]"),
            ("order", "per_s = 1.0\nmin_us = 3.0\nmax_us = 2.0", noise + 7, "stalls[1]: min_us = 3 and max_us = 2 must satisfy 0 < min_us <= max_us <= 1000000"),
            ("zero", "per_s = 1.0\nmin_us = 0.0\nmax_us = 2.0", noise + 7, "0 < min_us <= max_us <= 1000000"),
        ] {
            match load_edited(tag, "noise", &format!("noise = 0.05\n{good}[[stalls]]\n{bad}\n")) {
                Err(ProfileError::Invalid { msg, at, .. }) => {
                    assert_eq!(at.map(|a| a.0), Some(line), "{msg}");
                    assert!(msg.contains(says), "{msg}");
                }
                other => panic!("{tag}: accepted or wrong error: {other:?}"),
            }
        }
        match load_edited("field", "noise", "noise = 0.05\n[[stalls]]\nrate = 1.0\n") {
            Err(ProfileError::Parse { .. }) => {}
            other => panic!("an unknown key is a parse error: {other:?}"),
        }
    }

    #[test]
    fn unknown_profile_is_an_error() {
        assert!(matches!(Profile::load("laptop"), Err(ProfileError::Unknown(_))));
    }
}
