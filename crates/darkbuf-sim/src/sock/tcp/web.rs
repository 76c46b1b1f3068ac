//! `[[traffic]] kind = "web"`: short TCP flows (issue 54, docs/web.md).
//!
//! A generator per entry opens connections at Poisson arrivals. Each connection is a
//! TCP socket of its own, as a client's `socket()`, `connect()`, `write(size)`,
//! `close()` makes one: the three-way handshake (`connect.rs`), slow start from the
//! initial window (IW10), `size` bytes in writes of at most 128 KB, and the close.
//! The FIN is not a segment of its own: `tcp_send_fin()` sets it on the unsent tail skb
//! when there is one, and the receiver's reading of the last byte, which ends the
//! FCT, does not wait for it (neither for the far end's FIN and the TIME_WAIT after).
//!
//! The FCT runs from `connect()` (the arrival) to the receiver having read the
//! flow's last byte (`rcv_nxt` reaching the size, read by the instant receiver in the
//! softirq that queues it).
//!
//! Slots: a connection's socket and task are kept once it is done, on the
//! generator's free list, and the next arrival reuses them; a slot is free once its
//! data is all acknowledged, no packet of its own is alive anywhere (the arena counts
//! each socket's TCP packets), no socket work is queued and its task sleeps. So the
//! sockets a run holds are the most connections ever open at once plus those
//! draining, not its arrivals, and no old segment meets a new connection.

use super::{Conn, TcpSock};
use crate::cpu::{Task, TaskKind, TaskState};
use crate::event::Event;
use crate::id::SockId;
use crate::sock::{Sock, SockKind};
use crate::world::World;
use darkbuf_measure::fct::{Fct, FctCounts};
use darkbuf_scenario::web::{Arrivals, WebFlows};
use darkbuf_scenario::TcpFlow;

/// A web connection's own state.
#[derive(Clone, Debug)]
pub struct WebConn {
    /// Its generator (`Sockets::web`).
    pub generator: u16,
    /// The bytes the application writes before it closes.
    pub size: u64,
    /// When the application called `connect()`, ns.
    pub t_connect: u64,
    /// The receiver has read all of it (or the slot is idle).
    pub done: bool,
}

/// Marks `sock` (a TCP socket) as an idle web slot: nothing to write, no connect.
pub(crate) fn mark_idle(sock: &mut Sock) {
    if let SockKind::Tcp(t) = &mut sock.kind {
        t.web = Some(Box::new(WebConn { generator: 0, size: 0, t_connect: 0, done: true }));
        (t.start_ns, t.stop_ns) = (0, 0);
    }
}

/// The ideal FCT's path, one definition for both backends (darkbuf-scenario).
pub use darkbuf_scenario::web::IdealPath;
// The ideal FCT's SYN is the handshake's own frame.
const _: () = assert!(super::connect::SYN_LEN as u64 == darkbuf_scenario::web::SYN_FRAME_LEN);

/// One web entry's generator.
pub struct WebGen {
    pub(crate) traffic_index: u16,
    index: u16,
    tcp: TcpFlow,
    pub(crate) buckets: Vec<u64>,
    fq: bool,
    pub(crate) ideal: IdealPath,
    /// The entry's first slot, whose hosts, device and CPU later slots copy.
    template: SockId,
    /// The seeded arrivals and sizes (the kernel backend draws the same).
    arrivals: Arrivals,
    free: Vec<SockId>,
    /// Done connections waiting for their last packets to leave.
    closing: Vec<SockId>,
    /// Sockets this generator has, and connections open now.
    pub(crate) slots: u32,
    open: u32,
    next_flow: u32,
    seed: u64,
    /// The measured window's flows (see [`FctCounts`]) and its completions.
    pub(crate) counts: FctCounts,
    pub(crate) done: Vec<Fct>,
    /// Why the generator stopped opening connections (the open bound was reached).
    pub(crate) overflow: Option<String>,
}

impl WebGen {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(index: u16, traffic_index: u16, w: &WebFlows, fq: bool, _mtu: u32, ideal: IdealPath, template: SockId, seed: u64) -> WebGen {
        WebGen {
            traffic_index,
            index,
            tcp: w.tcp.clone(),
            buckets: w.size_buckets.clone(),
            fq,
            ideal,
            template,
            // Its own stream, from the run's seed: adding an entry changes no other's draws.
            arrivals: Arrivals::new(w, traffic_index, seed),
            free: vec![template],
            closing: Vec::new(),
            slots: 1,
            open: 0,
            next_flow: 0,
            seed,
            counts: FctCounts::default(),
            done: Vec::new(),
            overflow: None,
        }
    }
}

impl World {
    /// Time 0: each generator's first arrival, one gap after its `start`.
    pub(crate) fn web_start(&mut self) {
        let end = self.cfg.end;
        for g in 0..self.socks.web.len() {
            self.socks.web[g].arrivals.set_end(end);
            if let Some(at) = self.socks.web[g].arrivals.next_at() {
                self.events.push(at, Event::WebArrival(g as u16));
            }
        }
    }

    /// `Event::WebArrival`: generator `g`'s next connection opens now; the one after
    /// is scheduled.
    pub(crate) fn web_arrival(&mut self, g: u16) {
        let (now, end) = (self.now, self.cfg.end);
        let gen = &mut self.socks.web[g as usize];
        gen.arrivals.set_end(end);
        let (_, size) = gen.arrivals.open();
        if let Some(at) = gen.arrivals.next_at() {
            self.events.push(at, Event::WebArrival(g));
        }
        self.web_reclaim(g);
        let gen = &mut self.socks.web[g as usize];
        if gen.open >= darkbuf_scenario::limits::MAX_WEB_OPEN {
            if gen.overflow.is_none() {
                gen.overflow = Some(format!(
                    "traffic entry {} (kind = \"web\") had {} connections open at {:.3} s, the simulator's bound (MAX_WEB_OPEN): its arrivals outpace what the path completes; lower `arrivals` or the sizes",
                    gen.traffic_index,
                    gen.open,
                    now as f64 / 1e9
                ));
            }
            return;
        }
        let s = match gen.free.pop() {
            Some(s) => s,
            None => self.web_new_slot(g),
        };
        self.web_connect(g, s, size);
    }

    /// A new slot for generator `g`: a socket and its (sleeping) process, on the
    /// template slot's CPU, hosts and path.
    fn web_new_slot(&mut self, g: u16) -> SockId {
        let template = self.socks.web[g as usize].template;
        let s = SockId::from_index(self.socks.len());
        let cpu = self.sched.tasks[self.socks[template].task].cpu;
        let task = self.sched.tasks.push(Task { kind: TaskKind::Proc(s), state: TaskState::Sleeping, cpu, wake_preempt: false });
        let ntasks = self.sched.tasks.len();
        for c in self.sched.cpus.iter_mut() {
            c.runnable.grow_to(ntasks);
        }
        let sk = &self.socks[template];
        let (dev, host, far_host) = (sk.dev, sk.host, sk.far_host);
        let gen = &self.socks.web[g as usize];
        let mtu = gen.ideal.mss as u32 + 52;
        let mut sock = TcpSock::new_sock(&gen.tcp, gen.traffic_index, 0, task, dev, None, mtu, self.profile.max_tcp_header, self.cfg.end, gen.seed);
        (sock.host, sock.far_host) = (host, far_host);
        mark_idle(&mut sock);
        self.socks.push(sock);
        let link = self.socks.link[template.idx()];
        self.socks.link.push(link);
        self.socks.web[g as usize].slots += 1;
        s
    }

    /// The application of slot `s` calls `connect()` now for a flow of `size` bytes:
    /// a fresh connection in the slot, its task woken to send the SYN.
    fn web_connect(&mut self, g: u16, s: SockId, size: u64) {
        let (now, start, end) = (self.now, self.cfg.start, self.cfg.end);
        let template = self.socks.web[g as usize].template;
        let ack_dev = match &self.socks[template].kind {
            SockKind::Tcp(t) => t.ack_dev,
            _ => None,
        };
        let gen = &mut self.socks.web[g as usize];
        let flow = gen.next_flow;
        gen.next_flow = gen.next_flow.wrapping_add(1);
        gen.open += 1;
        gen.counts.open_peak = gen.counts.open_peak.max(gen.open as u64);
        if now >= start {
            gen.counts.started += 1;
            gen.counts.started_bytes += size;
        }
        let mut f = gen.tcp.clone();
        (f.start_ns, f.stop_ns) = (now, None);
        let (traffic_index, fq, index) = (gen.traffic_index, gen.fq, gen.index);
        // Each connection's own stream (BBR's gain-cycle phase).
        let seed = gen.seed ^ ((traffic_index as u64) << 32 | flow as u64).wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        let old = &self.socks[s];
        let (task, dev, host, far_host) = (old.task, old.dev, old.host, old.far_host);
        let mtu = self.socks.web[g as usize].ideal.mss as u32 + 52;
        let mut sock = TcpSock::new_sock(&f, traffic_index, flow, task, dev, ack_dev, mtu, self.profile.max_tcp_header, end, seed);
        (sock.host, sock.far_host) = (host, far_host);
        if let SockKind::Tcp(t) = &mut sock.kind {
            if fq {
                t.set_pacing_fq();
            }
            t.web = Some(Box::new(WebConn { generator: index, size, t_connect: now, done: false }));
        }
        self.socks[s] = sock;
        self.wake_task(task);
    }

    /// The receiver of web connection `s` read up to `rcv_nxt` at `t`: once that is
    /// the whole flow, its FCT is taken and the connection closes.
    pub(crate) fn web_read(&mut self, s: SockId, t: u64) {
        let (start, end) = (self.cfg.start, self.cfg.end);
        let tp = self.socks.tcp(s);
        let rcv_nxt = tp.rcv.rcv_nxt as u64;
        let Some(w) = tp.web.as_mut() else { return };
        if w.done || rcv_nxt < w.size || t > end {
            return;
        }
        w.done = true;
        let (g, size, t0) = (w.generator as usize, w.size, w.t_connect);
        let gen = &mut self.socks.web[g];
        gen.open -= 1;
        if t0 >= start {
            let ideal_ns = gen.ideal.ideal_ns(size);
            gen.done.push(Fct { size, fct_ns: t - t0, ideal_ns });
        }
        gen.closing.push(s);
    }

    /// Moves generator `g`'s done connections whose last packet has left to its free
    /// list.
    fn web_reclaim(&mut self, g: u16) {
        let mut closing = std::mem::take(&mut self.socks.web[g as usize].closing);
        closing.retain(|&s| {
            if !self.web_closed(s) {
                return true;
            }
            self.socks.web[g as usize].free.push(s);
            false
        });
        self.socks.web[g as usize].closing = closing;
    }

    /// Whether done connection `s`'s slot may take a new connection: all its data
    /// acknowledged, no timer of its sender pending, no packet of its own alive, no
    /// socket work queued and its process asleep.
    fn web_closed(&self, s: SockId) -> bool {
        let sk = &self.socks[s];
        let SockKind::Tcp(t) = &sk.kind else { return false };
        t.conn == Conn::Established
            && t.snd_una == t.write_seq
            && t.rto_at.is_none()
            && t.pace_at.is_none()
            && t.work == 0
            && !t.lock.owned
            && sk.wmem_alloc == 0
            && self.pkts.tcp_pkts_of(s) == 0
            && self.sched.tasks[sk.task].state == TaskState::Sleeping
    }

    /// The measured window's `web.*` metrics over every web entry.
    pub(crate) fn web_metrics(&self, out: &mut darkbuf_measure::Out) {
        if self.socks.web.is_empty() {
            return;
        }
        let mut counts = FctCounts::default();
        let mut flows = Vec::new();
        for gen in &self.socks.web {
            counts.started += gen.counts.started;
            counts.started_bytes += gen.counts.started_bytes;
            counts.open_peak += gen.counts.open_peak;
            flows.extend_from_slice(&gen.done);
        }
        // The connections started in the window and not done, counted from the
        // sockets themselves (the conservation check: started = completed + open).
        counts.open = self.web_open_in_window();
        let no_ideal = darkbuf_scenario::web::NO_IDEAL;
        darkbuf_measure::fct::web_metrics(out, &counts, &flows, &self.socks.web[0].buckets, self.cfg.end - self.cfg.start, no_ideal);
        out.set("web.slots", self.socks.web.iter().map(|g| g.slots as f64).sum());
    }

    /// Web connections started in the measured window that are not done.
    pub(crate) fn web_open_in_window(&self) -> u64 {
        let start = self.cfg.start;
        self.socks
            .iter()
            .filter(|sk| matches!(&sk.kind, SockKind::Tcp(t) if t.web.as_ref().is_some_and(|w| !w.done && w.t_connect >= start)))
            .count() as u64
    }

    /// Why the run cannot be reported: a generator reached the bound on open
    /// connections.
    pub(crate) fn web_overflow(&self) -> Option<String> {
        self.socks.web.iter().find_map(|g| g.overflow.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use darkbuf_measure::Profile;

    /// A world with one web entry (100 Mbit NIC, 5 ms each way, pfifo) whose own
    /// arrivals come too rarely to matter (`arrivals`), with the seed-vm profile or,
    /// `zero_cost`, every host cost 0 and no noise, and no interrupt moderation
    /// (`tx_usecs = 0`): only the wire and the delay take time.
    fn world(arrivals: &str, qdisc: &str, duration: &str, zero_cost: bool, seed: u64) -> World {
        let text = format!(
            "duration = \"{duration}\"\nwarmup = \"0s\"\n[device]\ndriver = \"nic\"\nrate = \"100Mbit\"\n[device.coalesce]\ntx_usecs = 0\ntx_frames = 0\nadaptive_tx = false\n[qdisc]\nkind = \"{qdisc}\"\n[path]\ndelay = \"5ms\"\n[[traffic]]\nkind = \"web\"\narrivals = \"{arrivals}\"\nsize_dist = \"exponential\"\nsize_mean = \"100KB\"\n"
        );
        let scn = darkbuf_scenario::load_str("t.toml", &text, &[]).unwrap();
        let mut p = Profile::load("seed-vm").unwrap();
        if zero_cost {
            p.noise = 0.0;
            let mut costs = serde_json::to_value(&p.costs).unwrap();
            for v in costs.as_object_mut().unwrap().values_mut() {
                *v = serde_json::json!(0.0);
            }
            p.costs = serde_json::from_value(costs).unwrap();
        }
        World::new(&scn, p, seed).unwrap()
    }

    /// One connection of `size` bytes opened at 1 ms into an otherwise idle run: its FCT.
    fn lone_fct(size: u64) -> u64 {
        let mut w = world("0.001/s", "pfifo", "1s", true, 1);
        w.events = crate::event::EventQueue::new(w.sched.cpus.len());
        w.now = 1_000_000;
        let s = w.socks.web[0].template;
        w.web_connect(0, s, size);
        w.run();
        assert_eq!(w.socks.web[0].done.len(), 1, "the flow completed");
        w.socks.web[0].done[0].fct_ns
    }

    /// With no host time, a flow of one initial window (IW10 x 1448 bytes) takes the
    /// handshake's round trip, then its ten frames back to back and the way there:
    /// SYN and SYN-ACK 74 + 24 bytes = 7,840 ns each at 100 Mbit, plus 5 ms each way;
    /// 10 frames of 1448 + 66 + 24 = 1,538 bytes = 123,040 ns each; then 5 ms.
    /// 2 x (7,840 + 5,000,000) + 10 x 123,040 + 5,000,000 = 16,246,080 ns, the ideal FCT.
    #[test]
    fn one_initial_window_takes_the_handshake_and_one_way() {
        assert_eq!(lone_fct(14_480), 16_246_080);
        let ideal = IdealPath { one_way_ns: 5_000_000, fwd_delay_ns: 0, rate_bps: Some(100_000_000), buckets: Vec::new(), mss: 1448, frame_extra: 90 };
        assert_eq!(ideal.ideal_ns(14_480), Some(16_246_080));
    }

    /// Twenty segments: the second ten wait for the first ACK. At the initial pacing
    /// rate `tcp_tso_autosize()` builds 2-segment skbs (`tcp_min_tso_segs`); the far
    /// NIC hands each to the stack when its second frame is in, and the receiver, in
    /// quick-ACK mode, ACKs it at once. The first ACK (66 + 24 bytes, 7,200 ns) thus
    /// reaches the sender 2 x 123,040 + 5,000,000 + 7,200 + 5,000,000 = 10,253,280 ns
    /// after the first flight started; slow start then lets four segments go per ACK,
    /// faster than the wire takes them, so the second flight's ten frames leave back to
    /// back: 10,015,680 + 10,253,280 + 10 x 123,040 + 5,000,000 = 26,499,360 ns.
    #[test]
    fn a_second_window_waits_for_the_first_ack() {
        assert_eq!(lone_fct(28_960), 26_499_360);
    }

    /// Conservation and determinism at 50% load: every connection opened in the
    /// window is completed or still open at its end, the same seed gives the same
    /// flows, and slots are reused (far fewer sockets than connections).
    #[test]
    fn flows_are_conserved_deterministic_and_slots_reused() {
        let run = |seed| {
            let mut w = world("61/s", "pfifo", "3s", false, seed);
            w.run();
            let g = &w.socks.web[0];
            (g.counts.started, g.done.len() as u64, w.web_open_in_window(), g.slots, g.done.iter().map(|f| f.fct_ns).collect::<Vec<_>>())
        };
        let (started, completed, open, slots, fcts) = run(7);
        assert!(started > 100, "{started}");
        assert_eq!(started, completed + open);
        assert!((slots as u64) * 5 < started, "{slots} slots for {started} connections");
        assert_eq!(run(7).4, fcts, "same seed, same FCTs");
        assert_ne!(run(8).4, fcts, "another seed, other arrivals");
    }

    /// Behind a tbf on a veth pair (no line rate) the ideal FCT is the bucket's: tbf
    /// pays each packet's cost before it leaves, and a GSO skb longer than the burst is
    /// cut into segments (`tbf_segment()`), so no flow completes faster than its
    /// frames' cost less the burst. At half load every flow's slowdown is at least 1,
    /// and the queue behind the rate shows in the slower ones.
    #[test]
    fn no_flow_beats_its_ideal_behind_tbf_on_veth() {
        let text = "duration = \"4s\"\nwarmup = \"0s\"\n[device]\ndriver = \"veth\"\n[qdisc]\nkind = \"tbf\"\nrate = \"20mbit\"\nburst = \"10KB\"\nlatency = \"100ms\"\n[[traffic]]\nkind = \"web\"\narrivals = \"30/s\"\nsize_dist = \"exponential\"\nsize_mean = \"40KB\"\n";
        let scn = darkbuf_scenario::load_str("t.toml", text, &[]).unwrap();
        let mut w = World::new(&scn, Profile::load("seed-vm").unwrap(), 1).unwrap();
        w.run();
        // A flow that fits in the burst has an ideal of 0 here (no delay, no line):
        // no slowdown, as `web_metrics()` leaves it out.
        let done = &w.socks.web[0].done;
        let slowdowns: Vec<f64> = done.iter().filter(|f| f.ideal_ns.expect("tbf gives an ideal") > 0).map(|f| f.fct_ns as f64 / f.ideal_ns.unwrap() as f64).collect();
        assert!(slowdowns.len() > 80, "{} flows of {}", slowdowns.len(), done.len());
        let min = slowdowns.iter().copied().fold(f64::INFINITY, f64::min);
        let max = slowdowns.iter().copied().fold(0.0, f64::max);
        assert!(min >= 1.0, "a flow beat its ideal: slowdown {min}");
        assert!(max > 2.0, "no flow queued: largest slowdown {max}");
    }

    /// A done connection's slot takes the next arrival once its last packet has left:
    /// two connections a second apart share one socket, and the second's packets
    /// carry a new flow (a new 4-tuple).
    #[test]
    fn a_closed_slot_is_reused() {
        let mut w = world("0.001/s", "pfifo", "3s", false, 1);
        w.events = crate::event::EventQueue::new(w.sched.cpus.len());
        let s = w.socks.web[0].template;
        w.now = 1_000_000;
        w.web_connect(0, s, 50_000);
        w.events.push(1_000_000_000, Event::WebArrival(0));
        w.run();
        let g = &w.socks.web[0];
        assert_eq!(g.done.len(), 2, "both completed");
        assert_eq!(g.slots, 1, "one socket");
        assert_eq!(w.socks.len(), 1);
        assert_eq!(w.socks.tcp(s).flow_index, 1, "the second connection is flow 1");
    }
}

