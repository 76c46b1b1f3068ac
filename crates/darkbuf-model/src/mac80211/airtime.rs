//! Airtime of 802.11 transmissions (IEEE 802.11-2020 clauses 15, 17 and 19: DSSS,
//! OFDM and HT PPDU durations) and mac80211's AQL estimate
//! (`ieee80211_calc_expected_tx_airtime()` in net/mac80211/airtime.c).
//!
//! One exchange of the AP with a station costs
//! `AIFS + backoff + PPDU + SIFS + BlockAck (or ACK)`:
//! - `AIFS[AC] = SIFS + AIFSN * slot`; backoff is a uniform draw of `[0, CW]` slots;
//! - an HT-mixed PPDU is `20 + 8 + 4 + 4 * N_LTF` µs of preamble then
//!   `ceil((16 + 8 L + 6) / N_DBPS)` symbols of 4 µs (3.6 µs with the short guard
//!   interval, the whole rounded up to 4 µs as TXTIME is); on 2.4 GHz an OFDM PPDU
//!   is followed by a 6 µs signal extension;
//! - an A-MPDU of n MPDUs of IP packets of P bytes is n subframes of
//!   `4 (delimiter) + 26 (QoS header) + 8 (LLC/SNAP) + P + 4 (FCS)` bytes, each padded
//!   to 4 bytes but the last;
//! - a compressed BlockAck (32 bytes) or an ACK (14 bytes) at the control rate.

/// A PHY rate a station is served at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyRate {
    /// 802.11b DSSS/CCK, in units of 100 kbit/s (10 = 1 Mbit/s, 55 = 5.5), long preamble.
    Dsss(u32),
    /// 802.11a/g OFDM, Mbit/s (6..54).
    Ofdm(u32),
    /// 802.11n HT: MCS 0..31, 40 MHz or 20, short guard interval.
    Ht { mcs: u8, ht40: bool, sgi: bool },
}

/// N_DBPS of HT MCS 0..7 (one spatial stream), 20 MHz and 40 MHz.
const HT20_NDBPS: [u32; 8] = [26, 52, 78, 104, 156, 208, 234, 260];
const HT40_NDBPS: [u32; 8] = [54, 108, 162, 216, 324, 432, 486, 540];

/// Bytes of an A-MPDU subframe around an IP packet: delimiter 4 + QoS MAC header 26 +
/// LLC/SNAP 8 + FCS 4.
pub const AMPDU_SUBFRAME_OVERHEAD: u32 = 42;
/// Bytes of an MPDU (no A-MPDU delimiter) around an IP packet.
pub const MPDU_OVERHEAD: u32 = 38;
/// A compressed BlockAck frame, bytes.
pub const BLOCKACK_LEN: u32 = 32;
/// An ACK frame, bytes.
pub const ACK_LEN: u32 = 14;

impl PhyRate {
    /// Parses "MCS15-HT20-SGI", "MCS0-HT40", "MCS7" (HT20, long GI), "54Mbit" (OFDM),
    /// "1Mbit", "2Mbit", "5.5Mbit", "11Mbit" (DSSS), or an HT rate by its value,
    /// "144.4Mbit" (also "Mbps", "Mbit/s"): the legacy rate of that value if there is
    /// one, else the first HT rate within 0.06 Mbit/s of it, taking 20 MHz before
    /// 40, the long guard interval before the short, and fewer streams first ("65Mbit"
    /// is MCS7-HT20, "72.2Mbit" MCS7-HT20-SGI, "130Mbit" MCS15-HT20).
    pub fn parse(s: &str) -> Result<PhyRate, String> {
        let up = s.trim().to_ascii_uppercase();
        if let Some(rest) = up.strip_prefix("MCS") {
            let mut parts = rest.split('-');
            let mcs: u8 = parts.next().and_then(|m| m.parse().ok()).filter(|&m| m < 32).ok_or_else(|| format!("\"{s}\": the MCS index is 0..31"))?;
            let ht40 = match parts.next() {
                Some("HT20") | None => false,
                Some("HT40") => true,
                _ => return Err(format!("\"{s}\": expected MCSn-HT20 or MCSn-HT40, optionally -SGI")),
            };
            let sgi = match parts.next() {
                None => false,
                Some("SGI") => true,
                Some(x) => return Err(format!("\"{s}\": unknown suffix \"{x}\" (expected SGI)")),
            };
            if parts.next().is_some() {
                return Err(format!("\"{s}\": expected MCSn-HT20[-SGI]"));
            }
            return Ok(PhyRate::Ht { mcs, ht40, sgi });
        }
        let num = ["MBIT/S", "MBIT", "MBPS"]
            .iter()
            .find_map(|u| up.strip_suffix(u))
            .map(str::trim)
            .ok_or_else(|| format!("\"{s}\": expected an HT rate (\"MCS7-HT20-SGI\") or a rate in Mbit/s (\"1Mbit\", \"54Mbit\", \"144.4Mbit\")"))?;
        match num {
            "1" => return Ok(PhyRate::Dsss(10)),
            "2" => return Ok(PhyRate::Dsss(20)),
            "5.5" => return Ok(PhyRate::Dsss(55)),
            "11" => return Ok(PhyRate::Dsss(110)),
            "6" | "9" | "12" | "18" | "24" | "36" | "48" | "54" => return Ok(PhyRate::Ofdm(num.parse().expect("digits"))),
            _ => {}
        }
        let mbit: f64 = num.parse().ok().filter(|m: &f64| m.is_finite() && *m > 0.0).ok_or_else(|| format!("\"{s}\": \"{num}\" is not a number of Mbit/s"))?;
        Self::ht_by_value(mbit).ok_or_else(|| {
            format!("\"{s}\": no legacy or HT rate (MCS0-31, 20 or 40 MHz, either guard interval) is {mbit} Mbit/s; legacy rates are 1, 2, 5.5, 11 (DSSS) and 6, 9, 12, 18, 24, 36, 48, 54 (OFDM)")
        })
    }

    /// The HT rate of `mbit` Mbit/s as [`PhyRate::parse`] picks it.
    fn ht_by_value(mbit: f64) -> Option<PhyRate> {
        let want = mbit * 1000.0;
        for ht40 in [false, true] {
            for sgi in [false, true] {
                for mcs in 0..32u8 {
                    let r = PhyRate::Ht { mcs, ht40, sgi };
                    if (r.kbps_exact() - want).abs() <= 60.0 {
                        return Some(r);
                    }
                }
            }
        }
        None
    }

    /// The PHY rate in kbit/s without rounding (N_DBPS over the symbol time).
    fn kbps_exact(self) -> f64 {
        match self {
            PhyRate::Ht { sgi, .. } => self.n_dbps() as f64 * 1000.0 / if sgi { 3.6 } else { 4.0 },
            _ => self.kbps() as f64,
        }
    }

    /// Spatial streams.
    pub fn streams(self) -> u32 {
        match self {
            PhyRate::Ht { mcs, .. } => mcs as u32 / 8 + 1,
            _ => 1,
        }
    }

    /// Data bits per OFDM symbol (N_DBPS); DSSS has none.
    pub fn n_dbps(self) -> u32 {
        match self {
            PhyRate::Dsss(_) => 0,
            PhyRate::Ofdm(mbit) => mbit * 4,
            PhyRate::Ht { mcs, ht40, .. } => {
                let t = if ht40 { &HT40_NDBPS } else { &HT20_NDBPS };
                t[(mcs % 8) as usize] * self.streams()
            }
        }
    }

    /// The PHY rate, kbit/s (what `iw station dump` prints as tx bitrate).
    pub fn kbps(self) -> u64 {
        match self {
            PhyRate::Dsss(x) => x as u64 * 100,
            PhyRate::Ofdm(m) => m as u64 * 1000,
            PhyRate::Ht { sgi, .. } => {
                let sym_ns = if sgi { 3600 } else { 4000 };
                self.n_dbps() as u64 * 1_000_000 / sym_ns
            }
        }
    }

    /// Whether the station takes A-MPDUs (HT).
    pub fn is_ht(self) -> bool {
        matches!(self, PhyRate::Ht { .. })
    }

    /// Preamble and PHY header, ns: DSSS long 192 µs; OFDM 20 µs; HT-mixed
    /// 20 + 8 + 4 + 4 * N_LTF (N_LTF 1, 2, 4, 4 for 1..4 streams).
    pub fn preamble_ns(self) -> u64 {
        match self {
            PhyRate::Dsss(_) => 192_000,
            PhyRate::Ofdm(_) => 20_000,
            PhyRate::Ht { .. } => {
                let n_ltf = [1, 2, 4, 4][(self.streams() - 1) as usize];
                (32 + 4 * n_ltf) * 1000
            }
        }
    }

    /// Duration of a PPDU carrying `psdu` bytes, ns, without any signal extension.
    pub fn ppdu_ns(self, psdu: u32) -> u64 {
        match self {
            // 8 bits per byte at x/10 Mbit/s, rounded up to a µs.
            PhyRate::Dsss(x) => self.preamble_ns() + (8 * psdu as u64 * 10).div_ceil(x as u64) * 1000,
            _ => {
                let sym = (16 + 8 * psdu as u64 + 6).div_ceil(self.n_dbps() as u64);
                let data_ns = match self {
                    PhyRate::Ht { sgi: true, .. } => (sym * 3600).div_ceil(4000) * 4000,
                    _ => sym * 4000,
                };
                self.preamble_ns() + data_ns
            }
        }
    }
}

/// The bytes of an A-MPDU of `n` subframes each carrying an IP packet of `ip_len`
/// bytes (the last unpadded).
pub fn ampdu_len(n: u32, ip_len: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let sub = ip_len + AMPDU_SUBFRAME_OVERHEAD;
    (n - 1) * sub.next_multiple_of(4) + sub
}

/// One subframe's share of an A-MPDU's bytes when padded (what the byte limit counts).
pub fn ampdu_subframe_len(ip_len: u32) -> u32 {
    (ip_len + AMPDU_SUBFRAME_OVERHEAD).next_multiple_of(4)
}

/// The band's timing, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub slot_ns: u64,
    pub sifs_ns: u64,
    /// 2.4 GHz OFDM/HT: the 6 µs signal extension after each OFDM PPDU.
    pub signal_ext_ns: u64,
}

impl Timing {
    /// 5 GHz: slot 9 µs, SIFS 16 µs.
    pub const FIVE_GHZ: Timing = Timing { slot_ns: 9_000, sifs_ns: 16_000, signal_ext_ns: 0 };
    /// 2.4 GHz: SIFS 10 µs, OFDM signal extension 6 µs; slot 9 µs (short) or 20 µs
    /// (long: when DSSS stations are associated).
    pub fn two_ghz(long_slot: bool) -> Timing {
        Timing { slot_ns: if long_slot { 20_000 } else { 9_000 }, sifs_ns: 10_000, signal_ext_ns: 6_000 }
    }

    /// `AIFS = SIFS + AIFSN * slot`.
    pub fn aifs_ns(&self, aifsn: u32) -> u64 {
        self.sifs_ns + aifsn as u64 * self.slot_ns
    }

    /// A PPDU at `rate` of `psdu` bytes, with the band's signal extension for OFDM.
    pub fn ppdu_ns(&self, rate: PhyRate, psdu: u32) -> u64 {
        let ext = if matches!(rate, PhyRate::Dsss(_)) { 0 } else { self.signal_ext_ns };
        rate.ppdu_ns(psdu) + ext
    }
}

/// The AP's EDCA parameters of an AC (hostapd's `tx_queue_data*` defaults): AIFSN,
/// CWmin, CWmax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edca {
    pub aifsn: u32,
    pub cw_min: u32,
    pub cw_max: u32,
}

/// mac80211's AC order (`IEEE80211_AC_VO` = 0 .. `IEEE80211_AC_BK` = 3).
pub const AP_EDCA: [Edca; 4] = [
    Edca { aifsn: 1, cw_min: 3, cw_max: 7 },
    Edca { aifsn: 1, cw_min: 7, cw_max: 15 },
    Edca { aifsn: 3, cw_min: 15, cw_max: 63 },
    Edca { aifsn: 7, cw_min: 15, cw_max: 1023 },
];

/// The EDCA parameters an AP advertises for its stations (hostapd's `wmm_ac_*`
/// defaults, IEEE 802.11-2020 Table 9-155): what a station contends with, in mac80211's
/// AC order. Best effort: AIFSN 3, CW 15..1023.
pub const STA_EDCA: [Edca; 4] = [
    Edca { aifsn: 2, cw_min: 3, cw_max: 7 },
    Edca { aifsn: 2, cw_min: 7, cw_max: 15 },
    Edca { aifsn: 3, cw_min: 15, cw_max: 1023 },
    Edca { aifsn: 7, cw_min: 15, cw_max: 1023 },
];

/// The airtime of one exchange without its backoff, ns: AIFS, the data PPDU of `psdu`
/// bytes, SIFS and the BlockAck (`ampdu`) or ACK at `ctrl`.
pub fn exchange_ns(t: &Timing, edca: &Edca, rate: PhyRate, psdu: u32, ampdu: bool, ctrl: PhyRate) -> u64 {
    let resp = if ampdu { BLOCKACK_LEN } else { ACK_LEN };
    t.aifs_ns(edca.aifsn) + t.ppdu_ns(rate, psdu) + t.sifs_ns + t.ppdu_ns(ctrl, resp)
}

/// `AVG_PKT_SIZE` of net/mac80211/airtime.c: the rate tables give the duration of a
/// packet of this many bytes.
pub const AVG_PKT_SIZE: u64 = 1024;

/// AQL's estimate of a packet's airtime, µs (`ieee80211_calc_expected_tx_airtime()`
/// as of 5.10): `len + 38` bytes at the station's rate. A legacy rate, or a packet
/// that will not be aggregated (`ampdu` false: VO), is charged a whole single-frame
/// PPDU. An HT packet is charged its bytes at the rate (`duration` of an
/// `AVG_PKT_SIZE` packet in ns, times `len / AVG_PKT_SIZE`, / 1024) plus the PHY
/// overhead `36 + 4 * streams` µs shifted right by the aggregation assumed from that
/// duration (`agg_shift`: 1 above 400 * 1024 ns, 2 above 250 * 1024, 3 above 150 *
/// 1024, 4 above 70 * 1024, else 5 for non-HE rates); at least 4 µs.
pub fn expected_tx_airtime_us(rate: PhyRate, len: u32, ampdu: bool) -> u32 {
    let len = len as u64 + 38;
    if !(ampdu && rate.is_ht()) {
        return rate.ppdu_ns(len as u32).div_ceil(1000) as u32;
    }
    let sym_ns = match rate {
        PhyRate::Ht { sgi: true, .. } => 3600,
        _ => 4000,
    };
    // ns of an AVG_PKT_SIZE packet: 8 bits a byte at N_DBPS bits per symbol.
    let duration = AVG_PKT_SIZE * 8 * sym_ns / rate.n_dbps() as u64;
    let agg_shift = match duration {
        d if d > 400 * 1024 => 1,
        d if d > 250 * 1024 => 2,
        d if d > 150 * 1024 => 3,
        d if d > 70 * 1024 => 4,
        _ => 5,
    };
    let overhead_us = 36 + 4 * rate.streams() as u64;
    let us = duration * len / AVG_PKT_SIZE / 1024 + (overhead_us >> agg_shift);
    us.max(4) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const MCS15_SGI: PhyRate = PhyRate::Ht { mcs: 15, ht40: false, sgi: true };
    const MCS0: PhyRate = PhyRate::Ht { mcs: 0, ht40: false, sgi: false };

    #[test]
    fn rates_parse_and_have_their_standard_bitrates() {
        assert_eq!(PhyRate::parse("MCS15-HT20-SGI"), Ok(MCS15_SGI));
        assert_eq!(MCS15_SGI.kbps(), 144_444);
        assert_eq!(MCS0.kbps(), 6_500);
        assert_eq!(PhyRate::parse("MCS7-HT20").unwrap().kbps(), 65_000);
        assert_eq!(PhyRate::parse("1Mbit"), Ok(PhyRate::Dsss(10)));
        assert_eq!(PhyRate::parse("24Mbit"), Ok(PhyRate::Ofdm(24)));
        assert!(PhyRate::parse("MCS32-HT20").is_err());
        assert!(PhyRate::parse("7Mbit").is_err());
    }

    /// An HT rate written by its value, as papers and `iw` print it: the candidates in
    /// order (HT20 before HT40, long GI before short, fewer streams first).
    #[test]
    fn ht_rates_parse_by_value() {
        let ht = |mcs, ht40, sgi| Ok(PhyRate::Ht { mcs, ht40, sgi });
        assert_eq!(PhyRate::parse("144.4Mbit"), Ok(MCS15_SGI));
        assert_eq!(PhyRate::parse("6.5Mbit"), Ok(MCS0));
        // 65 is MCS7 with the long GI and MCS6 with the short: the long GI first.
        assert_eq!(PhyRate::parse("65Mbit"), ht(7, false, false));
        assert_eq!(PhyRate::parse("72.2 Mbit/s"), ht(7, false, true));
        // 130 is MCS15 (long GI) and MCS14 (short GI); 13 is MCS1 and MCS8: one stream.
        assert_eq!(PhyRate::parse("130Mbps"), ht(15, false, false));
        assert_eq!(PhyRate::parse("13Mbit"), ht(1, false, false));
        assert_eq!(PhyRate::parse("300Mbit"), ht(15, true, true));
        assert_eq!(PhyRate::parse("MCS7"), ht(7, false, false));
        // Legacy values stay legacy.
        assert_eq!(PhyRate::parse("54mbit"), Ok(PhyRate::Ofdm(54)));
        assert!(PhyRate::parse("100Mbit").is_err());
        assert!(PhyRate::parse("fastMbit").is_err());
    }

    /// The reference's worked examples (1500-byte IP packets, BE, 5 GHz, BlockAck at
    /// 24 Mbit/s), by hand from the formulas in the module docs.
    #[test]
    fn ampdu_airtime_by_hand() {
        // 42 subframes: 41 * 1544 + 1542 = 64846 bytes; (16 + 8 * 64846 + 6) / 520 ->
        // 998 symbols; 998 * 3.6 = 3592.8 -> TXTIME rounds to 3596 µs; + 40 preamble.
        assert_eq!(ampdu_len(42, 1500), 64_846);
        assert_eq!(MCS15_SGI.ppdu_ns(64_846), 3_636_000);
        // BlockAck at 24 Mbit/s: 20 + ceil(278 / 96) = 3 symbols -> 32 µs.
        assert_eq!(PhyRate::Ofdm(24).ppdu_ns(BLOCKACK_LEN), 32_000);
        let be = AP_EDCA[2];
        // AIFS 16 + 3 * 9 = 43; + 3636 + 16 + 32.
        assert_eq!(exchange_ns(&Timing::FIVE_GHZ, &be, MCS15_SGI, 64_846, true, PhyRate::Ofdm(24)), 3_727_000);
        // MCS0: 2 subframes = 1544 + 1542 = 3086 bytes; (16 + 24688 + 6) / 26 -> 951
        // symbols = 3804 µs, + 36 preamble.
        assert_eq!(MCS0.ppdu_ns(ampdu_len(2, 1500)), 3_840_000);
        // 1 Mbit/s DSSS, one 1538-byte MPDU: 192 + 12304 µs; its ACK 192 + 112.
        assert_eq!(PhyRate::Dsss(10).ppdu_ns(1538), 12_496_000);
        assert_eq!(PhyRate::Dsss(10).ppdu_ns(ACK_LEN), 304_000);
    }

    /// AQL's estimate: MCS15 SGI: 8192 * 3600 / 520 = 56713 ns per 1024 bytes (agg_shift
    /// 5); 1538 bytes: 56713 * 1538 / 1024 / 1024 = 83, + 44 >> 5 = 84 µs. MCS0:
    /// 8192 * 4000 / 26 = 1260307 ns (agg_shift 1): 1848 + 40 >> 1 = 1868 µs.
    #[test]
    fn aql_estimate_by_hand() {
        assert_eq!(expected_tx_airtime_us(MCS15_SGI, 1500, true), 84);
        assert_eq!(expected_tx_airtime_us(MCS0, 1500, true), 1868);
        // Not aggregated: the whole PPDU, (16 + 8 * 1538 + 6) / 26 -> 475 symbols.
        assert_eq!(expected_tx_airtime_us(MCS0, 1500, false), 36 + 475 * 4);
    }
}
