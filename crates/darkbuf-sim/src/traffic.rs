//! Traffic sources: UDP floods and the pinger, as the seed's selftest runs them.
//!
//! A flood is a process doing `sendmsg()` in a loop. Each skb is charged to the socket
//! (`sk_wmem_alloc += truesize`) until it is orphaned on the receive side or dropped;
//! `sock_alloc_send_pskb()` lets the send through while `wmem < sndbuf` (overshooting by
//! one skb) and otherwise sleeps until `sock_wfree()` brings wmem under half the sndbuf
//! (`sock_writeable()`), which is what bounds a flood's in-flight packets when the
//! default 212992-byte sndbuf holds fewer skbs than the ring.

use crate::arena::{Origin, PktInfo};
use crate::cpu::{Frame, Task};
use crate::world::World;
use darkbuf_model::skb::truesize_for_len;
use darkbuf_model::units::Rate;
use darkbuf_model::Skb;
use darkbuf_scenario::{icmp_frame_len, udp_frame_len, Ping, UdpFlood};

/// Flow ids: floods use (traffic index << 16 | flow), the pinger its own.
const PING_FLOW: u32 = 0xffff_0000;

pub struct Sender {
    /// Index among the floods (and the task id).
    pub index: u16,
    /// Index in the scenario's `[[traffic]]`.
    pub traffic_index: u16,
    pub frame_len: u32,
    pub truesize: u32,
    pub flows: u32,
    pub next_flow: u32,
    pub sndbuf: u64,
    pub wmem: u64,
    pub blocked: bool,
    /// ns between sends for a rate-limited flood (0 = as fast as possible).
    pub interval_ns: f64,
    pub next_send: f64,
    pub priority: u32,
    pub dscp: u8,
    pub ecn: u8,
    pub sent: u64,
}

impl Sender {
    pub fn new(traffic_index: u16, index: u16, u: &UdpFlood) -> Self {
        let frame_len = udp_frame_len(u.size);
        let interval_ns = match u.rate {
            Rate::Max => 0.0,
            Rate::Pps(pps) => 1e9 / pps,
            Rate::Bps(bps) => frame_len as f64 * 8.0 * 1e9 / bps as f64,
        };
        Sender {
            index,
            traffic_index,
            frame_len,
            truesize: truesize_for_len(frame_len),
            flows: u.flows.max(1),
            next_flow: 0,
            sndbuf: u.sndbuf,
            wmem: 0,
            blocked: false,
            interval_ns,
            next_send: 0.0,
            priority: u.priority,
            dscp: u.dscp,
            ecn: u.ecn,
            sent: 0,
        }
    }
}

pub struct Pinger {
    pub interval_ns: u64,
    pub frame_len: u32,
    /// Probes whose timer fired and that are not sent yet.
    pub due: u32,
    pub next_timer: u64,
}

impl Pinger {
    pub fn new(p: &Ping) -> Self {
        Pinger { interval_ns: p.interval_ns.max(1), frame_len: icmp_frame_len(p.size), due: 0, next_timer: 0 }
    }
}

impl World {
    /// One `sendmsg()` by a flood or one echo request by the pinger: its cost, and the
    /// frame to run next in its place (the qdisc run loop), if any.
    #[inline(never)]
    pub fn send_msg(&mut self, cpu: u16, task: Task) -> (u64, Option<Frame>) {
        let now = self.now;
        let (skb, origin, cost_ns) = match task {
            Task::Sender(i) => {
                let s = &mut self.senders[i as usize];
                if s.wmem >= s.sndbuf {
                    // sock_alloc_send_pskb(): no room; sleep until sock_wfree() wakes us.
                    s.blocked = true;
                    return (0, None);
                }
                let flow = ((s.traffic_index as u32) << 16) | s.next_flow;
                // Round robin over the flows (a compare, not a division per send).
                s.next_flow += 1;
                if s.next_flow == s.flows {
                    s.next_flow = 0;
                }
                s.wmem += s.truesize as u64;
                s.sent += 1;
                if s.interval_ns > 0.0 {
                    s.next_send = s.next_send.max(now as f64) + s.interval_ns;
                }
                // One socket per flow, as a multi-flow load generator opens them (fq keys on it).
                let skb = Skb {
                    flow,
                    sk: flow + 1,
                    len: s.frame_len,
                    truesize: s.truesize,
                    priority: s.priority,
                    dscp: s.dscp,
                    ecn: s.ecn,
                    ..Skb::default()
                };
                (skb, Origin::Flood(s.index), self.profile.costs.send_ns)
            }
            Task::Pinger => {
                let p = self.pinger.as_mut().expect("pinger");
                if p.due == 0 {
                    return (0, None);
                }
                p.due -= 1;
                let len = p.frame_len;
                let skb = Skb { flow: PING_FLOW, sk: PING_FLOW, len, truesize: truesize_for_len(len), ..Skb::default() };
                (skb, Origin::Ping, self.profile.costs.ping_send_ns)
            }
            _ => unreachable!("only senders send"),
        };
        let mut skb = skb;
        skb.queue_mapping = self.pick_tx(skb.flow);
        let owns_wmem = matches!(origin, Origin::Flood(_));
        skb.id = self.pkts.alloc(PktInfo {
            len: skb.len,
            truesize: skb.truesize,
            origin,
            t_send: now,
            t_xmit: 0,
            t_consume: 0,
            bql_charged: false,
            owns_wmem,
        });
        self.created += 1;
        if now >= self.cfg.start {
            if origin == Origin::Ping {
                self.metrics.probes_sent += 1;
            }
        }
        let send_cost = self.cost(cost_ns);
        let (xmit_cost, next) = self.dev_queue_xmit(cpu, skb);
        (send_cost + xmit_cost, next)
    }

    /// Whether a flood's task stays runnable after a send; arms its rate timer if not.
    pub fn sender_wants_cpu(&mut self, i: u16) -> bool {
        let now = self.now;
        let s = &mut self.senders[i as usize];
        if s.blocked {
            return false;
        }
        if s.interval_ns > 0.0 && s.next_send > now as f64 {
            let at = s.next_send.ceil() as u64;
            let ti = self.task_index(Task::Sender(i));
            self.events.push(at, crate::event::Event::TaskTimer(ti));
            return false;
        }
        true
    }

    /// Arms the pinger's next interval timer (called when a probe timer fires).
    pub fn pinger_rearm(&mut self) {
        if let Some(p) = self.pinger.as_mut() {
            let at = self.now + p.interval_ns;
            p.next_timer = at;
            let ti = self.task_index(Task::Pinger);
            self.events.push(at, crate::event::Event::TaskTimer(ti));
        }
    }

    /// `sock_wfree()`: return the skb's truesize to its socket and wake a sender
    /// blocked on a full sndbuf once it is writeable again (wmem < sndbuf / 2).
    pub fn sock_wfree(&mut self, id: u32) {
        let info = self.pkts.get_mut(id);
        info.owns_wmem = false;
        let Origin::Flood(si) = info.origin else { return };
        let truesize = info.truesize as u64;
        let s = &mut self.senders[si as usize];
        s.wmem -= truesize;
        if s.blocked && s.wmem < s.sndbuf / 2 {
            s.blocked = false;
            self.wake_task(Task::Sender(si), 0);
        }
    }
}
