//! A flood's sends that the qdisc drops on arrival, run as one loop.
//!
//! A UDP flood into a full qdisc (seed 000's nrules=15000 point, the quick start's
//! sfq, a NIC without BQL under pfifo_fast) spends its CPU in `sendmsg()` calls whose
//! skb the qdisc drops at once: built, charged to the socket, steered, enqueued,
//! dropped, freed, uncharged, and the qdisc run it starts ends at once on the stopped
//! queue. Outside the loop none of that is seen but the counters, the time each send
//! takes and the qdisc's own drop bookkeeping. [`World::flood_drop_burst`] runs such
//! sends with only those effects, with the same results as the full path
//! (`task_end()` -> `send_msg()` -> `__dev_queue_xmit()` -> `kfree_skb()`), which
//! takes over at the first send that is not one of them.
//!
//! Every effect of a dropped send is either made here or cancels out:
//! - made here: the scheduler's turn at the end of the previous send, as
//!   `task_end_once()` leaves it (task states, the run queue's rotation when two
//!   floods share the CPU); the flood's flow rotation, `sent` and `sndbuf_errors`;
//!   the fates `created` and `dropped` (`Fates`); the qdisc's drop
//!   ([`Qdisc::drop_arrival`]); the send's cost, from the one random draw the full
//!   path takes, so every later draw is the same; the clock and busy time, through
//!   `advance_inline()`;
//! - cancelling out: the skb's arena slot (allocated and freed at once: the same id
//!   comes back from the free list, so later packets' ids do not change);
//!   `sk_wmem_alloc` (+truesize, -truesize; `sock_wfree()` wakes no one, the sender
//!   is running); the qdisc backlog accumulator (entered and left at one instant); the
//!   qdisc run the send starts (`qdisc_run_begin()`, then one step later
//!   `dequeue_skb()` finds the queue stopped and the run ends) or finds running on
//!   another CPU.
//!
//! The conditions are checked before any effect of a send, from state that nothing
//! changes while the lookahead lets the CPU run on. When a send's cost reaches past the
//! lookahead, the loop returns the step the full path returns at that point.

use crate::cpu::{Frame, Step, TaskKind, TaskState};

use crate::id::{CpuId, QdiscId, SockId, TaskId};
use crate::dev::sch::DEV_TX_WEIGHT;
use crate::sock::SockKind;
use crate::world::World;
use darkbuf_model::qdisc::{ArrivalDrop, Qdisc};
use darkbuf_model::Skb;

/// The next send on a CPU, when the qdisc drops it on arrival.
#[derive(Clone, Copy)]
struct DroppedSend {
    /// The task that sends it: the one whose unit just ended, or the next in the run
    /// queue.
    task: TaskId,
    sock: SockId,
    /// The skb `udp_sendmsg()` builds, as far as steering and the qdisc look at it.
    skb: Skb,
    qdisc: QdiscId,
    drop: ArrivalDrop,
    /// `qdisc_run_begin()` succeeds (else another CPU's run holds the qdisc).
    starts_run: bool,
}

impl World {
    /// Runs, at the end of the unit in `frame` (`Frame::TaskEnd`), the sends on `cpu`
    /// that the qdisc drops on arrival (see the module docs). Returns `None` when the
    /// next send is not one of them: the caller goes on with `task_end_once()`. Returns
    /// `Some(step)` when a send's cost runs past the lookahead: the step the full path
    /// returns there.
    #[inline]
    pub(crate) fn flood_drop_burst(&mut self, cpu: CpuId, frame: &mut Frame) -> Option<Step> {
        #[cfg(test)]
        if !self.drop_bursts {
            return None;
        }
        let Frame::TaskEnd(ended) = *frame else { unreachable!("a TaskEnd frame") };
        let first = self.next_dropped_send(cpu, ended)?;
        self.drop_burst_from(cpu, frame, first)
    }

    /// The loop of [`World::flood_drop_burst`] from its first send.
    #[inline(never)]
    fn drop_burst_from(&mut self, cpu: CpuId, frame: &mut Frame, first: DroppedSend) -> Option<Step> {
        // The last two sends checked in full, by (task, flow): within the loop only the
        // qdisc's answer can change for the same task and flow (see `repeat_send()`).
        let mut seen = [Some(first), None];
        let mut turn = 1;
        let mut send = first;
        loop {
            let Frame::TaskEnd(ended) = *frame else { unreachable!("a TaskEnd frame") };
            // task_end_once(): the task alone on its CPU runs again, or the next one in
            // the run queue takes its turn.
            let c = &mut self.sched.cpus[cpu];
            c.softirq_rounds = 0;
            if send.task != ended {
                c.runnable.rotate(ended);
                self.sched.tasks[ended].state = TaskState::Runnable;
            }
            self.sched.tasks[send.task].state = TaskState::Running { woken: false };
            *frame = Frame::TaskEnd(send.task);
            // udp_sendmsg(), sock_alloc_skb(), __dev_queue_xmit(), kfree_skb().
            let SockKind::Udp(u) = &mut self.socks[send.sock].kind else { unreachable!("a flood") };
            u.sent_one();
            self.sock_xmit_verdict(send.sock, send.drop.verdict);
            self.metrics.fate.created += 1;
            let cost = self.cost(self.profile.costs.send_ns);
            let q = &mut self.net.qdiscs[send.qdisc];
            q.q.as_mut().expect("a qdisc").drop_arrival(send.drop);
            self.metrics.fate.dropped += 1;
            #[cfg(test)]
            {
                self.burst_sends += 1;
            }
            if !self.advance_inline(cpu, cost) {
                if !send.starts_run {
                    return Some(Step::Continue(cost));
                }
                self.net.qdiscs[send.qdisc].running = true;
                return Some(self.call(cpu, cost, Frame::QdiscRun { q: send.qdisc, quota: DEV_TX_WEIGHT }));
            }
            // Past the send, the run it started ends at once (`qdisc_run_step()`,
            // `qdisc_run_ends_at_once()`): `running` is false again.
            send = match self.repeat_send(cpu, send.task, &seen) {
                Some(send) => send?,
                None => {
                    let send = self.next_dropped_send(cpu, send.task)?;
                    seen[turn] = Some(send);
                    turn ^= 1;
                    send
                }
            };
        }
    }

    /// The next send on `cpu` when an earlier send of this loop, in `seen`, had the same
    /// task and flow: `Some(Some(send))` if the qdisc still drops it on arrival,
    /// `Some(None)` if not. `None` if no send in `seen` matches.
    ///
    /// Between the sends of one loop nothing runs but the loop: the sockets, tasks,
    /// steering, qdisc run state and queue states that `next_dropped_send()` checked
    /// are as they were, and the ended task is one that sent in the loop. Only the
    /// qdisc's own answer may change (sfq's depth lists move with each drop, its
    /// perturbation timer falls due), and the qdisc has changed only by the loop's
    /// `drop_arrival()`s since `seen` recorded its answer for the same flow:
    /// `arrival_dropped_again()` gives the new answer from that one.
    #[inline(always)]
    fn repeat_send(&self, cpu: CpuId, ended: TaskId, seen: &[Option<DroppedSend>; 2]) -> Option<Option<DroppedSend>> {
        let task = self.sched.cpus[cpu].runnable.front().unwrap_or(ended);
        // A task in `seen` is a flood's: its socket is the one recorded with it.
        let mut same_task = seen.iter().flatten().filter(|s| s.task == task);
        let first = same_task.next()?;
        let SockKind::Udp(u) = &self.socks[first.sock].kind else { unreachable!("a flood") };
        let flow = u.next_skb().flow;
        let prev = if first.skb.flow == flow { first } else { same_task.find(|s| s.skb.flow == flow)? };
        let skb = Skb { tstamp: self.now, ..prev.skb };
        let q = self.net.qdiscs[prev.qdisc].q.as_ref().expect("a qdisc");
        Some(q.arrival_dropped_again(&skb, self.now, prev.drop).map(|drop| DroppedSend { skb, drop, ..*prev }))
    }

    /// The send that `task_end_once()` would start after `ended`'s unit on `cpu`, if
    /// the qdisc drops it on arrival; no state changes.
    #[inline(always)]
    fn next_dropped_send(&self, cpu: CpuId, ended: TaskId) -> Option<DroppedSend> {
        // First what fails soonest where no flood meets a full qdisc: a process whose
        // last send was queued.
        let TaskKind::Proc(s) = self.sched.tasks[ended].kind else { return None };
        if !self.socks[s].last_send_dropped {
            return None;
        }
        let c = &self.sched.cpus[cpu];
        if c.softirq_pending != 0 {
            return None;
        }
        // The ended task stays runnable (sock_wants_cpu(): an unblocked flood at full
        // speed), and its CPU's next unit is a send by it or by the next flood in line.
        if !self.flood_at_full_speed(s) {
            return None;
        }
        let (task, sock) = match c.runnable.front() {
            None => (ended, s),
            Some(next) => match self.sched.tasks[next].kind {
                TaskKind::Proc(s) if self.flood_at_full_speed(s) => (next, s),
                _ => return None,
            },
        };
        let sk = &self.socks[sock];
        let SockKind::Udp(u) = &sk.kind else { return None };
        // udp_sendmsg() would sleep on the next flow's full send buffer.
        if !sk.last_send_dropped || u.flow_wmem[u.next_flow as usize] >= sk.sndbuf {
            return None;
        }
        // The skb udp_sendmsg() builds, as far as steering and the qdisc look at it.
        let mut skb = u.next_skb();
        skb.queue_mapping = self.netdev_pick_tx(sk.dev, &skb, cpu);
        skb.tstamp = self.now;
        let qdisc = self.net.devs[sk.dev].txq_qdisc[skb.queue_mapping as usize]?;
        let q = &self.net.qdiscs[qdisc];
        // __dev_xmit_skb(): an empty idle qdisc would hand the packet to the driver.
        if q.can_bypass && q.qlen() == 0 && !q.running {
            return None;
        }
        let starts_run = !q.running;
        if starts_run && !self.qdisc_run_ends_at_once(qdisc) {
            return None;
        }
        let drop = q.q.as_ref()?.arrival_dropped(&skb, self.now)?;
        Some(DroppedSend { task, sock, skb, qdisc, drop, starts_run })
    }

    /// A UDP flood that sends as fast as it can and is not blocked on its send buffer:
    /// `sock_wants_cpu()` keeps it runnable, without arming a timer.
    #[inline(always)]
    fn flood_at_full_speed(&self, s: SockId) -> bool {
        let sk = &self.socks[s];
        matches!(&sk.kind, SockKind::Udp(u) if u.interval_ns == 0.0) && !sk.blocked
    }
}

#[cfg(test)]
mod tests {
    use darkbuf_measure::Profile;
    use crate::world::World;

    /// One run of `toml` (5 ms warmup, then `duration`), with or without the bursts:
    /// the results, and how many sends the bursts ran.
    fn run(toml: &str, bursts: bool) -> (String, u64) {
        let text = format!("warmup = \"5ms\"\n{toml}");
        let scn = darkbuf_scenario::load_str("burst.toml", &text, &[]).unwrap();
        let mut w = World::new(&scn, Profile::load("seed-vm").unwrap(), 7).unwrap();
        w.drop_bursts = bursts;
        w.run();
        let sends = w.burst_sends;
        let (rec, printouts) = w.finish(7);
        (format!("{rec:?} {printouts:?}"), sends)
    }

    /// Floods into full qdiscs give the same results, byte for byte, with and without
    /// `flood_drop_burst()`, and the bursts run most of their sends: two floods on one
    /// CPU into sfq (seed 000's shape, the run queue rotating), the same with two flows
    /// each (more (task, flow) pairs than `repeat_send()` remembers), a flood of many
    /// flows into a small sfq and two floods of one flow each whose perturbation timer
    /// falls due during the run, one into its depth limit, and a NIC without BQL under
    /// pfifo_fast and pfifo.
    #[test]
    fn bursts_change_nothing_but_the_speed() {
        let veth = "[device]\ndriver = \"veth\"\ntx_queues = 2\nxps_txq = 1\nnapi = \"threaded\"\nbackpressure = true\n\
                    [device.bql]\nenabled = true\nunit = \"packet\"\n[consumer]\nkind = \"napi\"\nnrules = 15000\n";
        let flood = |size: u32, flows: u32| format!("[[traffic]]\nkind = \"udp\"\nsize = {size}\nrate = \"max\"\nflows = {flows}\nsndbuf = \"8MiB\"\n");
        let ping = "[[traffic]]\nkind = \"ping\"\ninterval = \"20ms\"\n";
        let nic = "[device]\ndriver = \"nic\"\nrate = \"1Gbit\"\nring_size = 256\n[device.bql]\nenabled = false\n";
        let short = "duration = \"200ms\"\n";
        let cases = [
            format!("{short}{veth}[qdisc]\nkind = \"sfq\"\n{}{}{ping}", flood(1400, 1), flood(24, 1)),
            format!("{short}{veth}[qdisc]\nkind = \"sfq\"\n{}{}{ping}", flood(1400, 2), flood(24, 2)),
            format!("duration = \"2200ms\"\n{veth}[qdisc]\nkind = \"sfq\"\nlimit = 20\nperturb = 1\n{}{ping}", flood(1400, 7)),
            format!("duration = \"1100ms\"\n{veth}[qdisc]\nkind = \"sfq\"\nperturb = 1\n{}{}", flood(1400, 1), flood(24, 1)),
            format!("{short}{veth}[qdisc]\nkind = \"sfq\"\ndepth = 10\n{}{ping}", flood(200, 1)),
            format!("{short}{nic}[qdisc]\nkind = \"pfifo_fast\"\n{}{ping}", flood(1400, 3)),
            format!("{short}{nic}[qdisc]\nkind = \"pfifo\"\nlimit = 50\n{}", flood(1400, 1)),
        ];
        for toml in &cases {
            let (with, sends) = run(toml, true);
            let (without, none) = run(toml, false);
            assert_eq!(none, 0);
            assert!(sends > 10_000, "the bursts ran only {sends} sends:\n{toml}");
            assert!(with == without, "results differ with the bursts:\n{toml}");
        }
    }
}
