//! Voice calls (`[[traffic]] kind = "voip"`): each call an isochronous RTP stream in
//! each direction, as a phone's media thread sends one: a `sendmsg()` of `size` + 12
//! bytes (`udp_sendmsg()`) every `interval` on an absolute schedule (not paced by
//! anything it receives), from `start`.
//!
//! One socket per stream. This host's stream is sent by a process on this host, as
//! irtt's client is (see [`super::irtt`]); the far host's by a process on the far host
//! on its own schedule, through the far host's qdisc, BQL, ring and wire: a sender,
//! not an echo (irtt's server replies when a request arrives, so its replies carry the
//! way up's jitter; a phone's stream does not). Where the far host's transmit path is
//! not modelled (veth, tun, `[lan]` on veth: the pinger's and irtt's replies come back
//! by the profile's constant) the far host's stream is not sent and its metrics are
//! null with the reason.
//!
//! Each packet's fate is kept per sequence number in a record reserved for every
//! packet the schedule can send, so sending never allocates; the far end's receive
//! (`udp_rcv()` on the receiving host) stamps it, `kfree_skb()` anywhere marks it
//! dropped. The simulator knows each packet's true times: no clock to synchronise.

use crate::arena::{Destructor, PktInfo, Proto};
use crate::event::Event;
use crate::id::{DevId, HostId, SockId, TaskId};
use crate::sock::iso::{iso_dgram, IsoSchedule};
use crate::sock::{Outgoing, Sock, SockKind};
use crate::world::{Sockets, World};
use darkbuf_measure::voip::{voip_report, VoipEntry};
use darkbuf_scenario::{udp_frame_len, Voip};

pub use darkbuf_measure::voip::{VoipFate, VoipRec};

/// Why the far host's stream has no metrics where its transmit path is not modelled.
pub const DOWN_UNMODELLED: &str =
    "the far end's transmit path is not modelled on this device (tun, or veth behind a [lan] router: replies come back by the profile's constant); device.driver = \"nic\" or \"veth\" models it";

pub struct VoipSock {
    /// The entry's index among the scenario's voip entries, and whether this is the
    /// far host's stream.
    pub entry: u16,
    pub down: bool,
    /// The stream cannot be sent (its sender's path is not modelled): no packet, its
    /// metrics null with [`DOWN_UNMODELLED`].
    pub unmodelled: bool,
    /// The entry (codec, interval, playout buffer) for the report.
    pub spec: Box<Voip>,
    pub frame_len: u32,
    pub dscp: u8,
    pub flow: u32,
    /// When its packets fall due, and those due and not sent yet.
    pub sched: IsoSchedule,
    /// `sendmsg()` failed with -ENOBUFS (the qdisc dropped the packet).
    pub send_errors: u64,
    /// Per sequence number, the packet's record.
    pub recs: Vec<VoipRec>,
}

impl VoipSock {
    /// Stream `down` of call `call` of entry `v` (traffic entry `traffic_index`, voip
    /// entry `entry`), starting at `start_ns`, in a run ending at `end_ns`.
    #[allow(clippy::too_many_arguments)]
    pub fn new_sock(v: &Voip, traffic_index: u16, entry: u16, call: u32, down: bool, start_ns: u64, task: TaskId, dev: DevId, end_ns: u64) -> Sock {
        let interval_ns = v.interval_ns.max(1);
        let stop_ns = v.stop_ns.unwrap_or(end_ns).min(end_ns);
        let slots = stop_ns.saturating_sub(start_ns) / interval_ns + 1;
        let voip = VoipSock {
            entry,
            down,
            unmodelled: false,
            spec: Box::new(v.clone()),
            frame_len: udp_frame_len(v.udp_payload()),
            dscp: v.dscp,
            // A flood's scheme: the traffic index from bit 16, the stream below it.
            flow: (traffic_index as u32) << 16 | (2 * call + down as u32),
            sched: IsoSchedule::new(interval_ns, stop_ns),
            send_errors: 0,
            recs: Vec::with_capacity(slots as usize),
        };
        Sock { task, dev, far_host: HostId(0), host: HostId(0), wmem_alloc: 0, sndbuf: u64::MAX, blocked: false, last_send_dropped: false, kind: SockKind::Voip(voip) }
    }
}

impl Sockets {
    fn voip(&mut self, s: SockId) -> &mut VoipSock {
        match &mut self.all[s].kind {
            SockKind::Voip(v) => v,
            _ => unreachable!("socket {s} is a voice stream's"),
        }
    }
}

impl World {
    /// One packet, if one is due: sequence number = its record's index.
    pub(super) fn voip_sendmsg(&mut self, s: SockId) -> Option<Outgoing> {
        let now = self.now;
        let v = self.socks.voip(s);
        if !v.sched.take() {
            return None;
        }
        let seq = v.recs.len() as u32;
        v.recs.push(VoipRec { t_send: now, ..VoipRec::default() });
        let skb = iso_dgram(v.frame_len, v.flow, v.dscp);
        let cost_ns = self.profile.costs.ping_send_ns;
        Some(Outgoing { skb, proto: Proto::Udp, destructor: Destructor::None, cost_ns, seq })
    }

    /// The send timer fired: one more packet is due; the next is armed one interval
    /// later while the schedule lasts.
    pub(super) fn voip_timer(&mut self, s: SockId) {
        let now = self.now;
        let task = self.socks[s].task;
        if let Some(next) = self.socks.voip(s).sched.fire(now) {
            self.events.push(next, Event::TaskTimer(task));
        }
    }

    /// The packet reached the other end's socket at `t`.
    pub(super) fn voip_rcv(&mut self, info: &PktInfo, t: u64) {
        let rec = &mut self.socks.voip(info.sock).recs[info.seq as usize];
        rec.t_recv = t;
        rec.fate = VoipFate::Received;
    }

    /// A packet of stream `info.sock` was dropped (`kfree_skb()`).
    pub(crate) fn voip_dropped(&mut self, info: &PktInfo) {
        self.socks.voip(info.sock).recs[info.seq as usize].fate = VoipFate::Dropped;
    }

    /// Each voice stream, in socket order (entry by entry, call by call).
    pub fn voip_socks(&self) -> impl Iterator<Item = &VoipSock> {
        self.socks.iter().filter_map(|s| match &s.kind {
            SockKind::Voip(v) => Some(v),
            _ => None,
        })
    }

    /// The `voip.*` metrics (see `darkbuf_measure::voip::voip_report`); nothing when
    /// the scenario has no voice.
    pub(crate) fn voip_metrics(&self, out: &mut darkbuf_measure::Out) {
        let mut entries: Vec<VoipEntry<'_>> = Vec::new();
        for v in self.voip_socks() {
            if entries.len() <= v.entry as usize {
                entries.push(VoipEntry { spec: &v.spec, up: Vec::new(), down: Vec::new(), up_why: None, down_why: None });
            }
            let e = &mut entries[v.entry as usize];
            let (streams, why) = if v.down { (&mut e.down, &mut e.down_why) } else { (&mut e.up, &mut e.up_why) };
            match v.unmodelled {
                true => *why = Some(DOWN_UNMODELLED.into()),
                false => streams.push(&v.recs[..]),
            }
        }
        for e in &mut entries {
            let d = e.spec.direction;
            let not_sent = |dir: &str| Some(format!("this entry sends no {dir} stream (direction = \"{}\")", format!("{d:?}").to_lowercase()));
            if !d.sends_up() {
                e.up_why = not_sent("up");
            }
            if !d.sends_down() {
                e.down_why = not_sent("down");
            }
        }
        let (values, why) = voip_report(&entries, self.cfg.start, self.cfg.end);
        out.m.extend(values);
        out.why.extend(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_measure::Profile;

    fn world(text: &str, noise: Option<f64>) -> World {
        let scn = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let mut p = Profile::load("seed-vm").unwrap();
        if let Some(n) = noise {
            p.noise = n;
        }
        let mut w = World::new(&scn, p, scn.seed).unwrap();
        w.run();
        w
    }

    /// Every packet a stream sends is received, dropped or still in flight at the end;
    /// the schedule sends one per interval from its call's start; a flood that
    /// overfills this host's 20-packet pfifo drops some of the up stream's packets and
    /// none of the far host's.
    #[test]
    fn packets_are_conserved_and_drops_land_on_their_stream() {
        let text = "duration = \"1s\"\nwarmup = \"200ms\"\n[machine]\ncpus = 4\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n\
                    [qdisc]\nkind = \"pfifo\"\nlimit = 20\n[path]\ndelay = \"5ms\"\n\
                    [[traffic]]\nkind = \"voip\"\ncalls = 2\ndscp = 0\n[[traffic]]\nkind = \"udp\"\nrate = \"110Mbit\"\ncpu = 2\n";
        let w = world(text, None);
        let socks: Vec<&VoipSock> = w.voip_socks().collect();
        assert_eq!(socks.len(), 4, "2 calls x 2 directions");
        for v in &socks {
            let count = |f: VoipFate| v.recs.iter().filter(|r| r.fate == f).count();
            let (rx, dropped, inflight) = (count(VoipFate::Received), count(VoipFate::Dropped), count(VoipFate::InFlight));
            assert_eq!(rx + dropped + inflight, v.recs.len());
            // 1.2 s from 0 (call 0) or 10 ms (call 1) every 20 ms.
            assert!(v.recs.len() == 60 || v.recs.len() == 61, "{}", v.recs.len());
            // An absolute schedule: packet n never leaves before start + n x 20 ms.
            let start = v.recs[0].t_send - v.recs[0].t_send % 10_000_000;
            assert!(v.recs.iter().enumerate().all(|(n, r)| r.t_send >= start + n as u64 * 20_000_000));
            if v.down {
                assert_eq!(dropped, 0, "the far host's queue is idle");
            } else {
                assert!(dropped > 0, "the flood overfills this host's pfifo");
            }
            assert!(inflight <= 1);
        }
    }

    /// Without cost noise an idle path delays every packet alike: RFC 3550's jitter is
    /// exactly 0 and the one-way delay's percentiles are one value.
    #[test]
    fn an_idle_path_without_noise_has_no_jitter() {
        let text = "duration = \"1s\"\nwarmup = \"200ms\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[path]\ndelay = \"5ms\"\n[[traffic]]\nkind = \"voip\"\n";
        let w = world(text, Some(0.0));
        let mut out = darkbuf_measure::Out::default();
        w.voip_metrics(&mut out);
        for d in ["up", "down"] {
            let g = |k: &str| out.m[&format!("voip.{d}.{k}")].unwrap();
            assert_eq!(g("jitter_ms"), 0.0, "{d}");
            assert_eq!(g("owd_p50_ms"), g("owd_max_ms"), "{d}");
            assert_eq!(g("loss_pct"), 0.0, "{d}");
            assert!((50.0..=51.0).contains(&g("packets")), "{d}: 200 ms to 1.2 s every 20 ms, the last maybe in flight");
            // Ta = 20 ms packetization + the delay + 60 ms playout buffer.
            assert!((g("mouth_to_ear_ms") - 80.0 - g("owd_p50_ms")).abs() < 1e-9, "{d}");
        }
    }

    /// tun: the far end's stream is not modelled (the tap's far end is its reader); its
    /// metrics are null with why. (veth's peer namespace sends it: tests/veth_download.rs.)
    #[test]
    fn a_tap_has_no_far_stream() {
        let w = world("duration = \"200ms\"\n[device]\ndriver = \"tun\"\n[[traffic]]\nkind = \"voip\"\n", None);
        let mut out = darkbuf_measure::Out::default();
        w.voip_metrics(&mut out);
        assert_eq!(out.m["voip.down.mos"], None);
        assert_eq!(out.why["voip.down.mos"], DOWN_UNMODELLED);
        assert!(out.m["voip.up.mos"].is_some());
        assert_eq!(out.m["voip.mos"], out.m["voip.up.mos"]);
        assert!(w.voip_socks().filter(|v| v.down).all(|v| v.recs.is_empty()));
    }
}
