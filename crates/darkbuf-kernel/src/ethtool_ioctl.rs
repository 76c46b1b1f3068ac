//! Two things `ethtool` does, through its own ioctl (`SIOCETHTOOL`) in the calling
//! thread's network namespace: `ethtool -S DEV` (the driver's statistics) and
//! `ethtool -K DEV tso|gso|gro on|off`.
//!
//! Why not the `ethtool` program: an exec is a quarter to half a second in a TCG guest,
//! and a run paid four of them (the offloads at setup, `-S` in each snapshot), about a
//! second per sweep point. The ioctls are the kernel UAPI the ethtool program itself
//! uses (`include/uapi/linux/ethtool.h`, served by `net/ethtool/ioctl.c`'s
//! `dev_ethtool()`): `ETHTOOL_GSSET_INFO`, `ETHTOOL_GSTRINGS` and `ETHTOOL_GSTATS` for
//! `-S`; `ETHTOOL_GFEATURES` and `ETHTOOL_SFEATURES` for `-K`, with the feature names
//! matched as ethtool matches them (the legacy `ETHTOOL_STSO` misses 6.17's
//! `tx-tcp-accecn-segmentation`, which `ethtool -K tso off` turns off). Callers fall back
//! to the program when an ioctl fails. No crate covers these: the netlink ethtool crates have no `-S` (the
//! driver's private statistics exist only as ioctls).

use std::collections::BTreeMap;
use std::io;

/// `SIOCETHTOOL` (include/uapi/linux/sockios.h).
const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETHTOOL_SFEATURES: u32 = 0x3b;
/// `ETH_SS_STATS`, the string set of `-S`, and `ETH_SS_FEATURES`, the features' names.
const ETH_SS_STATS: u32 = 1;
const ETH_SS_FEATURES: u32 = 4;
const ETH_GSTRING_LEN: usize = 32;
/// What a driver may report (ethtool's own bound is memory; this keeps a bad count from
/// allocating gigabytes).
const MAX_STATS: usize = 1 << 16;

/// `struct ifreq` with `ifr_data` (40 bytes on 64-bit).
#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// One ioctl on `dev` with `buf` (which starts with the command word).
fn ethtool(dev: &str, buf: *mut libc::c_void) -> io::Result<()> {
    if dev.is_empty() || dev.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {dev:?}")));
    }
    let mut ifr = IfreqData { name: [0; libc::IFNAMSIZ], data: buf, _pad: [0; 16] };
    for (d, s) in ifr.name.iter_mut().zip(dev.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: plain socket(2); closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `ifr` is a valid ifreq whose data points at a buffer the caller sized for
    // the command it holds.
    let r = unsafe { libc::ioctl(fd, SIOCETHTOOL as _, &mut ifr as *mut IfreqData) };
    let err = io::Error::last_os_error();
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    if r < 0 {
        Err(err)
    } else {
        Ok(())
    }
}

/// `ethtool -S dev`: each statistic's name and value, in the calling thread's namespace.
pub fn stats(dev: &str) -> io::Result<BTreeMap<String, u64>> {
    let names = strings(dev, ETH_SS_STATS)?;
    let n = names.len();
    // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
    let mut values = vec![0u64; 1 + n];
    values[0] = if cfg!(target_endian = "big") { (u64::from(ETHTOOL_GSTATS) << 32) | n as u64 } else { u64::from(ETHTOOL_GSTATS) | (n as u64) << 32 };
    ethtool(dev, values.as_mut_ptr().cast())?;
    Ok(names.into_iter().zip(values[1..].iter().copied()).filter(|(k, _)| !k.is_empty()).collect())
}

/// An offload `ethtool -K` sets by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offload {
    Tso,
    Gso,
    Gro,
}

impl Offload {
    /// ethtool's name (`-K NAME on`).
    pub fn name(self) -> &'static str {
        match self {
            Offload::Tso => "tso",
            Offload::Gso => "gso",
            Offload::Gro => "gro",
        }
    }

    /// The kernel features it stands for, as ethtool's `off_flag_def[]` matches them
    /// (a `*` matches any run of characters): tso is every `tx-tcp*-segmentation`,
    /// including the ECN, mangleid, IPv6 and AccECN ones.
    fn pattern(self) -> &'static str {
        match self {
            Offload::Tso => "tx-tcp*-segmentation",
            Offload::Gso => "tx-generic-segmentation",
            Offload::Gro => "rx-gro",
        }
    }
}

/// `name` matches `pattern` with at most one `*`.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail),
    }
}

/// The names of string set `set` (`ETHTOOL_GSSET_INFO`, then `ETHTOOL_GSTRINGS`).
fn strings(dev: &str, set: u32) -> io::Result<Vec<String>> {
    // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[1]; }
    let mut sset = [0u32; 5];
    sset[0] = ETHTOOL_GSSET_INFO;
    let low = if cfg!(target_endian = "big") { 3 } else { 2 };
    sset[low] = 1 << set;
    ethtool(dev, sset.as_mut_ptr().cast())?;
    // The kernel clears the set's bit when the driver has no such set (loopback's
    // statistics: ethtool prints "no stats available").
    if sset[low] & (1 << set) == 0 {
        return Err(io::Error::new(io::ErrorKind::Unsupported, format!("{dev} has no string set {set} (no driver statistics)")));
    }
    let n = sset[4] as usize;
    if n > MAX_STATS {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{dev} reports {n} strings in set {set}")));
    }
    // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
    let mut buf = vec![0u32; 3 + n * ETH_GSTRING_LEN / 4];
    buf[0] = ETHTOOL_GSTRINGS;
    buf[1] = set;
    buf[2] = n as u32;
    ethtool(dev, buf.as_mut_ptr().cast())?;
    // The kernel may give fewer than asked (the set shrank in between): its count.
    let got = (buf[2] as usize).min(n);
    let bytes: Vec<u8> = buf[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok((0..got).map(|i| slot_name(&bytes[i * ETH_GSTRING_LEN..(i + 1) * ETH_GSTRING_LEN])).collect())
}

/// A NUL-padded 32-byte name, trimmed as `ethtool -S` prints it.
fn slot_name(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).trim().to_string()
}

/// `ethtool -K dev NAME on|off ...`, in the calling thread's namespace, as ethtool does
/// it: the feature names (`ETH_SS_FEATURES`), which of them the device can change
/// (`ETHTOOL_GFEATURES`' `available`), and one `ETHTOOL_SFEATURES` with those matched.
/// Then the active features are read back, as ethtool compares them: an offload of
/// `set` that no feature of the device now shows as asked (none of its features can be
/// changed, or the device has none of that name) is an error naming it, where ethtool
/// says "Could not change any device features".
pub fn set_offloads(dev: &str, set: &[(Offload, bool)]) -> io::Result<()> {
    let names = strings(dev, ETH_SS_FEATURES)?;
    let words = names.len().div_ceil(32);
    // struct ethtool_gfeatures { u32 cmd; u32 size; {available, requested, active, never_changed}[size] }
    let mut g = vec![0u32; 2 + 4 * words];
    g[0] = ETHTOOL_GFEATURES;
    g[1] = words as u32;
    ethtool(dev, g.as_mut_ptr().cast())?;
    // struct ethtool_sfeatures { u32 cmd; u32 size; {valid, requested}[size] }
    let mut sf = vec![0u32; 2 + 2 * words];
    sf[0] = ETHTOOL_SFEATURES;
    sf[1] = words as u32;
    for (bit, name) in names.iter().enumerate() {
        let (w, m) = (bit / 32, 1u32 << (bit % 32));
        let available = g[2 + 4 * w] & m != 0;
        for &(o, on) in set {
            if available && glob(o.pattern(), name) {
                sf[2 + 2 * w] |= m;
                if on {
                    sf[3 + 2 * w] |= m;
                } else {
                    sf[3 + 2 * w] &= !m;
                }
            }
        }
    }
    ethtool(dev, sf.as_mut_ptr().cast())?;
    g[2..].fill(0);
    ethtool(dev, g.as_mut_ptr().cast())?;
    let active = |bit: usize| g[2 + 4 * (bit / 32) + 2] & (1u32 << (bit % 32)) != 0;
    match not_taken(&names, active, set) {
        None => Ok(()),
        Some(why) => Err(io::Error::other(format!("{dev}: {why}"))),
    }
}

/// The first offload of `set` that none of the features named `names` shows in the asked
/// state (`active(bit)` after the change), with why; None when every one took.
fn not_taken(names: &[String], active: impl Fn(usize) -> bool, set: &[(Offload, bool)]) -> Option<String> {
    set.iter().find_map(|&(o, on)| {
        let matched: Vec<usize> = (0..names.len()).filter(|&b| glob(o.pattern(), &names[b])).collect();
        let state = if on { "on" } else { "off" };
        if matched.is_empty() {
            Some(format!("no feature named {} to turn {state}", o.pattern()))
        } else if matched.iter().all(|&b| active(b) != on) {
            let list: Vec<&str> = matched.iter().map(|&b| names[b].as_str()).collect();
            Some(format!("could not turn {} {state} (fixed on this device)", list.join(", ")))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nul_padded_slots_and_patterns_match_as_ethtools() {
        let mut raw = [0u8; ETH_GSTRING_LEN];
        raw[..12].copy_from_slice(b"peer_ifindex");
        assert_eq!(slot_name(&raw), "peer_ifindex");
        for f in ["tx-tcp-segmentation", "tx-tcp-ecn-segmentation", "tx-tcp6-segmentation", "tx-tcp-accecn-segmentation"] {
            assert!(glob(Offload::Tso.pattern(), f), "{f}");
        }
        for f in ["tx-udp-segmentation", "tx-generic-segmentation", "tx-tcp-segmentation-x"] {
            assert!(!glob(Offload::Tso.pattern(), f), "{f}");
        }
        assert!(glob(Offload::Gso.pattern(), "tx-generic-segmentation"));
        assert!(glob(Offload::Gro.pattern(), "rx-gro") && !glob(Offload::Gro.pattern(), "rx-gro-hw"));
    }

    /// An offload is taken when one of its features now shows the asked state; one
    /// whose features all stayed (fixed) or that the device lacks is named.
    #[test]
    fn an_offload_that_did_not_take_is_named() {
        let names: Vec<String> = ["tx-tcp-segmentation", "tx-tcp6-segmentation", "tx-generic-segmentation", "rx-gro"].map(String::from).into();
        let on = |bits: &'static [usize]| move |b: usize| bits.contains(&b);
        let off = [(Offload::Tso, false), (Offload::Gso, false)];
        assert_eq!(not_taken(&names, on(&[3]), &off), None);
        // tx-tcp6-segmentation stayed on, tx-tcp-segmentation went off: taken, as ethtool has it.
        assert_eq!(not_taken(&names, on(&[1, 3]), &off), None);
        assert_eq!(
            not_taken(&names, on(&[0, 1, 3]), &off).as_deref(),
            Some("could not turn tx-tcp-segmentation, tx-tcp6-segmentation off (fixed on this device)")
        );
        assert_eq!(not_taken(&names, on(&[0]), &[(Offload::Gro, true)]).as_deref(), Some("could not turn rx-gro on (fixed on this device)"));
        assert_eq!(not_taken(&names[..3], on(&[]), &[(Offload::Gro, true)]).as_deref(), Some("no feature named rx-gro to turn on"));
    }

    #[test]
    fn a_missing_device_is_an_error_not_a_panic() {
        assert!(stats("darkbuf-none0").is_err());
        assert!(stats("").is_err());
        assert!(stats("a-name-longer-than-ifnamsiz").is_err());
        assert!(set_offloads("darkbuf-none0", &[(Offload::Gro, true)]).is_err());
    }

    /// loopback has no statistics set: an error that says so (`ethtool -S lo`: "no
    /// stats available").
    #[test]
    fn loopback_has_no_statistics() {
        let e = stats("lo").expect_err("lo has no ETH_SS_STATS");
        assert!(e.to_string().contains("no driver statistics") || e.kind() == io::ErrorKind::PermissionDenied, "{e}");
    }
}
