//! Where a probe's time went after the driver took it, on a veth: tracepoints at the far
//! end, matched to the prober's probes.
//!
//! Over veth the far end's kernel answers the echo, so nothing of ours sees the request
//! arrive. Three tracepoints in a tracing instance of our own, each filtered on the
//! receiving veth's name and the probe's length, do:
//! - `net:napi_gro_receive_entry` (or `net:netif_receive_skb_entry`, when veth hands a
//!   shared skb to `netif_receive_skb()`): `veth_xdp_rcv()` took the request off the
//!   peer's ptr_ring, the simulator's `t_consume`. The driver's TX timestamp to this
//!   is `ping.wait_ring_ms`.
//! - `net:net_dev_queue` of the echo reply on the same device: the far end's stack has
//!   handled the request (GRO, the netfilter rules, `icmp_echo()`), the simulator's
//!   `ping_echo_rcv()`. The consume to this is `ping.wait_consumer_ms`.
//!
//! The instance's clock is `mono` (CLOCK_MONOTONIC, as the prober's), and its text
//! output has microseconds. A probe is matched by order: the ring is FIFO, so among the
//! answered probes the k-th to be stamped by the driver is the k-th request consumed.
//! A consume event between two probes' stamps that no answered probe claims (a probe
//! whose reply was lost, or another packet of the probe's length) is skipped; when
//! such strays are more than a tenth of the matches, nothing is reported.

use std::path::PathBuf;

use crate::trace::{disable_instance, InstanceReaper, Tracefs};

/// The events, as `<system>/<event>` under the instance's `events/`.
const CONSUME_EVENTS: [&str; 2] = ["net/napi_gro_receive_entry", "net/netif_receive_skb_entry"];
const REPLY_EVENT: &str = "net/net_dev_queue";
const ETH_HLEN: u32 = 14;

/// One traced event: CLOCK_MONOTONIC ns (microsecond resolution) and its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FarEndEvent {
    /// The request left the ring (`napi_gro_receive_entry`, `netif_receive_skb_entry`).
    Consumed(u64),
    /// The echo reply was queued for transmit at the far end (`net_dev_queue`).
    Replied(u64),
}

/// A tracing instance with the three events enabled; removed on drop.
pub struct ProbeTrace {
    dir: PathBuf,
    /// Removes the instance if this process is killed (its filters and events would
    /// otherwise stay on every received packet until `check --cleanup`).
    _reaper: InstanceReaper,
    _fs: Tracefs,
}

impl ProbeTrace {
    /// Starts tracing requests of IP length `ip_len` arriving on `dev` and their replies
    /// (`ip_len` + the Ethernet header) leaving it, for about `probes` probes. `tag`
    /// names the instance (`<tag>-probe`, removed by the next run if this one is killed).
    pub fn start(dev: &str, tag: &str, ip_len: u32, probes: u64) -> Result<ProbeTrace, String> {
        let fs = Tracefs::get()?;
        for ev in CONSUME_EVENTS.iter().chain([&REPLY_EVENT]) {
            let (sys, name) = ev.split_once('/').unwrap_or(("net", ev));
            if !fs.has_event(sys, name) {
                return Err(format!("this kernel has no {sys}:{name} tracepoint"));
            }
        }
        let dir = fs.root.join("instances").join(format!("{tag}-probe"));
        let reaper = InstanceReaper::create(&dir)?;
        let t = ProbeTrace { dir, _reaper: reaper, _fs: fs };
        let write = |rel: &str, v: &str| std::fs::write(t.dir.join(rel), v).map_err(|e| format!("{rel} = {v}: {e}"));
        write("trace_clock", "mono")?;
        // A probe is two events in the ring buffer, about 150 bytes together, mostly on
        // the receiving CPU: room for each probe's twice over (1-64 MiB per CPU). Events
        // are not overwritten, so a buffer that fills loses the last probes, not the first.
        let kb = (probes.saturating_mul(2 * 256) / 1024).clamp(1024, 65_536);
        write("buffer_size_kb", &kb.to_string())?;
        write("options/overwrite", "0")?;
        let consume = format!("name == \"{dev}\" && len == {ip_len}");
        for ev in CONSUME_EVENTS {
            write(&format!("events/{ev}/filter"), &consume)?;
            write(&format!("events/{ev}/enable"), "1")?;
        }
        write(&format!("events/{REPLY_EVENT}/filter"), &format!("name == \"{dev}\" && len == {}", ip_len + ETH_HLEN))?;
        write(&format!("events/{REPLY_EVENT}/enable"), "1")?;
        write("tracing_on", "1")?;
        Ok(t)
    }

    /// Stops tracing and returns the events in time order.
    pub fn finish(self) -> Result<Vec<FarEndEvent>, String> {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        let text = std::fs::read_to_string(self.dir.join("trace")).map_err(|e| format!("reading the probe trace: {e}"))?;
        let mut events = parse_trace(&text);
        events.sort_by_key(|e| match *e {
            FarEndEvent::Consumed(t) | FarEndEvent::Replied(t) => t,
        });
        Ok(events)
    }
}

impl Drop for ProbeTrace {
    fn drop(&mut self) {
        disable_instance(&self.dir);
        for ev in CONSUME_EVENTS.iter().chain([&REPLY_EVENT]) {
            let _ = std::fs::write(self.dir.join(format!("events/{ev}/filter")), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The events of a tracing instance's `trace` text, in file order. A line is
/// `<task>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <fields>`; others (the
/// `#` header) are skipped.
pub fn parse_trace(text: &str) -> Vec<FarEndEvent> {
    let mut v = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let kind = if line.contains(": napi_gro_receive_entry:") || line.contains(": netif_receive_skb_entry:") {
            FarEndEvent::Consumed
        } else if line.contains(": net_dev_queue:") {
            FarEndEvent::Replied
        } else {
            continue;
        };
        // The stamp is the last "secs.usecs:" token before the event name.
        let Some(head) = line.split(": ").next() else { continue };
        let Some(stamp) = head.split_whitespace().last() else { continue };
        if let Some(ns) = parse_stamp(stamp) {
            v.push(kind(ns));
        }
    }
    v
}

/// `secs.frac` (any number of fractional digits, up to 9 used) as ns.
fn parse_stamp(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let scale = 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(frac.parse::<u64>().ok()? * scale)
}

/// One answered probe as the matching needs it: when the driver stamped it and when its
/// reply came back (CLOCK_MONOTONIC ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StampedProbe {
    pub driver_ns: u64,
    pub reply_ns: u64,
}

/// The far end's times of each probe: (consumed, replied) ns, or None when no event
/// pair fits it. `probes` are the answered, stamped probes in send order; `events` in
/// time order. Returns None overall when the strays (consume events no probe claims)
/// are more than a tenth of the matches: another packet has the probe's length.
pub fn match_probes(probes: &[StampedProbe], events: &[FarEndEvent]) -> Option<Vec<Option<(u64, u64)>>> {
    let consumed: Vec<u64> = events.iter().filter_map(|e| if let FarEndEvent::Consumed(t) = *e { Some(t) } else { None }).collect();
    let replied: Vec<u64> = events.iter().filter_map(|e| if let FarEndEvent::Replied(t) = *e { Some(t) } else { None }).collect();
    let (mut ci, mut ri) = (0, 0);
    let (mut matched, mut strays) = (0usize, 0usize);
    // Microsecond stamps against nanosecond ones: allow the truncation.
    const SLACK_NS: u64 = 1_000;
    let mut out = Vec::with_capacity(probes.len());
    for p in probes {
        // Consume events before this probe's stamp belong to nothing we answered.
        while ci < consumed.len() && consumed[ci] + SLACK_NS < p.driver_ns {
            ci += 1;
            strays += 1;
        }
        let Some(&c) = consumed.get(ci).filter(|&&c| c <= p.reply_ns) else {
            out.push(None);
            continue;
        };
        ci += 1;
        while ri < replied.len() && replied[ri] + SLACK_NS < c {
            ri += 1;
        }
        match replied.get(ri).filter(|&&r| r <= p.reply_ns) {
            Some(&r) => {
                ri += 1;
                matched += 1;
                out.push(Some((c, r.max(c))));
            }
            None => out.push(None),
        }
    }
    if matched == 0 || strays * 10 > matched {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use FarEndEvent::{Consumed, Replied};

    const MS: u64 = 1_000_000;

    #[test]
    fn trace_lines_are_parsed() {
        let text = "# tracer: nop\n#\n\
            dkb-threaded-4242 [001] b..1.  1234.567890: napi_gro_receive_entry: dev=dkb2r napi_id=0x0 queue_mapping=1 skbaddr=000000009a2b len=84\n\
            napi/dkb2r-4242 [001] ..s1.  1234.568000: net_dev_queue: dev=dkb2r skbaddr=000000001234 len=98\n\
            ping-7 [000] ..... 1234.5: netif_receive_skb_entry: dev=dkb2r len=84\n\
            garbage line\n";
        assert_eq!(parse_trace(text), vec![Consumed(1_234_567_890_000), Replied(1_234_568_000_000), Consumed(1_234_500_000_000)]);
        assert_eq!(parse_stamp("1.000000001"), Some(1_000_000_001));
        assert_eq!(parse_stamp("1."), None);
        assert_eq!(parse_stamp("x.5"), None);
    }

    fn probe(driver_ms: u64, reply_ms: u64) -> StampedProbe {
        StampedProbe { driver_ns: driver_ms * MS, reply_ns: reply_ms * MS }
    }

    #[test]
    fn probes_match_the_far_ends_events_in_order() {
        // Three probes 10 ms apart, each 25 ms in the ring: the second is consumed after
        // the third was stamped, and the order alone tells them apart.
        let probes = [probe(0, 27), probe(10, 37), probe(20, 47)];
        let ev = [Consumed(25 * MS), Replied(26 * MS), Consumed(35 * MS), Replied(36 * MS), Consumed(45 * MS), Replied(46 * MS)];
        let m = match_probes(&probes, &ev).unwrap();
        assert_eq!(m, vec![Some((25 * MS, 26 * MS)), Some((35 * MS, 36 * MS)), Some((45 * MS, 46 * MS))]);
    }

    #[test]
    fn a_packet_of_the_probes_length_before_its_stamp_is_a_stray() {
        let probes: Vec<StampedProbe> = (0..20).map(|k| probe(10 * k + 5, 10 * k + 9)).collect();
        let mut ev = Vec::new();
        for k in 0..20 {
            ev.extend([Consumed((10 * k + 7) * MS), Replied((10 * k + 8) * MS)]);
        }
        // One stray before the first probe: skipped, everything still matches.
        let mut one = vec![Consumed(MS)];
        one.extend(ev.iter().copied());
        let m = match_probes(&probes, &one).unwrap();
        assert!(m.iter().all(|x| x.is_some()));
        assert_eq!(m[0], Some((7 * MS, 8 * MS)));
        // A stray before every probe: the length is not the probes' alone.
        let mut many = Vec::new();
        for k in 0..20 {
            many.extend([Consumed((10 * k + 1) * MS), Consumed((10 * k + 7) * MS), Replied((10 * k + 8) * MS)]);
        }
        assert_eq!(match_probes(&probes, &many), None);
    }

    #[test]
    fn a_probe_without_events_before_its_reply_is_unmatched() {
        let probes = [probe(0, 5), probe(10, 15)];
        // The first probe's events are missing (the buffer started late): the second's
        // are after the first's reply, so the first stays unmatched.
        let ev = [Consumed(12 * MS), Replied(13 * MS)];
        assert_eq!(match_probes(&probes, &ev), Some(vec![None, Some((12 * MS, 13 * MS))]));
        assert_eq!(match_probes(&probes, &[]), None);
    }
}
