//! The three-way handshake of an active open: `tcp_connect()` sends the SYN at the
//! flow's start, the listener answers it with a SYN-ACK (`tcp_v4_conn_request()` ->
//! `tcp_v4_send_synack()`), and `tcp_rcv_synsent_state_process()` takes the SYN's
//! round trip as the connection's first RTT sample (`tcp_ack()` ->
//! `tcp_ack_update_rtt()`: `tcp_update_rtt_min()` and `tcp_rtt_estimator()`) before
//! `tcp_finish_connect()` lets the application's data go.
//!
//! Why it matters: that first sample is `tcp_min_rtt()` for the rest of a short run
//! (the min-RTT filter's window, `tcp_min_rtt_wlen`, is 300 s), and
//! `tcp_tso_autosize()` adds `sk_gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)` to
//! each TSO skb (5.18+). A SYN crosses an idle path, so on a host-local path every
//! flow's skbs reach 64 KB, and TSQ (`2 * skb->truesize`) lets each flow keep that much
//! in the qdisc: the queue grows with the number of flows. Without the handshake, the
//! flows that start together took their first sample behind each other's initial
//! windows (milliseconds at 20 Mbit), built smaller skbs, and a FIFO held a fraction of
//! what the kernel's holds (issue 51, item 9).
//!
//! What is left out: the client's third ACK (the data that follows acknowledges the
//! SYN-ACK too), and the listener's own SYN-ACK retransmission timer (a lost SYN-ACK is
//! answered again when the client's SYN timer resends the SYN, as the kernel's listener
//! does for a SYN it has a request for).

use super::{Conn, PROTO};
use crate::wire::TCP_HDR;
use crate::arena::{Destructor, Dir, PktInfo};
use crate::cpu::Step;
use crate::id::{CpuId, SockId};
use crate::sock::Outgoing;
use crate::world::World;
use darkbuf_model::skb::Skb;

/// A SYN's and a SYN-ACK's frame: the timestamped header plus the handshake's options
/// (MSS 4, SACK permitted 2, window scale 3, one NOP), 74 bytes with Ethernet.
pub const SYN_LEN: u32 = TCP_HDR + 8;
/// `TCP_TIMEOUT_INIT`: the SYN's first retransmission timeout (1 s), doubled for each
/// retry (`inet_csk_reset_xmit_timer()` with `icsk_rto` backed off).
pub const TCP_TIMEOUT_INIT_NS: u64 = 1_000_000_000;
/// `tcp_syn_retries` (6): the SYNs sent again before `connect()` fails (ETIMEDOUT).
pub const TCP_SYN_RETRIES: u8 = 6;

impl World {
    /// `tcp_connect()` at the flow's start, or the SYN timer's retransmission
    /// (`tcp_retransmit_timer()` in SYN_SENT): the SYN down the socket's own path, with
    /// its retransmission timer armed. Returns the step of the application's
    /// `connect()`; the task then sleeps until the SYN-ACK (`inet_wait_for_connect()`).
    pub(crate) fn tcp_connect(&mut self, cpu: CpuId, s: SockId) -> Step {
        let now = self.now;
        let tp = self.socks.tcp(s);
        let (flow, retries) = (tp.flow_id(), tp.syn_retries);
        let due = match tp.conn {
            Conn::Closed => now >= tp.start_ns && now < tp.stop_ns,
            Conn::SynSent => tp.syn_due && retries < TCP_SYN_RETRIES,
            Conn::Established => false,
        };
        if !due {
            // Before the flow's start, or waiting for the SYN-ACK; after tcp_syn_retries
            // connect() fails with ETIMEDOUT and the flow never sends.
            return Step::Continue(0);
        }
        if tp.conn == Conn::SynSent {
            tp.syn_retries += 1;
        }
        tp.conn = Conn::SynSent;
        tp.syn_due = false;
        tp.syn_sent_ns = now;
        let at = now + (TCP_TIMEOUT_INIT_NS << tp.syn_retries);
        tp.syn_rto_at = Some(at);
        let dscp = tp.dscp;
        self.events.push(at, crate::event::Event::TcpTimer(s, super::timer::SYN));
        let skb = Skb { flow, sk: super::tcp_skb_sk(s), len: SYN_LEN, truesize: SYN_LEN + self.profile.tcp_skb_overhead, dscp, priority: crate::forward::rt_tos2priority(dscp, 0), ..Skb::default() };
        // The SYN's sequence field carries its send time in µs (its TSval, which the
        // SYN-ACK echoes).
        let seq = (now / 1000) as u32;
        let out = Outgoing { skb, proto: PROTO, destructor: Destructor::SockWfree, cost_ns: self.profile.costs.tcp_xmit_ns, seq };
        self.sock_xmit_syn(cpu, s, out)
    }

    /// The SYN timer fired: while the SYN is unanswered, the task sends it again.
    pub(crate) fn tcp_syn_timer(&mut self, s: SockId) {
        let task = self.socks[s].task;
        let t = self.socks.tcp(s);
        t.syn_rto_at = None;
        if t.conn == Conn::SynSent {
            t.syn_due = true;
            self.wake_task(task);
        }
    }

    /// A SYN reached the listener at `t` on `cpu`: the SYN-ACK goes back at once, by the
    /// far host's device or by the constant way back, as the connection's ACKs do.
    /// Returns the CPU time.
    pub(crate) fn tcp_rcv_syn(&mut self, cpu: CpuId, info: &PktInfo, t: u64) -> u64 {
        let s = info.sock;
        let tp = self.socks.tcp(s);
        let (ack_dev, flow) = (tp.ack_dev, tp.flow_id());
        let mut skb = Skb { flow, sk: super::tcp_skb_sk(s), len: SYN_LEN, truesize: SYN_LEN + self.profile.tcp_skb_overhead, ..Skb::default() };
        let cost = self.cost(self.profile.costs.tcp_rcv_ns + self.profile.costs.tcp_ack_ns);
        match ack_dev {
            Some(dev) => {
                skb.queue_mapping = self.netdev_pick_tx(dev, &skb, cpu);
                self.sock_alloc_skb(s, &mut skb, PROTO, Destructor::None, Dir::Back, info.seq);
                self.pkts.set_syn(skb.id);
                self.pkts.get_mut(skb.id).t_send = t;
                self.dev_queue_xmit_at(t + cost, cpu, dev, skb);
            }
            None => {
                self.sock_alloc_skb(s, &mut skb, PROTO, Destructor::None, Dir::Back, info.seq);
                self.pkts.set_syn(skb.id);
                let back = self.cost(self.profile.costs.ping_reply_ns);
                self.deliver_at(t + cost + back, cpu, skb.id);
            }
        }
        cost
    }

    /// `tcp_rcv_synsent_state_process()`: the SYN-ACK at `t`. Its RTT sample goes
    /// through `tcp_ack_update_rtt()` (the min RTT and srtt), the pacing rate follows
    /// it, the connection is established and the writer wakes. A SYN-ACK for a SYN sent
    /// before the last retransmission gives the RTT its echoed timestamp gives, in whole
    /// milliseconds (`tcp_ack_update_rtt()`'s TSecr path: the SYN itself was
    /// retransmitted, so Karn's rule leaves only the timestamp). Returns the CPU time.
    pub(crate) fn tcp_rcv_synack(&mut self, info: &PktInfo, t: u64) -> u64 {
        let s = info.sock;
        let task = self.socks[s].task;
        let tp = self.socks.tcp(s);
        if tp.conn != Conn::SynSent {
            return self.cost(self.profile.costs.tcp_ack_ns); // a duplicate SYN-ACK
        }
        let echoed_us = info.seq;
        let now_us = (t / 1000) as u32;
        let rtt_ns = if tp.syn_retries == 0 {
            t - tp.syn_sent_ns
        } else {
            (now_us / 1000).wrapping_sub(echoed_us / 1000).max(1) as u64 * 1_000_000
        };
        tp.conn = Conn::Established;
        tp.established_ns = t;
        tp.syn_rto_at = None;
        tp.syn_due = false;
        let rtt_ns = rtt_ns.max(1_000);
        self.tcp_ack_update_rtt(s, rtt_ns, rtt_ns);
        self.tcp_update_pacing_rate(s);
        self.wake_task(task);
        self.cost(self.profile.costs.tcp_ack_ns)
    }
}
