//! `tc -s qdisc show` of cake as iproute2 prints it: `cake_print_opt()` and
//! `cake_print_xstats()` (tc/q_cake.c) over what the kernel's `cake_dump()` and
//! `cake_dump_stats()` put in the netlink message.

use super::{AtmMode, Cake, FLOWMODE_BY_VALUE};
use crate::qdisc::tc_print::{rate, size, time};
use std::fmt::Write;

/// The per-tin rows, in `cake_print_xstats()`'s order, with the index of their value
/// in `Cake::tin_values()` (the kernel's dump order) and how tc formats it.
const TIN_ROWS: [(&str, usize, Fmt); 20] = [
    ("  thresh  ", 0, Fmt::Rate),
    ("  target  ", 3, Fmt::Time),
    ("  interval", 4, Fmt::Time),
    ("  pk_delay", 5, Fmt::Time),
    ("  av_delay", 6, Fmt::Time),
    ("  sp_delay", 7, Fmt::Time),
    ("  backlog ", 2, Fmt::Size),
    ("  pkts    ", 8, Fmt::Int),
    ("  bytes   ", 1, Fmt::Int),
    ("  way_inds", 9, Fmt::Int),
    ("  way_miss", 10, Fmt::Int),
    ("  way_cols", 11, Fmt::Int),
    ("  drops   ", 12, Fmt::Int),
    ("  marks   ", 13, Fmt::Int),
    ("  ack_drop", 14, Fmt::Int),
    ("  sp_flows", 15, Fmt::Int),
    ("  bk_flows", 16, Fmt::Int),
    ("  un_flows", 17, Fmt::Int),
    ("  max_len ", 18, Fmt::Int),
    ("  quantum ", 19, Fmt::Int),
];

#[derive(Clone, Copy)]
enum Fmt {
    /// `sprint_rate()` of bytes/s.
    Rate,
    /// `sprint_time()` of µs (u32 in the netlink attribute).
    Time,
    /// `sprint_size()` of bytes.
    Size,
    /// `%12u` / `%12llu`.
    Int,
}

impl Cake {
    /// `cake_print_opt()`: every option the kernel dumps, in tc's order. `nat` is not
    /// modelled (the model accepts only its default), nor is
    /// `autorate-ingress` (its attribute is 0: nothing printed). iproute2 never reads
    /// `TCA_CAKE_MEMORY` back, so `memlimit` is not printed even when set.
    pub(super) fn tc_print_opt(&self) -> String {
        let c = &self.cfg;
        let mut s = String::new();
        if c.rate_bps > 0 {
            let _ = write!(s, "bandwidth {} ", rate(c.rate_bps));
        } else {
            s.push_str("bandwidth unlimited ");
        }
        let _ = write!(s, "{} {} nonat ", c.tin_mode.name(), FLOWMODE_BY_VALUE[c.flow_mode as usize & 7]);
        s.push_str(if c.wash { "wash " } else { "nowash " });
        if c.ingress {
            s.push_str("ingress ");
        }
        s.push_str(c.ack_filter.name());
        s.push(' ');
        s.push_str(if c.split_gso { "split-gso " } else { "no-split-gso " });
        if c.interval_us > 0 {
            let _ = write!(s, "rtt {} ", time(c.interval_us));
        }
        // TCA_CAKE_RAW is dumped when no overhead was configured (CAKE_FLAG_OVERHEAD).
        let raw = !c.overhead_flag;
        if raw {
            s.push_str("raw ");
        }
        match c.atm_mode {
            AtmMode::Atm => s.push_str("atm "),
            AtmMode::Ptm => s.push_str("ptm "),
            AtmMode::None if !raw => s.push_str("noatm "),
            AtmMode::None => {}
        }
        let _ = write!(s, "overhead {}", c.rate_overhead);
        if c.rate_mpu > 0 {
            let _ = write!(s, " mpu {}", c.rate_mpu);
        }
        s
    }

    /// `cake_print_xstats()`: the memory, capacity and size lines, then one column
    /// per tin in `tin_order` (Bulk, Best Effort, Voice for diffserv3).
    pub(super) fn tc_print_xstats(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, " memory used: {} of {}", size(self.buffer_max_used), size(self.buffer_limit));
        let _ = writeln!(s, " capacity estimate: {}", rate(self.avg_peak_bandwidth));
        let _ = writeln!(s, " min/max network layer size: {:>12} /{:>8}", self.min_netlen, self.max_netlen);
        let _ = writeln!(s, " min/max overhead-adjusted size: {:>8} /{:>8}", self.min_adjlen, self.max_adjlen);
        let _ = writeln!(s, " average network hdr offset: {:>12}\n", (self.avg_netoff as u64 + 0x8000) >> 16);
        let tins: Vec<[u64; 20]> =
            self.tin_order.iter().take(self.tin_cnt).map(|&t| self.tin_values(&self.tins[t as usize])).collect();
        match tins.len() {
            3 => s.push_str("                   Bulk  Best Effort        Voice"),
            4 => s.push_str("                   Bulk  Best Effort        Video        Voice"),
            n => {
                s.push_str("          ");
                for i in 0..n {
                    let _ = write!(s, "        Tin {i}");
                }
            }
        }
        for (name, idx, fmt) in TIN_ROWS {
            s.push('\n');
            s.push_str(name);
            for t in &tins {
                let v = t[idx];
                let cell = match fmt {
                    Fmt::Rate => rate(v),
                    Fmt::Time => time(v as u32),
                    Fmt::Size => size(v as u32 as u64),
                    Fmt::Int => v.to_string(),
                };
                let _ = write!(s, " {cell:>12}");
            }
        }
        s
    }
}
