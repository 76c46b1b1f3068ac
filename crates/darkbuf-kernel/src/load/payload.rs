//! Wire formats shared by the tools: the flood's payload header, the Internet
//! checksum, and a deterministic reservoir for delay samples.

/// Marks a flood payload ("dbkf" little-endian), so the tap reader can recognise
/// flood frames among everything else the stack sends through a tap.
pub const FLOOD_MAGIC: u32 = u32::from_le_bytes(*b"dbkf");

/// Bytes of the flood header at the start of every UDP payload:
/// `magic u32 | flow u32 | seq u64 | send CLOCK_MONOTONIC ns u64`, little-endian.
/// Payloads shorter than this carry no header (the sink still counts them, but
/// takes no sequence numbers or delays from them).
pub const FLOOD_HDR_LEN: usize = 24;

/// The header fields of one flood packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloodHeader {
    pub flow: u32,
    pub seq: u64,
    pub t_send_ns: u64,
}

impl FloodHeader {
    /// Writes the header into `buf` if it fits (returns false otherwise).
    #[inline]
    pub fn write(&self, buf: &mut [u8]) -> bool {
        if buf.len() < FLOOD_HDR_LEN {
            return false;
        }
        buf[0..4].copy_from_slice(&FLOOD_MAGIC.to_le_bytes());
        buf[4..8].copy_from_slice(&self.flow.to_le_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_le_bytes());
        buf[16..24].copy_from_slice(&self.t_send_ns.to_le_bytes());
        true
    }

    /// Reads a header; None when `buf` is too short or the magic does not match.
    #[inline]
    pub fn read(buf: &[u8]) -> Option<FloodHeader> {
        if buf.len() < FLOOD_HDR_LEN || buf[0..4] != FLOOD_MAGIC.to_le_bytes() {
            return None;
        }
        Some(FloodHeader {
            flow: u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]),
            seq: u64::from_le_bytes(buf[8..16].try_into().ok()?),
            t_send_ns: u64::from_le_bytes(buf[16..24].try_into().ok()?),
        })
    }
}

/// RFC 1071 Internet checksum of `data` (ones' complement of the ones' complement
/// sum of 16-bit big-endian words; an odd last byte is padded with zero).
pub fn inet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        sum += (*b as u32) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Maximum delay samples a tool keeps (Algorithm R reservoir; memory is allocated once).
pub const OWD_SAMPLE_CAP: usize = 100_000;

/// A uniform random sample of at most `cap` values from a stream (Vitter's
/// Algorithm R), driven by a fixed-seed xorshift64* generator so the same input
/// sequence always gives the same sample. No allocation after construction.
#[derive(Debug)]
pub struct Reservoir {
    cap: usize,
    seen: u64,
    rng: u64,
    samples: Vec<u64>,
}

impl Reservoir {
    pub fn new(cap: usize) -> Self {
        Reservoir { cap, seen: 0, rng: 0x9E37_79B9_7F4A_7C15, samples: Vec::with_capacity(cap) }
    }

    #[inline]
    fn next_rand(&mut self) -> u64 {
        // xorshift64* (Vigna); the state never becomes 0 from a nonzero seed.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    #[inline]
    pub fn offer(&mut self, v: u64) {
        self.seen += 1;
        if self.samples.len() < self.cap {
            self.samples.push(v);
            return;
        }
        if self.cap == 0 {
            return;
        }
        // Keep the new value with probability cap/seen, replacing a uniform slot.
        let j = self.next_rand() % self.seen;
        if j < self.cap as u64 {
            self.samples[j as usize] = v;
        }
    }

    /// Values offered so far (kept or not).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    pub fn into_vec(self) -> Vec<u64> {
        self.samples
    }
}

/// Which flow ids (0..1024) have been seen: a fixed bitmap, no allocation per packet.
#[derive(Debug, Default)]
pub struct FlowSet {
    bits: [u64; 16],
}

impl FlowSet {
    #[inline]
    pub fn insert(&mut self, flow: u32) {
        let f = flow as usize;
        if f < 1024 {
            self.bits[f / 64] |= 1 << (f % 64);
        }
    }
    pub fn count(&self) -> u32 {
        self.bits.iter().map(|w| w.count_ones()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_layout() {
        let h = FloodHeader { flow: 3, seq: 0x0102_0304_0506_0708, t_send_ns: 42 };
        let mut buf = [0u8; 64];
        assert!(h.write(&mut buf));
        assert_eq!(&buf[0..4], b"dbkf");
        assert_eq!(&buf[4..8], &[3, 0, 0, 0]);
        assert_eq!(&buf[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&buf[16..24], &[42, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(FloodHeader::read(&buf), Some(h));
        assert_eq!(FloodHeader::read(&buf[..23]), None);
        let mut short = [0u8; 23];
        assert!(!h.write(&mut short));
        buf[0] = b'x';
        assert_eq!(FloodHeader::read(&buf), None);
    }

    #[test]
    fn checksum_rfc1071_example() {
        // RFC 1071 section 3 example: words 0001 f203 f4f5 f6f7 have the folded
        // ones' complement sum 0xddf2, so the checksum is !0xddf2 = 0x220d.
        assert_eq!(inet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0x220d);
        // Odd length: trailing byte padded on the right.
        assert_eq!(inet_checksum(&[0x01]), !0x0100);
        // A buffer that contains its own correct checksum sums to zero.
        let mut icmp = [8u8, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b'b', b'c'];
        let c = inet_checksum(&icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(inet_checksum(&icmp), 0);
    }

    #[test]
    fn reservoir_keeps_everything_below_cap_and_is_deterministic() {
        let mut r = Reservoir::new(4);
        for v in [5, 6, 7] {
            r.offer(v);
        }
        assert_eq!(r.into_vec(), vec![5, 6, 7]);

        let run = || {
            let mut r = Reservoir::new(100);
            for v in 0..10_000u64 {
                r.offer(v);
            }
            assert_eq!(r.seen(), 10_000);
            r.into_vec()
        };
        let a = run();
        assert_eq!(a.len(), 100);
        assert_eq!(a, run());
        // Uniform over the stream: not just the first 100 values.
        assert!(a.iter().any(|&v| v >= 5_000));
        let mut z = Reservoir::new(0);
        z.offer(1);
        assert!(z.into_vec().is_empty());
    }

    #[test]
    fn flowset_counts_distinct_ids() {
        let mut s = FlowSet::default();
        for f in [0, 1, 1, 63, 64, 1023, 1024, 5000] {
            s.insert(f);
        }
        assert_eq!(s.count(), 5);
    }
}
