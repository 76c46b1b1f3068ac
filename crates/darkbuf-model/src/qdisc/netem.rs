//! netem: mirrors net/sched/sch_netem.c (`netem_enqueue()`, `netem_dequeue()`,
//! `netem_change()`, `get_slot_next()`), with the parameter handling of iproute2's
//! tc/q_netem.c. The random delay, the loss models, reordering, the rate's packet time
//! and the tfifo are `crate::netem`'s, which the simulator's path netem shares.
//!
//! A packet is held in the tfifo until its time to send, `now + tabledist(delay,
//! jitter)` (with a rate: after the last packet queued, plus its own time at the
//! rate). `netem_enqueue()` in the kernel's order:
//! 1. duplicate draw (`q->duplicate >= get_crandom(&q->dup_cor)`), not for a clone;
//! 2. `loss_event()`; with `ecn` an ECN-capable packet is marked CE instead (and counted
//!    as a drop, as the kernel counts it); a lost packet is dropped whole, a GSO skb
//!    too, and the sender sees success (`NET_XMIT_SUCCESS | __NET_XMIT_BYPASS`);
//! 3. with a delay, a jitter or a rate, `skb_orphan_partial()`: the socket gets its
//!    send-buffer charge back at once (TCP Small Queues no longer holds the flow);
//! 4. the corrupt draw: one bit of the packet's linear part flipped; a GSO skb is first
//!    segmented (`netem_segment()`) and only its first segment corrupted;
//! 5. `sch->q.qlen >= sch->limit` drops the packet (and its clone);
//! 6. the clone enters the root qdisc (`rootq->enqueue()`), marked so that no netem
//!    duplicates it again (`skb->tc_depth`);
//! 7. reordering (`reorder P [C] [gap G]`): one packet in `gap` may go to the head of
//!    the queue, due at once (counted as a requeue); the others take their delay.
//!
//! `netem_dequeue()`: reordered packets first; then the tfifo's earliest packet once it
//! is due and the slot (`slot`) is open. With a child qdisc (`[qdisc.child]`), every
//! due packet moves into the child and the child is dequeued; `sch->q.qlen` counts the
//! child's packets too, so the limit covers them ("net: sched: netem: account for
//! backlog updates from child qdisc", 6.13, in the 6.1 and 6.6 stable series).
//!
//! What the model hands to its caller (the kernel calls into the stack from the
//! enqueue): the orphaning, the clone, the corruption and the segmentation are
//! [`StackOp`]s, which the simulator carries out after the enqueue returns. So the
//! clone reaches the root after its original rather than in the middle of its enqueue;
//! for a netem at the root the two draw their delays in the other order. The corrupted
//! byte is drawn from netem's stream (the kernel uses `get_random_u32_below()`).
//!
//! Not modelled: `distribution experimental` or other measured tables (only the ones
//! iproute2 generates), `slot distribution` tables other than those, and the 2.6-era
//! compatibility of a `gap` without a `reorder` (tc always sends the reorder).

use super::{BuildError, DevInfo, EnqueueVerdict, Qdisc, QdiscStats, StackOp};
use crate::netem::{parse_loss, parse_percent, parse_probability, set_percent, CrndState, Distribution, LossModel, LossState, NetemJitter, NetemRate, Tfifo};
use crate::params::{ParamError, ParamValue, Params};
use crate::units;
use crate::Skb;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// tc's default `limit` (q_netem.c: `opt.limit = 1000`).
pub const NETEM_DEFAULT_LIMIT: u32 = 1000;
/// The longest delay taken (2^62 ns, 146 years): the kernel's s64 without its overflow.
const NETEM_DELAY_MAX_NS: u64 = 1 << 62;

const NETEM_PARAMS: &[&str] = &[
    "limit", "delay", "jitter", "distribution", "loss", "ecn", "duplicate", "corrupt", "reorder", "gap", "rate", "slot",
    "seed", "child",
];

fn invalid(key: &str, message: impl Into<String>, expected: impl Into<String>) -> ParamError {
    ParamError::Invalid { key: key.into(), message: message.into(), expected: expected.into() }
}

/// netem's `slot` (`struct tc_netem_slot` and `struct slotstate`): packets leave only in
/// slots, each `min_delay..max_delay` (uniform) or `tabledist(dist_delay, dist_jitter)`
/// after the last, with at most `max_packets` and `max_bytes` in one.
#[derive(Clone, Debug)]
struct Slot {
    min_delay: i64,
    max_delay: i64,
    dist: Option<Box<[i16]>>,
    dist_delay: i64,
    dist_jitter: i32,
    max_packets: i32,
    max_bytes: i32,
    /// `q->slot`: when the next slot opens, and what is left of the current one.
    slot_next: u64,
    packets_left: i32,
    bytes_left: i32,
}

/// The netem qdisc (`struct netem_sched_data`).
pub struct Netem {
    /// `sch->limit`.
    limit: u32,
    /// `q->latency`, ns.
    latency: i64,
    /// `q->jitter`, the delay's table, reordering.
    jitter: NetemJitter,
    /// The loss model (`None`: `q->loss` 0 with the random model).
    loss: Option<LossState>,
    ecn: bool,
    /// `q->duplicate` and `q->dup_cor`.
    duplicate: u32,
    dup_cor: CrndState,
    /// `q->corrupt` and `q->corrupt_cor`.
    corrupt: u32,
    corrupt_cor: CrndState,
    rate: NetemRate,
    slot: Option<Slot>,
    /// `q->prng`: every draw of this netem.
    prng: ChaCha8Rng,
    /// The tfifo, by time to send.
    tfifo: Tfifo<Skb>,
    /// `sch->q`: reordered packets, due at once, the last queued first; each with its
    /// time to send (the rate's reference point reads the tail's).
    head: VecDeque<(u64, Skb)>,
    /// `q->qdisc`: the child qdisc, if any.
    child: Option<Box<dyn Qdisc>>,
    /// Bytes in the tfifo and `sch->q` (the child keeps its own).
    own_backlog: u64,
    stats: QdiscStats,
    /// What the stack has to do for the last enqueue.
    ops: Vec<StackOp>,
    /// The configuration as tc shows it.
    shown: String,
}

impl Netem {
    /// Mirrors tc's `netem_parse_opt()` then the kernel's `netem_init()` /
    /// `netem_change()`. Each parameter takes what tc takes after its keyword:
    /// `delay` a time, `jitter` "J [C]", `distribution` a name, `loss` a percentage or
    /// a model ("random P [C]", "state ...", "gemodel ..."), `ecn`, `duplicate` and
    /// `corrupt` "P [C]", `reorder` "P [C]" with `gap` N, `rate` "RATE [PACKETOVERHEAD
    /// [CELLSIZE [CELLOVERHEAD]]]", `slot` "MIN [MAX] [packets N] [bytes N]" or
    /// "distribution NAME DELAY JITTER [packets N] [bytes N]", `limit` packets, `seed`
    /// (TCA_NETEM_PRNG_SEED; by default one from the scenario's seed), and `child` the
    /// child qdisc (`[qdisc.child]`: a table with its `kind`).
    pub fn from_params(mut params: Params, dev: &DevInfo) -> Result<Self, ParamError> {
        let limit = params.take_u32("limit", NETEM_DEFAULT_LIMIT, 0, u32::MAX)?;
        let latency = params.take_time_ns("delay", 0, 0, NETEM_DELAY_MAX_NS)? as i64;
        let (jitter_ns, delay_corr) = take_words(&mut params, "jitter", "a jitter [correlation], e.g. \"10ms\" or \"10ms 25%\"", |w| {
            let (first, rest) = w.split_first().ok_or("empty")?;
            let ns = units::parse_duration_ns(first).map_err(|u| u.message)?;
            let ns = ns.clamp(0, i32::MAX as i128) as i32;
            let corr = match rest {
                [] => 0,
                [c] => set_percent(parse_percent(c)?),
                _ => return Err("at most a jitter and a correlation".into()),
            };
            Ok((ns, corr))
        })?
        .unwrap_or((0, 0));
        let dist = take_distribution(&mut params, "distribution")?;
        let loss = take_loss(&mut params)?;
        let ecn = params.take_bool("ecn", false)?;
        let duplicate = take_words(&mut params, "duplicate", PROB_HELP, |w| parse_probability(w))?;
        let corrupt = take_words(&mut params, "corrupt", PROB_HELP, |w| parse_probability(w))?;
        let reorder = take_words(&mut params, "reorder", PROB_HELP, |w| parse_probability(w))?;
        let has_gap = params.iter().any(|(k, _)| k == "gap");
        let gap = match has_gap {
            true => Some(params.take_u32("gap", 0, 1, u32::MAX)?),
            false => None,
        };
        let rate = take_words(&mut params, "rate", RATE_HELP, parse_rate)?.unwrap_or_default();
        let slot = take_words(&mut params, "slot", SLOT_HELP, parse_slot)?;
        let seed = params.take_u64("seed", 0, 0, u64::MAX).map(|s| (s != 0).then_some(s))?;
        let child = take_child(&mut params, dev)?;
        params.finish(NETEM_PARAMS)?;

        // tc's refusals, in its order.
        if dist.is_some() && (latency == 0 || jitter_ns == 0) {
            return Err(invalid("distribution", "distribution specified but no latency and jitter values", "a delay and a jitter with it"));
        }
        if ecn && loss.is_none() {
            return Err(invalid("ecn", "ecn requested without loss model", "a loss with it"));
        }
        let (reorder, reorder_corr, gap) = match (reorder, gap) {
            (Some((p, c)), g) if p != 0 => {
                if latency == 0 {
                    return Err(invalid("reorder", "reordering not possible without specifying some delay", "a delay with it"));
                }
                (p, c, g.unwrap_or(1))
            }
            (_, Some(_)) => return Err(invalid("gap", "gap specified without reorder probability", "a reorder probability with it")),
            _ => (0, 0, 0),
        };

        let seed = seed.unwrap_or(0x6e65_7465_6d00_0000 ^ dev.hash_key as u64);
        let mut prng = ChaCha8Rng::seed_from_u64(seed);
        // init_crandom(): `last` from get_random_u32(), here the netem's own stream.
        let mut crnd = |rho: u32| CrndState::new(rho, if rho == 0 { 0 } else { prng.next_u32() });
        let jitter = NetemJitter {
            jitter: jitter_ns,
            delay_cor: crnd(delay_corr),
            dist: dist.and_then(|d| d.table()).map(Vec::into_boxed_slice),
            reorder,
            reorder_cor: crnd(reorder_corr),
            gap,
            counter: 0,
        };
        let (duplicate, dup_corr) = duplicate.unwrap_or((0, 0));
        let (corrupt, corrupt_corr) = corrupt.unwrap_or((0, 0));
        let dup_cor = crnd(dup_corr);
        let corrupt_cor = crnd(corrupt_corr);
        let loss = loss.map(|m| LossState::new(m, &mut crnd));
        let shown = show(limit, latency, &jitter, delay_corr, dist, loss.map(|l| l.model()), ecn, (duplicate, dup_corr), (corrupt, corrupt_corr), (reorder, reorder_corr, gap), rate);
        Ok(Netem {
            limit,
            latency,
            jitter,
            loss,
            ecn,
            duplicate,
            dup_cor,
            corrupt,
            corrupt_cor,
            rate,
            slot,
            prng,
            tfifo: Tfifo::with_capacity(limit.clamp(16, 4096) as usize),
            head: VecDeque::new(),
            child,
            own_backlog: 0,
            stats: QdiscStats::default(),
            ops: Vec::new(),
            shown,
        })
    }

    /// Whether a packet is held for a time here, so it is orphaned on entry.
    fn delays(&self) -> bool {
        self.latency != 0 || self.jitter.jitter != 0 || self.rate.rate != 0
    }

    /// A corrupt draw's two numbers: the byte (`get_random_u32_below(skb_headlen())`,
    /// scaled by the simulator, which knows the linear part) and the bit.
    fn corrupt_op(&mut self, id: u32) -> StackOp {
        let byte_rnd = self.prng.next_u32();
        let bit = ((self.prng.next_u32() as u64 * 8) >> 32) as u8;
        StackOp::Corrupt { id, byte_rnd, bit }
    }

    /// The draws of `netem_enqueue()` before the limit: duplication, loss (or an ECN
    /// mark), corruption. `Err(verdict)` when the packet leaves here (lost, or handed
    /// to the stack for segmentation); `Ok(clone)` otherwise, with the clone to make.
    fn enqueue_draws(&mut self, skb: &mut Skb, drops: &mut Vec<u32>) -> Result<bool, EnqueueVerdict> {
        if skb.netem_mark & Skb::NETEM_CORRUPT_SEG != 0 {
            // The first segment of a GSO skb this netem chose to corrupt: its draws were
            // made for the skb; it continues where netem_segment() left it.
            skb.netem_mark &= !Skb::NETEM_CORRUPT_SEG;
            let op = self.corrupt_op(skb.id);
            self.ops.push(op);
            return Ok(false);
        }
        let mut count = 1;
        if self.duplicate != 0 && skb.netem_mark & Skb::NETEM_CLONE == 0 && self.duplicate >= self.dup_cor.get_crandom(&mut self.prng) {
            count += 1;
        }
        if let Some(loss) = self.loss.as_mut() {
            if loss.loss_event(&mut self.prng) {
                if self.ecn && skb.set_ce() {
                    // "mark packet": counted as a drop all the same.
                    self.stats.drops += 1;
                } else {
                    count -= 1;
                }
            }
        }
        if count == 0 {
            self.stats.drops += 1;
            drops.push(skb.id);
            return Err(EnqueueVerdict::Success);
        }
        if self.delays() {
            self.ops.push(StackOp::Orphan(skb.id));
        }
        if self.corrupt != 0 && self.corrupt >= self.corrupt_cor.get_crandom(&mut self.prng) {
            if skb.segs() > 1 {
                // The clone is of the whole skb, made before it is cut (skb_clone() comes
                // first); then netem_segment(): the stack cuts it, the first segment
                // comes back here to be corrupted, the others through a full enqueue each.
                if count > 1 {
                    self.ops.push(StackOp::Clone(Skb { netem_mark: skb.netem_mark | Skb::NETEM_CLONE, ..*skb }));
                }
                self.ops.push(StackOp::SegmentCorrupt(*skb));
                return Err(EnqueueVerdict::Success);
            }
            let op = self.corrupt_op(skb.id);
            self.ops.push(op);
        }
        Ok(count > 1)
    }

    /// The time to send of a packet that is not reordered: `tabledist()` from now, and
    /// with a rate, behind the last packet queued plus its time at the rate.
    fn time_to_send(&mut self, len: u32, now: u64) -> u64 {
        let delay = self.jitter.delay(self.latency, &mut self.prng);
        let mut at = (now as i64).saturating_add(delay);
        if self.rate.rate != 0 {
            // The latest of sch->q's tail and the tfifo's last.
            let last = self.head.back().map(|e| e.0).into_iter().chain(self.tfifo.last_time_to_send()).max();
            if let Some(last) = last {
                at = at.max(last as i64);
            }
            at = at.saturating_add(i64::try_from(self.rate.packet_time_ns(len as u64)).unwrap_or(i64::MAX));
        }
        at.max(0) as u64
    }

    /// `get_slot_next()`: the next slot opens `min..max` (uniform) or
    /// `tabledist(dist_delay, dist_jitter)` after `now`.
    fn get_slot_next(&mut self, now: u64) {
        let Some(s) = self.slot.as_mut() else { return };
        let next_delay = match s.dist.as_deref() {
            None => s.min_delay + (((s.max_delay - s.min_delay) as u128 * self.prng.next_u32() as u128) >> 32) as i64,
            Some(t) => crate::netem::tabledist(s.dist_delay, s.dist_jitter, &mut CrndState::default(), &mut self.prng, Some(t)),
        };
        s.slot_next = (now as i64).saturating_add(next_delay).max(0) as u64;
        s.packets_left = s.max_packets;
        s.bytes_left = s.max_bytes;
    }

    /// The child's dequeue, counting what it dropped.
    fn child_dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        let child = self.child.as_mut()?;
        let before = drops.len();
        let skb = child.dequeue(now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        skb
    }

    /// A due packet leaves the tfifo: into the child (its drops counted here), or out.
    fn tfifo_release(&mut self, skb: Skb, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        self.own_backlog -= skb.len as u64;
        if let Some(s) = self.slot.as_mut() {
            s.packets_left -= 1;
            s.bytes_left = s.bytes_left.wrapping_sub(skb.len as i32);
            if s.packets_left <= 0 || s.bytes_left <= 0 {
                self.get_slot_next(now);
            }
        }
        let Some(child) = self.child.as_mut() else { return Some(skb) };
        let before = drops.len();
        child.enqueue(skb, now, drops);
        self.stats.drops += (drops.len() - before) as u64;
        child.take_stack_ops(&mut self.ops);
        None
    }
}

const PROB_HELP: &str = "a probability [correlation] as tc takes it, e.g. \"1%\" or \"1% 25%\"";
const RATE_HELP: &str = "a rate [packetoverhead [cellsize [celloverhead]]] as tc takes it, e.g. \"10mbit\" or \"10mbit 20 48 5\"";
const SLOT_HELP: &str = "\"MIN [MAX] [packets N] [bytes N]\" or \"distribution NAME DELAY JITTER [packets N] [bytes N]\", as tc takes them";

/// A string parameter split into tc's words and parsed by `parse`; a number is one word.
fn take_words<T>(params: &mut Params, key: &str, help: &str, parse: impl Fn(&[&str]) -> Result<T, String>) -> Result<Option<T>, ParamError> {
    let text = match params.take_value(key) {
        None => return Ok(None),
        Some(ParamValue::Str(s)) => s,
        Some(ParamValue::Int(i)) => i.to_string(),
        Some(ParamValue::Float(f)) => f.to_string(),
        Some(other) => return Err(invalid(key, format!("{other} is not valid"), help)),
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    parse(&words).map(Some).map_err(|why| invalid(key, format!("\"{text}\": {why}"), help))
}

fn take_distribution(params: &mut Params, key: &str) -> Result<Option<Distribution>, ParamError> {
    const HELP: &str = "one of uniform (the default), normal, pareto, paretonormal";
    match params.take_str(key)? {
        None => Ok(None),
        Some(s) => match Distribution::from_name(&s) {
            Some(Distribution::Uniform) => Ok(None),
            Some(d) => Ok(Some(d)),
            None => Err(invalid(key, format!("\"{s}\" is not a distribution iproute2 generates"), HELP)),
        },
    }
}

fn take_loss(params: &mut Params) -> Result<Option<LossModel>, ParamError> {
    const HELP: &str = "netem's loss as tc takes it: a percentage (\"1%\" or 0.5), \"random P [C]\", \"state p13 [p31 [p32 [p23 [p14]]]]\" or \"gemodel p [r [1-h [1-k]]]\"";
    Ok(take_words(params, "loss", HELP, parse_loss)?.flatten())
}

/// `rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]` (tc: `get_rate64()` then
/// `get_s32()`, `get_u32()`, `get_s32()`).
fn parse_rate(w: &[&str]) -> Result<NetemRate, String> {
    let (first, rest) = w.split_first().ok_or("empty")?;
    let bps = match units::parse_rate(first).map_err(|u| u.message)? {
        units::Rate::Bps(b) => b,
        _ => return Err(format!("\"{first}\" is not a bit rate")),
    };
    if rest.len() > 3 {
        return Err("at most a rate, a packet overhead, a cell size and a cell overhead".into());
    }
    let int = |i: usize| -> Result<i64, String> { rest.get(i).map_or(Ok(0), |s| s.parse::<i64>().map_err(|_| format!("\"{s}\" is not an integer"))) };
    let packet_overhead = int(0)?;
    let cell_size = int(1)?;
    let cell_overhead = int(2)?;
    let s32 = |v: i64| i32::try_from(v).map_err(|_| format!("{v} is out of range"));
    Ok(NetemRate {
        rate: bps / 8,
        packet_overhead: s32(packet_overhead)?,
        cell_size: u32::try_from(cell_size).map_err(|_| format!("cell size {cell_size} is out of range"))?,
        cell_overhead: s32(cell_overhead)?,
    })
}

/// `slot MIN [MAX] [packets N] [bytes N]` or `slot distribution NAME DELAY JITTER
/// [packets N] [bytes N]`; then `get_slot()`'s defaults (0 packets or bytes: no limit).
fn parse_slot(w: &[&str]) -> Result<Slot, String> {
    let time = |s: &str| units::parse_duration_ns(s).map_err(|u| u.message).map(|v| v.clamp(0, i64::MAX as i128) as i64);
    let mut s = Slot { min_delay: 0, max_delay: 0, dist: None, dist_delay: 0, dist_jitter: 0, max_packets: 0, max_bytes: 0, slot_next: 0, packets_left: 0, bytes_left: 0 };
    let mut i;
    if w.first() == Some(&"distribution") {
        let name = w.get(1).ok_or("distribution needs a name")?;
        let d = Distribution::from_name(name).filter(|d| *d != Distribution::Uniform).ok_or(format!("\"{name}\" is not a distribution iproute2 generates (normal, pareto, paretonormal)"))?;
        s.dist = d.table().map(Vec::into_boxed_slice);
        s.dist_delay = time(w.get(2).ok_or("a distribution slot needs a delay and a jitter")?)?;
        s.dist_jitter = time(w.get(3).ok_or("a distribution slot needs a jitter")?)?.min(i32::MAX as i64) as i32;
        i = 4;
    } else {
        s.min_delay = time(w.first().ok_or("empty")?)?;
        s.max_delay = s.min_delay;
        i = 1;
        if let Some(m) = w.get(1).filter(|m| !["packets", "bytes"].contains(*m)) {
            s.max_delay = time(m)?;
            i = 2;
        }
        if s.min_delay > s.max_delay {
            return Err("slot min delay greater than max delay".into());
        }
    }
    while i < w.len() {
        let v = w.get(i + 1).ok_or(format!("`{}` needs a value", w[i]))?;
        match w[i] {
            "packets" => s.max_packets = v.parse::<i32>().ok().filter(|p| *p >= 0).ok_or(format!("\"{v}\" is not a packet count"))?,
            "bytes" => s.max_bytes = i32::try_from(units::parse_size_bytes(v).map_err(|u| u.message)?).map_err(|_| "too many bytes".to_string())?,
            other => return Err(format!("unexpected \"{other}\"")),
        }
        i += 2;
    }
    if s.max_packets == 0 {
        s.max_packets = i32::MAX;
    }
    if s.max_bytes == 0 {
        s.max_bytes = i32::MAX;
    }
    (s.packets_left, s.bytes_left) = (s.max_packets, s.max_bytes);
    Ok(s)
}

/// The child qdisc (`[qdisc.child]`: a table with its `kind`), built as a grafted
/// `tc qdisc add ... parent 1:1` would be.
fn take_child(params: &mut Params, dev: &DevInfo) -> Result<Option<Box<dyn Qdisc>>, ParamError> {
    let Some(v) = params.take_value("child") else { return Ok(None) };
    let ParamValue::Table(mut p) = v else {
        return Err(invalid("child", format!("{v} is not a qdisc"), "a [qdisc.child] table with its kind"));
    };
    let kind = p.take_str("kind")?.ok_or_else(|| invalid("child.kind", "the child needs a kind", "a qdisc kind"))?;
    match super::build(&kind, p, dev) {
        Ok(q) => Ok(Some(Box::new(q))),
        Err(BuildError::Param(e)) => Err(e.nested_in("child")),
        Err(BuildError::NotModelled(k)) | Err(BuildError::UnknownKind(k)) => {
            Err(invalid("child.kind", format!("\"{k}\" is not a modelled qdisc"), format!("one of {}", super::BUILDABLE_KINDS.join(", "))))
        }
    }
}

/// `netem_print_opt()`'s line (iproute2 6.x).
#[allow(clippy::too_many_arguments)]
fn show(limit: u32, latency: i64, j: &NetemJitter, delay_corr: u32, dist: Option<Distribution>, loss: Option<LossModel>, ecn: bool, dup: (u32, u32), corrupt: (u32, u32), reorder: (u32, u32, u32), rate: NetemRate) -> String {
    use super::tc_print::{rate as rate_s, time64};
    let pct = |v: u32| format!("{}%", super::tc_print::g(v as f64 / u32::MAX as f64 * 100.0));
    let mut s = format!("limit {limit}");
    if latency != 0 {
        s += &format!(" delay {}", time64(latency as u64));
        if j.jitter != 0 {
            s += &format!("  {}", time64(j.jitter as u64));
            if delay_corr != 0 {
                s += &format!(" {}", pct(delay_corr));
            }
        }
    }
    match loss {
        Some(LossModel::Random { loss, corr }) => {
            s += &format!(" loss {}", pct(loss));
            if corr != 0 {
                s += &format!(" {}", pct(corr));
            }
        }
        Some(LossModel::State { p13, p31, p32, p23, p14 }) => {
            s += &format!(" loss state p13 {} p31 {} p32 {} p23 {} p14 {}", pct(p13), pct(p31), pct(p32), pct(p23), pct(p14))
        }
        Some(LossModel::Gemodel { p, r, h, k1 }) => s += &format!(" loss gemodel p {} r {} 1-h {} 1-k {}", pct(p), pct(r), pct(u32::MAX - h), pct(k1)),
        None => {}
    }
    if ecn {
        s += " ecn ";
    }
    for (word, (p, c)) in [("duplicate", dup), ("reorder", (reorder.0, reorder.1)), ("corrupt", corrupt)] {
        if p != 0 {
            s += &format!(" {word} {}", pct(p));
            if c != 0 {
                s += &format!(" {}", pct(c));
            }
        }
    }
    if rate.rate != 0 {
        s += &format!(" rate {}", rate_s(rate.rate));
        if rate.packet_overhead != 0 {
            s += &format!(" packetoverhead {}", rate.packet_overhead);
        }
        if rate.cell_size != 0 {
            s += &format!(" cellsize {}", rate.cell_size);
        }
        if rate.cell_overhead != 0 {
            s += &format!(" celloverhead {}", rate.cell_overhead);
        }
    }
    if reorder.2 > 1 {
        s += &format!(" gap {}", reorder.2);
    }
    let _ = dist;
    s
}

impl Qdisc for Netem {
    fn kind(&self) -> &'static str {
        "netem"
    }

    fn tc_options(&self) -> String {
        self.shown.clone()
    }

    /// `netem_enqueue()`.
    fn enqueue(&mut self, mut skb: Skb, now: u64, drops: &mut Vec<u32>) -> EnqueueVerdict {
        let clone = match self.enqueue_draws(&mut skb, drops) {
            Ok(clone) => clone,
            Err(verdict) => return verdict,
        };
        if self.qlen() >= self.limit {
            // qdisc_drop_all(): the packet (and the clone, never made here).
            self.stats.drops += 1;
            drops.push(skb.id);
            return EnqueueVerdict::Dropped;
        }
        if clone {
            self.ops.push(StackOp::Clone(Skb { netem_mark: skb.netem_mark | Skb::NETEM_CLONE, ..skb }));
        }
        self.own_backlog += skb.len as u64;
        if self.jitter.reorder_now(&mut self.prng) {
            // __qdisc_enqueue_head() of a packet due now.
            self.head.push_front((now, skb));
            self.stats.requeues += 1;
        } else {
            let at = self.time_to_send(skb.len, now);
            self.tfifo.enqueue(at, skb);
        }
        EnqueueVerdict::Success
    }

    /// `netem_dequeue()`.
    fn dequeue(&mut self, now: u64, drops: &mut Vec<u32>) -> Option<Skb> {
        loop {
            if let Some((_, skb)) = self.head.pop_front() {
                self.own_backlog -= skb.len as u64;
                return Some(skb);
            }
            let Some((time_to_send, _)) = self.tfifo.peek() else { break };
            if self.slot.as_ref().is_some_and(|s| s.slot_next < time_to_send) {
                self.get_slot_next(now);
            }
            let slot_next = self.slot.as_ref().map_or(0, |s| s.slot_next);
            if time_to_send <= now && slot_next <= now {
                let (_, skb) = self.tfifo.pop().expect("peeked");
                match self.tfifo_release(skb, now, drops) {
                    Some(skb) => return Some(skb),
                    None => continue,
                }
            }
            if let Some(skb) = self.child_dequeue(now, drops) {
                return Some(skb);
            }
            // qdisc_watchdog_schedule_ns(max(time_to_send, slot_next)): next_wakeup().
            break;
        }
        self.child_dequeue(now, drops)
    }

    fn qlen(&self) -> u32 {
        (self.tfifo.len() + self.head.len()) as u32 + self.child.as_ref().map_or(0, |c| c.qlen())
    }

    fn backlog(&self) -> u64 {
        self.own_backlog + self.child.as_ref().map_or(0, |c| c.backlog())
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    /// netem has no xstats of its own; a child qdisc's, as `tc -s qdisc show` dumps it.
    fn xstats(&self) -> Vec<(&'static str, u64)> {
        super::xstat::with_children(Vec::new(), self.child.as_deref())
    }

    /// The watchdog `netem_dequeue()` arms for the tfifo's head (when its time and its
    /// slot come), or the child's own.
    fn next_wakeup(&self) -> Option<u64> {
        let own = self.tfifo.peek().map(|(t, _)| t.max(self.slot.as_ref().map_or(0, |s| s.slot_next)));
        let child = self.child.as_ref().and_then(|c| if c.qlen() > 0 { c.next_wakeup() } else { None });
        match (own, child) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn run_timers(&mut self, now: u64) {
        if let Some(c) = self.child.as_mut() {
            c.run_timers(now);
        }
    }

    fn has_stack_ops(&self) -> bool {
        true
    }

    fn has_netem(&self) -> bool {
        true
    }

    /// The least delay `tabledist()` can draw (`latency - jitter` uniform; with a
    /// table, its most negative entry's share of the jitter), and the `rate`: each
    /// packet leaves its predecessor's time to send plus its own `packet_time_ns()`
    /// later. Then the child's.
    fn shaping(&self, priority: u32) -> super::Shaping {
        use super::{PacketCost, TokenBucket};
        let j = self.jitter.jitter as i64;
        let reach = match self.jitter.dist.as_deref() {
            None => j,
            Some(t) => {
                let most = -(t.iter().copied().min().unwrap_or(0).min(0) as i64);
                (j * most) / crate::netem::NETEM_DIST_SCALE + 1
            }
        };
        let min_delay_ns = (self.latency - reach).max(0) as u64;
        let buckets = match self.rate.rate {
            0 => Vec::new(),
            _ => vec![TokenBucket { cost: PacketCost::Netem(self.rate), depth_ns: 0, overdraw: false }],
        };
        let s = super::Shaping { buckets, min_delay_ns };
        match self.child.as_deref() {
            Some(q) => s.then(q.shaping(priority)),
            None => s,
        }
    }

    fn take_stack_ops(&mut self, ops: &mut Vec<StackOp>) {
        ops.append(&mut self.ops);
        if let Some(c) = self.child.as_mut() {
            c.take_stack_ops(ops);
        }
    }
}
