//! Queueing disciplines (net/sched/), one algorithm per file.
//!
//! A qdisc here is the algorithm only: enqueue, dequeue, its own counters. What
//! net/sched/sch_generic.c does around it (the requeue slot `gso_skb`, the RUNNING and
//! SCHED state, bypass, `__qdisc_run`'s quota) lives with the device in the simulator,
//! because it involves TX queue state and CPUs.

pub mod cake;
pub mod codel;
pub mod fifo;
pub mod flow_list;
pub mod fq;
pub mod fq_codel;
pub mod fq_pie;
pub mod htb;
pub mod netem;
pub mod pfifo_fast;
pub mod pie;
pub mod sfq;
pub mod shaping;
pub mod skb_list;
pub mod tbf;
pub mod tc_print;
pub mod xstat;

pub use shaping::{PacketCost, Shaping, TokenBucket};

use crate::params::{ParamError, Params};
use crate::Skb;

/// What `qdisc_enqueue()` returned (`NET_XMIT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueVerdict {
    /// NET_XMIT_SUCCESS: queued.
    Success,
    /// NET_XMIT_DROP: the arriving packet was dropped (its id is in `drops`).
    Dropped,
    /// NET_XMIT_CN: queued or dropped, but the qdisc dropped packets of the same flow to
    /// make room (the victims' ids, possibly the arriving packet's, are in `drops`).
    Congested,
}

/// An enqueue that drops the arriving packet and nothing else
/// ([`Qdisc::arrival_dropped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrivalDrop {
    /// What `enqueue()` returns.
    pub verdict: EnqueueVerdict,
    /// The qdisc's own note for [`Qdisc::drop_arrival`] (sfq: the arrival's slot), so
    /// it need not look it up again.
    pub hint: u32,
}

/// The counters `tc -s qdisc` prints, kept by the algorithm itself.
///
/// `sent_*` and `requeues` are kept by the caller (sch_generic's run loop), because
/// they are counted outside the algorithm; the algorithm counts drops and overlimits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    pub drops: u64,
    pub overlimits: u64,
    /// `qstats.requeues` the algorithm counts itself (netem's reordered packets); the
    /// run loop adds its own.
    pub requeues: u64,
}

/// Work a qdisc asks of the stack around it. The kernel's qdisc calls into the stack
/// from its enqueue (netem: `skb_orphan_partial()`, `skb_clone()` and the root's
/// enqueue, `skb_gso_segment()`, a flipped bit in the packet's data); a model that
/// holds only packet descriptors hands that work to its caller, which carries it out
/// after the enqueue returns ([`Qdisc::take_stack_ops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackOp {
    /// `skb_orphan_partial()`: packet `id`, queued, gives its socket its send-buffer
    /// charge back now.
    Orphan(u32),
    /// `skb_clone()` of this skb (its `id` the original's), to be enqueued at the root
    /// qdisc (`rootq->enqueue()`), its `netem_mark` set.
    Clone(Skb),
    /// One bit of packet `id`'s linear part flipped: the byte
    /// `get_random_u32_below(skb_headlen())` of the draw `byte_rnd` (the caller knows
    /// the linear length), bit `bit`.
    Corrupt { id: u32, byte_rnd: u32, bit: u8 },
    /// `netem_segment()`: this GSO skb, not queued, is cut into its segments; the
    /// first re-enters the qdisc tree marked [`Skb::NETEM_CORRUPT_SEG`], the others as
    /// new packets.
    SegmentCorrupt(Skb),
    /// `skb_gso_segment()` in the qdisc's enqueue (cake's split-gso): this GSO skb,
    /// not queued, is cut into its segments, each enqueued through the root.
    GsoSegment(Skb),
}

/// Properties of the device a qdisc is attached to, which tc's defaults depend on.
#[derive(Clone, Copy, Debug)]
pub struct DevInfo {
    /// `dev->tx_queue_len` (txqueuelen).
    pub tx_queue_len: u32,
    /// `psched_mtu(dev)` = mtu + hard_header_len: 1514 on Ethernet.
    pub mtu_l2: u32,
    /// Key for flow hashing (the qdisc's perturbation / hash seed), from the scenario seed.
    pub hash_key: u32,
    /// CONFIG_HZ, for qdiscs whose parameters or state count jiffies.
    pub hz: u32,
}

impl Default for DevInfo {
    fn default() -> Self {
        DevInfo { tx_queue_len: 1000, mtu_l2: 1514, hash_key: 0, hz: 250 }
    }
}

/// A queueing discipline algorithm (`struct Qdisc_ops`).
pub trait Qdisc {
    /// tc's name for it ("sfq").
    fn kind(&self) -> &'static str;
    /// `->enqueue()`. Any packet dropped (the arriving one or victims) has its id
    /// (`Skb::id`) pushed to `drops`: the kernel's `to_free` list holds pointers, and a
    /// copy of the skb there cost a store-forwarding stall on every tail drop.
    fn enqueue(&mut self, skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict;
    /// `->dequeue()`. Packets an AQM drops while dequeueing have their ids pushed to
    /// `drops`.
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb>;
    /// `sch->q.qlen`: packets held.
    fn qlen(&self) -> u32;
    /// `sch->qstats.backlog`: bytes held.
    fn backlog(&self) -> u64;
    fn stats(&self) -> &QdiscStats;
    /// Its parameters as `tc qdisc show` prints them after the handle, e.g.
    /// `limit 10000p flow_limit 100p ...` (empty if darkbuf does not render them).
    fn tc_options(&self) -> String {
        String::new()
    }
    /// Its xstats as `tc -s qdisc show` prints them below the counters, one string
    /// with newlines (empty if none).
    fn tc_xstats(&self) -> String {
        String::new()
    }
    /// Qdisc-specific counters (`tc -s` xstats) by tc's names, e.g. ("ecn_mark", 3).
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// A classful qdisc's leaf qdiscs in the order their classes were made, each with its
    /// class's `Sent` counters, for `tc -s qdisc show` (empty for a classless one).
    fn tc_leaves(&self) -> Vec<TcLeaf<'_>> {
        Vec::new()
    }
    /// `TCQ_F_CAN_BYPASS`: an empty qdisc may hand a packet straight to the driver.
    fn can_bypass(&self) -> bool {
        false
    }
    /// What this qdisc and its children hold a packet of `skb->priority` `priority` to,
    /// with no tc filters (htb's `default` class): the token buckets it passes and the
    /// least delay it is given. A lower bound on how fast a flow can cross the qdisc,
    /// for an ideal completion time; nothing in the simulation reads it. The default:
    /// no bucket, no delay.
    fn shaping(&self, _priority: u32) -> Shaping {
        Shaping::default()
    }
    /// For shapers and pacers that returned `None` with packets queued: the time their
    /// watchdog (`qdisc_watchdog_schedule_ns`) fires to rerun the queue.
    fn next_wakeup(&self) -> Option<u64> {
        None
    }
    /// Whether `enqueue(skb, now)` would drop `skb` itself and leave no other change
    /// than what [`Qdisc::drop_arrival`] makes; if so, with the verdict it would return.
    /// The simulator then skips the packet's life (built, enqueued, dropped, freed) for
    /// a flood into a full qdisc. `None`, the default, when that does not hold or is
    /// not known.
    fn arrival_dropped(&self, _skb: &Skb, _now: u64) -> Option<ArrivalDrop> {
        None
    }
    /// `enqueue(skb, now)` after [`Qdisc::arrival_dropped`] returned `Some(drop)`, with
    /// nothing changed in between: counts the drop and leaves the qdisc as `enqueue()`
    /// would (the caller frees nothing: the packet was never linked anywhere).
    fn drop_arrival(&mut self, _drop: ArrivalDrop) {
        unreachable!("arrival_dropped() returned None")
    }
    /// [`Qdisc::arrival_dropped`] for `skb` when an earlier arrival of the same flow
    /// was answered `prev` and the qdisc has changed since only by
    /// [`Qdisc::drop_arrival`]s: the same answer, for a flood's next send, without
    /// finding the flow again (sfq: `prev.hint` is still the flow's slot). The
    /// default asks in full.
    fn arrival_dropped_again(&self, skb: &Skb, now: u64, _prev: ArrivalDrop) -> Option<ArrivalDrop> {
        self.arrival_dropped(skb, now)
    }
    /// Runs the qdisc's own timers that are due by `now` (pie's `adapt_timer`), for
    /// qdiscs that run them lazily at their next enqueue or dequeue: called before
    /// the counters and xstats are read at the window's edges.
    fn run_timers(&mut self, _now: u64) {}
    /// Whether this qdisc or a child of it asks for [`StackOp`]s (fixed at
    /// construction, so the caller tests it once).
    fn has_stack_ops(&self) -> bool {
        false
    }
    /// Moves the [`StackOp`]s of the last enqueue or dequeue (its own and its
    /// children's) to `ops`, in the order they arose.
    fn take_stack_ops(&mut self, _ops: &mut Vec<StackOp>) {}
    /// Whether a netem is in this qdisc's tree (it, or a child of it): a netem's corrupted
    /// packets are then counted where the receivers drop them (`netem.corrupt_drops`).
    fn has_netem(&self) -> bool {
        false
    }
}

/// Every qdisc kind the scenario may name (tc's names), implemented or not.
pub const ALL_KINDS: &[&str] = &[
    "noqueue", "pfifo_fast", "pfifo", "bfifo", "pfifo_head_drop", "sfq", "codel", "fq_codel",
    "fq", "tbf", "htb", "cake", "mq", "pie", "fq_pie", "netem",
];

/// Kinds [`build`] can construct. `noqueue` and `mq` are structure, not algorithms: the
/// device model handles them.
pub const BUILDABLE_KINDS: &[&str] =
    &["pfifo_fast", "pfifo", "bfifo", "pfifo_head_drop", "sfq", "cake", "codel", "fq_codel", "fq", "tbf", "htb", "pie", "fq_pie", "netem"];

/// Why [`build`] could not make a qdisc.
#[derive(Clone, Debug, PartialEq)]
pub enum BuildError {
    /// The kind exists in Linux but the model does not have it yet.
    NotModelled(String),
    /// The kind is not a qdisc at all.
    UnknownKind(String),
    Param(ParamError),
}

impl From<ParamError> for BuildError {
    fn from(e: ParamError) -> Self {
        BuildError::Param(e)
    }
}

/// Makes a qdisc of `kind` from tc-style parameters (its `->init()` / `->change()`).
pub fn build(kind: &str, params: Params, dev: &DevInfo) -> Result<AnyQdisc, BuildError> {
    Ok(match kind {
        "pfifo_fast" => AnyQdisc::PfifoFast(pfifo_fast::PfifoFast::from_params(params, dev)?),
        "pfifo" | "bfifo" | "pfifo_head_drop" => {
            AnyQdisc::Fifo(fifo::Fifo::from_params(kind, params, dev)?)
        }
        "sfq" => AnyQdisc::Sfq(sfq::Sfq::from_params(params, dev)?),
        "codel" => AnyQdisc::Codel(codel::Codel::from_params(params, dev)?),
        "fq_codel" => AnyQdisc::FqCodel(fq_codel::FqCodel::from_params(params, dev)?),
        "fq" => AnyQdisc::Fq(fq::Fq::from_params(params, dev)?),
        "tbf" => AnyQdisc::Tbf(tbf::Tbf::from_params(params, dev)?),
        "htb" => AnyQdisc::Htb(htb::Htb::from_params(params, dev)?),
        "cake" => AnyQdisc::Cake(cake::Cake::from_params(params, dev)?),
        "pie" => AnyQdisc::Pie(pie::Pie::from_params(params, dev)?),
        "fq_pie" => AnyQdisc::FqPie(fq_pie::FqPie::from_params(params, dev)?),
        "netem" => AnyQdisc::Netem(Box::new(netem::Netem::from_params(params, dev)?)),
        k if ALL_KINDS.contains(&k) => return Err(BuildError::NotModelled(k.to_string())),
        k => return Err(BuildError::UnknownKind(k.to_string())),
    })
}

/// Every qdisc [`build`] makes, as one type.
///
/// The simulator enqueues and dequeues through this `match` rather than a `dyn Qdisc`
/// vtable: the compiler can then inline the algorithm into the run loop, and the packet
/// handed to `enqueue` stays in registers instead of being spilled for an indirect call.
/// The kernel has the same indirection (`q->enqueue`); in the simulator it sits on the
/// hottest path, so it is resolved statically. Each variant is still used through the
/// [`Qdisc`] trait, and tbf/htb children stay `Box<dyn Qdisc>`. `repr(u8)` gives the
/// enum a tag byte of its own: otherwise the tag sits in a niche of some variant's
/// fields and each dispatch decodes it.
#[repr(u8)]
pub enum AnyQdisc {
    PfifoFast(pfifo_fast::PfifoFast),
    Fifo(fifo::Fifo),
    Sfq(sfq::Sfq),
    Codel(codel::Codel),
    FqCodel(fq_codel::FqCodel),
    Fq(fq::Fq),
    Tbf(tbf::Tbf),
    Htb(htb::Htb),
    Cake(cake::Cake),
    Pie(pie::Pie),
    FqPie(fq_pie::FqPie),
    Netem(Box<netem::Netem>),
}

impl AnyQdisc {
    /// pie's controller state (`q->vars`), for the simulator's pie series: a root pie's
    /// only; the generic [`Qdisc`] trait knows nothing of pie.
    pub fn pie_vars(&self) -> Option<&pie::PieVars> {
        match self {
            AnyQdisc::Pie(p) => Some(p.vars()),
            _ => None,
        }
    }
}

/// One leaf qdisc of a classful qdisc ([`Qdisc::tc_leaves`]).
pub struct TcLeaf<'a> {
    /// Its class, the leaf's parent (`1:10` is 0x10010).
    pub classid: u32,
    pub qdisc: &'a dyn Qdisc,
    /// What was sent through the class (its `bstats`, which the leaf's own equal): bytes
    /// and packets (GSO segments).
    pub bytes: u64,
    pub packets: u64,
}

/// Calls `$call` on whichever qdisc `$self` holds.
macro_rules! dispatch {
    ($self:expr, $q:ident => $call:expr) => {
        match $self {
            AnyQdisc::PfifoFast($q) => $call,
            AnyQdisc::Fifo($q) => $call,
            AnyQdisc::Sfq($q) => $call,
            AnyQdisc::Codel($q) => $call,
            AnyQdisc::FqCodel($q) => $call,
            AnyQdisc::Fq($q) => $call,
            AnyQdisc::Tbf($q) => $call,
            AnyQdisc::Htb($q) => $call,
            AnyQdisc::Cake($q) => $call,
            AnyQdisc::Pie($q) => $call,
            AnyQdisc::FqPie($q) => $call,
            AnyQdisc::Netem($q) => $call,
        }
    };
}

impl Qdisc for AnyQdisc {
    fn kind(&self) -> &'static str {
        dispatch!(self, q => q.kind())
    }
    #[inline(always)]
    fn enqueue(&mut self, skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        dispatch!(self, q => q.enqueue(skb, now, drops))
    }
    #[inline]
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        dispatch!(self, q => q.dequeue(now, drops))
    }
    #[inline]
    fn qlen(&self) -> u32 {
        dispatch!(self, q => q.qlen())
    }
    #[inline]
    fn backlog(&self) -> u64 {
        dispatch!(self, q => q.backlog())
    }
    fn stats(&self) -> &QdiscStats {
        dispatch!(self, q => q.stats())
    }
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        dispatch!(self, q => q.xstats())
    }
    fn tc_options(&self) -> String {
        dispatch!(self, q => q.tc_options())
    }
    fn tc_xstats(&self) -> String {
        dispatch!(self, q => q.tc_xstats())
    }
    fn tc_leaves(&self) -> Vec<TcLeaf<'_>> {
        dispatch!(self, q => q.tc_leaves())
    }
    fn shaping(&self, priority: u32) -> Shaping {
        dispatch!(self, q => q.shaping(priority))
    }
    #[inline]
    fn can_bypass(&self) -> bool {
        dispatch!(self, q => q.can_bypass())
    }
    #[inline]
    fn next_wakeup(&self) -> Option<u64> {
        dispatch!(self, q => q.next_wakeup())
    }
    #[inline]
    fn arrival_dropped(&self, skb: &Skb, now: u64) -> Option<ArrivalDrop> {
        dispatch!(self, q => q.arrival_dropped(skb, now))
    }
    #[inline]
    fn drop_arrival(&mut self, drop: ArrivalDrop) {
        dispatch!(self, q => q.drop_arrival(drop))
    }
    #[inline]
    fn arrival_dropped_again(&self, skb: &Skb, now: u64, prev: ArrivalDrop) -> Option<ArrivalDrop> {
        dispatch!(self, q => q.arrival_dropped_again(skb, now, prev))
    }
    fn run_timers(&mut self, now: u64) {
        dispatch!(self, q => q.run_timers(now))
    }
    fn has_stack_ops(&self) -> bool {
        dispatch!(self, q => q.has_stack_ops())
    }
    fn has_netem(&self) -> bool {
        dispatch!(self, q => q.has_netem())
    }
    fn take_stack_ops(&mut self, ops: &mut Vec<StackOp>) {
        dispatch!(self, q => q.take_stack_ops(ops))
    }
}
