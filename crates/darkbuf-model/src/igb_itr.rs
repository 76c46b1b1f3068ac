//! igb's dynamic interrupt throttle: mirrors `igb_update_ring_itr()`
//! (drivers/net/ethernet/intel/igb/igb_main.c), which the driver runs at the end of
//! each poll of a multi-vector interface (`igb_ring_irq_enable()`) when `tx-usecs` is 1
//! or 3 (dynamic; 3 = conservative, igb's default `IGB_DEFAULT_ITR`), and writes the
//! result to the vector's EITR at its next interrupt (`igb_write_itr()`).
//!
//! The throttle is the minimum interval between two interrupts, in EITR units of
//! 0.25 µs: at gigabit speed, half the average wire size of the frames of the last
//! poll (a third for mid-size frames), so bulk 1500-byte traffic gets ~192 µs (5,200
//! interrupts/s) and small packets less; the conservative mode never goes below
//! `IGB_20K_ITR` (50 µs). At any other link speed it is fixed at `IGB_4K_ITR` (245 µs).

/// `IGB_START_ITR`, `IGB_4K_ITR`, `IGB_20K_ITR` (EITR units of 0.25 µs).
pub const IGB_START_ITR: u32 = 648;
pub const IGB_4K_ITR: u32 = 980;
pub const IGB_20K_ITR: u32 = 196;
/// Nanoseconds per EITR unit.
pub const ITR_UNIT_NS: u64 = 250;

/// A vector's counters since its last update, and its ITR value.
#[derive(Clone, Copy, Debug)]
pub struct IgbItr {
    /// `q_vector->itr_val`.
    pub itr_val: u32,
    /// `tx.total_bytes` / `tx.total_packets` and the RX ones (frames and their bytes).
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    /// The conservative mode (`tx-usecs 3`).
    pub conservative: bool,
}

impl IgbItr {
    pub fn new(conservative: bool) -> IgbItr {
        IgbItr { itr_val: IGB_START_ITR, tx_bytes: 0, tx_packets: 0, rx_bytes: 0, rx_packets: 0, conservative }
    }

    /// The throttle interval, ns.
    pub fn interval_ns(&self) -> u64 {
        self.itr_val as u64 * ITR_UNIT_NS
    }

    /// `igb_update_ring_itr()` at the end of a poll; returns the new ITR value when it
    /// changed (`set_itr`: it is written at the next interrupt).
    pub fn update_ring_itr(&mut self, gigabit: bool) -> Option<u32> {
        let new_val = if !gigabit {
            IGB_4K_ITR
        } else {
            let rx_avg = self.rx_bytes.checked_div(self.rx_packets).unwrap_or(0);
            let avg_wire_size = rx_avg.max(self.tx_bytes.checked_div(self.tx_packets).unwrap_or(0));
            if avg_wire_size == 0 {
                // No work was done: nothing changes.
                self.clear();
                return None;
            }
            // CRC, preamble and gap; jumbo frames are not starved.
            let avg = (avg_wire_size + 24).min(3000) as u32;
            // A little boost to mid-size frames.
            let mut v = if avg > 300 && avg < 1200 { avg / 3 } else { avg / 2 };
            if v < IGB_20K_ITR && self.conservative {
                v = IGB_20K_ITR;
            }
            v
        };
        self.clear();
        if new_val != self.itr_val {
            self.itr_val = new_val;
            return Some(new_val);
        }
        None
    }

    fn clear(&mut self) {
        self.tx_bytes = 0;
        self.tx_packets = 0;
        self.rx_bytes = 0;
        self.rx_packets = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bulk 1514-byte frames: (1514 + 24) / 2 = 769 units = 192.25 µs.
    #[test]
    fn bulk_frames_at_gigabit() {
        let mut i = IgbItr::new(true);
        i.tx_bytes = 10 * 1514;
        i.tx_packets = 10;
        assert_eq!(i.update_ring_itr(true), Some(769));
        assert_eq!(i.interval_ns(), 192_250);
        // The counters were cleared: an idle poll changes nothing.
        assert_eq!(i.update_ring_itr(true), None);
        assert_eq!(i.itr_val, 769);
    }

    /// Mid-size frames get a third: (600 + 24) / 3 = 208. Small ones would go below
    /// 20K interrupts/s; the conservative mode stops at IGB_20K_ITR, the dynamic one
    /// does not: (66 + 24) / 2 = 45.
    #[test]
    fn mid_size_and_small_frames() {
        let mut i = IgbItr::new(true);
        (i.tx_bytes, i.tx_packets) = (600, 1);
        assert_eq!(i.update_ring_itr(true), Some(208));
        (i.tx_bytes, i.tx_packets) = (66, 1);
        assert_eq!(i.update_ring_itr(true), Some(IGB_20K_ITR));
        let mut d = IgbItr::new(false);
        (d.tx_bytes, d.tx_packets) = (66, 1);
        assert_eq!(d.update_ring_itr(true), Some(45));
    }

    /// Below gigabit: 4,000 interrupts/s whatever the traffic.
    #[test]
    fn fixed_below_gigabit() {
        let mut i = IgbItr::new(true);
        (i.tx_bytes, i.tx_packets) = (66, 1);
        assert_eq!(i.update_ring_itr(false), Some(IGB_4K_ITR));
        assert_eq!(i.interval_ns(), 245_000);
    }

    /// RX and TX share the vector: the larger average wins (ACKs received while
    /// sending bulk data do not shorten the interval).
    #[test]
    fn the_larger_average_wins() {
        let mut i = IgbItr::new(true);
        (i.tx_bytes, i.tx_packets, i.rx_bytes, i.rx_packets) = (15_140, 10, 660, 10);
        assert_eq!(i.update_ring_itr(true), Some(769));
    }
}
