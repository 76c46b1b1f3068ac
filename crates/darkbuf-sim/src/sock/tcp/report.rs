//! What `ss -ti`, iperf3 and nstat show of the TCP flows at the end of a run, as the
//! report's `tcp.*` and `tcp.flow.N.*` metrics. Here, beside the socket, because these
//! read its private counters against their values when the measured window started
//! (`TcpSock::start_window()`).

use crate::id::SockId;
use crate::world::World;
use darkbuf_measure::{percentile, Out};

const TCP_IDLE: &str = "the connection was not active in the measured window (no RTT sample, or it had stopped)";

/// The per-flow goodput's distribution over a run's TCP flows (`goodputs`: each flow's
/// bytes read in the measured window of `window_ns`): the nearest-rank percentiles
/// `tcp.flow_goodput_pP_mbps` (P = 1, 10, 50, 90, 99) and Jain's fairness index
/// `tcp.flow_jain`, (sum x)^2 / (n sum x^2), 1 when every flow has the same and 1/n
/// when one has all. Any number of flows has them: with fewer than ten the 10th and
/// 90th percentiles are the slowest and the fastest flow, with one every figure is its
/// own (and Jain's index 1).
fn flow_goodput_spread(out: &mut Out, goodputs: &mut [u64], window_ns: f64) {
    if goodputs.is_empty() {
        return;
    }
    goodputs.sort_unstable();
    for p in [1, 10, 50, 90, 99] {
        if let Some(v) = percentile(goodputs, p as f64) {
            out.set(&format!("tcp.flow_goodput_p{p}_mbps"), v * 8.0 / window_ns * 1e3);
        }
    }
    let sum: f64 = goodputs.iter().map(|&g| g as f64).sum();
    let sum_sq: f64 = goodputs.iter().map(|&g| g as f64 * g as f64).sum();
    if sum_sq == 0.0 {
        out.none("tcp.flow_jain", "no flow delivered anything in the measured window");
    } else {
        out.set("tcp.flow_jain", sum * sum / (goodputs.len() as f64 * sum_sq));
    }
}

impl World {
    /// TCP flow `n`'s own metrics (socket `s`): `tcp.flow.N.*`.
    fn tcp_flow_metrics(&self, out: &mut Out, n: usize, s: SockId) {
        let crate::sock::SockKind::Tcp(t) = &self.socks[s].kind else { return };
        let st = &t.stats;
        let window = (self.cfg.end - self.cfg.start) as f64;
        let mbps = st.goodput_bytes as f64 * 8.0 / window * 1e3;
        out.m.insert(format!("tcp.flow.{n}.goodput_mbps"), Some(mbps));
        out.m.insert(format!("tcp.flow.{n}.retrans"), Some((t.total_retrans - st.retrans_base) as f64));
        out.m.insert(format!("tcp.flow.{n}.tx_queue_changes"), Some(t.tx_queue_changes as f64));
        // ss -ti's reordering: and reord_seen:.
        out.m.insert(format!("tcp.flow.{n}.reordering"), Some(t.reordering as f64));
        // ss -ti's minrtt: (tcp_min_rtt(), which TSO autosizing uses); null before the
        // flow's first RTT sample.
        match t.min_rtt_us {
            u32::MAX => out.none(&format!("tcp.flow.{n}.min_rtt_ms"), "the flow had no RTT sample"),
            us => out.set(&format!("tcp.flow.{n}.min_rtt_ms"), us as f64 / 1e3),
        }
        out.m.insert(format!("tcp.flow.{n}.reord_seen"), Some((t.reord_seen - st.reord_seen_base) as f64));
        out.m.insert(format!("tcp.flow.{n}.timeouts"), Some((t.timeouts - st.timeouts_base) as f64));
        // The sending socket's sk_sndbuf at the end, as autotuned (ss -m's tb).
        out.m.insert(format!("tcp.flow.{n}.sndbuf_bytes"), Some(self.socks[s].sndbuf as f64));
        if let Some(app) = &t.rcv.app {
            // The receiving socket as `ss -tmi` shows it at the end: rb,
            // rcv_ssthresh, rcv_space.
            out.m.insert(format!("tcp.flow.{n}.rcvbuf_bytes"), Some(app.buf.rcvbuf as f64));
            out.m.insert(format!("tcp.flow.{n}.rcv_ssthresh_bytes"), Some(app.buf.rcv_ssthresh as f64));
            out.m.insert(format!("tcp.flow.{n}.rcv_space_bytes"), Some(app.buf.space as f64));
        }
        let on = st.active_ns as f64;
        if on == 0.0 {
            out.none(&format!("tcp.flow.{n}.cwnd_avg_pkts"), TCP_IDLE);
            out.none(&format!("tcp.flow.{n}.srtt_avg_ms"), TCP_IDLE);
            return;
        }
        out.m.insert(format!("tcp.flow.{n}.cwnd_avg_pkts"), Some(st.cwnd_int as f64 / on));
        out.m.insert(format!("tcp.flow.{n}.srtt_avg_ms"), Some(st.srtt_int as f64 / on / 1e3));
        if let Some((name, _)) = t.tcp_ca_info() {
            // `ss -ti`'s congestion-control figure (dctcp:(...alpha...)), time-averaged.
            out.m.insert(format!("tcp.flow.{n}.{name}_avg"), Some(st.ca_info_int / on));
        }
    }

    /// TCP flows as `ss -ti` and iperf3 name their figures: goodput per flow and in
    /// total, retransmitted segments, and the time averages of cwnd, srtt and the
    /// pacing rate over the measured window.
    pub(crate) fn tcp_metrics(&mut self, out: &mut Out) {
        let (start, end) = (self.cfg.start, self.cfg.end);
        let window = (end - start) as f64;
        let mut flows = Vec::new();
        for s in self.socks.ids() {
            if matches!(&self.socks[s].kind, crate::sock::SockKind::Tcp(t) if !t.is_web()) {
                self.tcp_stats_tick(s);
                flows.push(s);
            }
        }
        if flows.is_empty() {
            return;
        }
        let (mut total, mut retrans, mut timeouts, mut probes, mut probe_recoveries) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let (mut reord_seen, mut dsacks, mut undos, mut spurious_rtos) = (0u64, 0u64, 0u64, 0u64);
        // HyStart's exits over the whole run: slow start usually ends in the warmup.
        let mut hystart = super::cc::HystartMib::default();
        // The writers' socket locks (`lock_sock`): ACKs that waited in a backlog, those
        // coalesced there, and work deferred to tcp_release_cb().
        let (mut locked, mut backlog_acks, mut backlog_coalesce, mut deferred) = (false, 0u64, 0u64, 0u64);
        let (mut cwnd, mut srtt, mut rate, mut active) = (0.0, 0.0, 0.0, 0.0);
        // A congestion control's own figure (DCTCP's alpha) averaged over its flows,
        // and the CE-echoed deliveries of flows whose congestion control needs ECN
        // (TcpExtTCPDeliveredCE).
        let (mut ca_info, mut ca_info_flows, mut delivered_ce, mut needs_ecn) = (None, 0.0, 0u64, false);
        // Each flow's own metrics up to PER_FLOW_METRICS_MAX flows; the aggregates
        // below describe any number.
        let per_flow = flows.len() <= darkbuf_scenario::limits::PER_FLOW_METRICS_MAX as usize;
        let mut goodputs = Vec::with_capacity(flows.len());
        for (n, &s) in flows.iter().enumerate() {
            if per_flow {
                self.tcp_flow_metrics(out, n, s);
            }
            let crate::sock::SockKind::Tcp(t) = &self.socks[s].kind else { continue };
            let st = &t.stats;
            hystart += t.ca().hystart_mib();
            goodputs.push(st.goodput_bytes);
            reord_seen += (t.reord_seen - st.reord_seen_base) as u64;
            dsacks += t.dsack_dups - st.dsack_dups_base;
            undos += t.undos - st.undos_base;
            spurious_rtos += t.spurious_rtos - st.spurious_rtos_base;
            if t.lock.enabled {
                locked = true;
                backlog_acks += t.lock.backlog_acks - st.backlog_acks_base;
                backlog_coalesce += t.lock.backlog_coalesce - st.backlog_coalesce_base;
                deferred += t.lock.deferred_work - st.deferred_work_base;
            }
            total += st.goodput_bytes;
            retrans += t.total_retrans - st.retrans_base;
            timeouts += t.timeouts - st.timeouts_base;
            probes += t.loss_probes - st.loss_probes_base;
            probe_recoveries += t.tlp_recoveries - st.tlp_recoveries_base;
            // Averages over the time the connection was active (the start and stop
            // times of flent's squarewave leave flows idle for part of the window).
            if t.tcp_ca_needs_ecn() {
                needs_ecn = true;
                delivered_ce += t.delivered_ce.wrapping_sub(st.delivered_ce_base) as u64;
            }
            let on = st.active_ns as f64;
            if on == 0.0 {
                continue;
            }
            if let Some((name, _)) = t.tcp_ca_info() {
                let (_, sum) = ca_info.get_or_insert((name, 0.0));
                *sum += st.ca_info_int / on;
                ca_info_flows += 1.0;
            }
            cwnd += st.cwnd_int as f64 / on;
            srtt += st.srtt_int as f64 / on / 1e3;
            rate += st.rate_int as f64 / on * 8.0 / 1e6;
            active += 1.0;
        }
        out.set("tcp.goodput_mbps", total as f64 * 8.0 / window * 1e3);
        flow_goodput_spread(out, &mut goodputs, window);
        out.set("tcp.retrans", retrans as f64);
        out.set("tcp.timeouts", timeouts as f64);
        out.set("tcp.loss_probes", probes as f64);
        out.set("tcp.loss_probe_recoveries", probe_recoveries as f64);
        out.set("tcp.reord_seen", reord_seen as f64);
        out.set("tcp.dsack_dups", dsacks as f64);
        out.set("tcp.undos", undos as f64);
        out.set("tcp.spurious_rtos", spurious_rtos as f64);
        out.set("tcp.hystart_train_detect", hystart.train_detect as f64);
        out.set("tcp.hystart_train_cwnd", hystart.train_cwnd as f64);
        out.set("tcp.hystart_delay_detect", hystart.delay_detect as f64);
        out.set("tcp.hystart_delay_cwnd", hystart.delay_cwnd as f64);
        if needs_ecn {
            out.set("tcp.delivered_ce", delivered_ce as f64);
        }
        if let Some((name, sum)) = ca_info {
            out.set(&format!("tcp.{name}_avg"), sum / ca_info_flows);
        }
        const LOCK: [&str; 3] = ["tcp.backlog_acks", "tcp.backlog_coalesce", "tcp.release_cb_work"];
        if locked {
            for (k, v) in LOCK.into_iter().zip([backlog_acks, backlog_coalesce, deferred]) {
                out.set(k, v as f64);
            }
        } else {
            for k in LOCK {
                out.none(k, "lock_sock = false: the simulator processes every ACK where it arrives, without the writer's socket lock");
            }
        }
        if active == 0.0 {
            for k in ["tcp.cwnd_avg_pkts", "tcp.srtt_avg_ms", "tcp.pacing_rate_mbps"] {
                out.none(k, TCP_IDLE);
            }
            return;
        }
        out.set("tcp.cwnd_avg_pkts", cwnd / active);
        out.set("tcp.srtt_avg_ms", srtt / active);
        out.set("tcp.pacing_rate_mbps", rate / active);
    }
}
