//! `[[traffic]] kind = "voip"`: voice calls, each an isochronous RTP stream in each
//! direction (this host -> far host and far host -> this host), as a phone sends one:
//! `size` payload bytes plus the 12-byte RTP header in one UDP datagram every
//! `interval`, with the codec's E-model figures (ITU-T G.113 Appendix I) for the MOS.
//!
//! The codec table is here, at the bottom of the crates, so that the scenario can
//! check a codec's name and derive its default payload size, and the measurement code
//! (`darkbuf-measure`'s `voip`) can read its impairment factors.

use crate::diag::Diagnostic;
use crate::limits::{self, thousands};
use crate::resolve::MAX_UDP_PAYLOAD;
use crate::section::Sec;
use serde::Serialize;

pub const VOIP_KEYS: &[&str] = &[
    "kind", "name", "codec", "plc", "interval", "size", "dscp", "calls", "direction", "jitter_buffer", "cpu", "start", "stop", "path_delay", "station",
];

/// The RTP fixed header (RFC 3550 section 5.1), in every voice packet's UDP payload.
pub const RTP_HEADER_LEN: u32 = 12;

/// A voice codec, with what the E-model needs of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Codec {
    /// G.711 PCM, 64 kbit/s.
    G711,
    /// G.729 Annex A CS-ACELP, 8 kbit/s.
    G729a,
}

/// The codecs `codec` accepts.
pub const CODEC_NAMES: &[&str] = &["g711", "g729a"];

impl Codec {
    pub fn name(self) -> &'static str {
        match self {
            Codec::G711 => "g711",
            Codec::G729a => "g729a",
        }
    }

    /// The codec's bit rate (bit/s): the payload a packet of `interval` carries.
    pub fn bitrate_bps(self) -> u64 {
        match self {
            Codec::G711 => 64_000,
            Codec::G729a => 8_000,
        }
    }

    /// The codec's frame (ns): a packet carries a whole number of them. G.711 codes
    /// sample by sample (125 us at 8 kHz); G.729 in 10 ms frames.
    pub fn frame_ns(self) -> u64 {
        match self {
            Codec::G711 => 125_000,
            Codec::G729a => 10_000_000,
        }
    }

    /// The encoder's look-ahead (ns), delay beyond the packet's own audio: none for
    /// G.711, 5 ms for G.729 (G.729 section 1; G.114 Table 1: 10 ms frame + 5 ms
    /// look-ahead).
    pub fn lookahead_ns(self) -> u64 {
        match self {
            Codec::G711 => 0,
            Codec::G729a => 5_000_000,
        }
    }

    /// The equipment impairment factor Ie (ITU-T G.113 Appendix I, Table I.1): 0 for
    /// G.711, 11 for G.729A.
    pub fn ie(self) -> f64 {
        match self {
            Codec::G711 => 0.0,
            Codec::G729a => 11.0,
        }
    }

    /// The packet-loss robustness factor Bpl (G.113 Appendix I, Table I.3, random
    /// loss): G.711 4.3 without packet loss concealment, 25.1 with G.711 Appendix I's
    /// PLC; G.729A (its own concealment, + VAD) 19.0.
    pub fn bpl(self, plc: bool) -> f64 {
        match (self, plc) {
            (Codec::G711, false) => 4.3,
            (Codec::G711, true) => 25.1,
            (Codec::G729a, _) => 19.0,
        }
    }
}

/// Which streams a call sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VoipDirection {
    /// A call: a stream each way.
    Both,
    /// This host's stream only (flent's one-way VoIP test).
    Up,
    /// The far host's stream only.
    Down,
}

impl VoipDirection {
    pub fn sends_up(self) -> bool {
        self != VoipDirection::Down
    }
    pub fn sends_down(self) -> bool {
        self != VoipDirection::Up
    }
}

/// `calls` voice calls of one codec.
#[derive(Clone, Debug, Serialize)]
pub struct Voip {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub codec: Codec,
    /// G.711 with packet loss concealment (G.711 Appendix I): the E-model's Bpl.
    pub plc: bool,
    /// Packetization interval (ptime), ns: one packet per stream every interval.
    pub interval_ns: u64,
    /// Voice payload bytes per packet (the RTP header comes on top).
    pub size: u32,
    pub dscp: u8,
    /// Concurrent calls: call k starts `k * interval / calls` after `start`, so the
    /// calls' packets interleave as independent phones' do.
    pub calls: u32,
    pub direction: VoipDirection,
    /// The receiver's fixed playout (de-jitter) buffer, ns: a packet is played
    /// `jitter_buffer` after the stream's fastest one would be; one arriving later is
    /// lost to the decoder.
    pub jitter_buffer_ns: u64,
    /// The senders' CPU (taskset), on each end.
    pub cpu: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub path_delay_ns: u64,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
}

impl Voip {
    /// Each packet's UDP payload: the voice and the RTP header.
    pub fn udp_payload(&self) -> u32 {
        self.size + RTP_HEADER_LEN
    }

    /// Packets one stream can send over a run of `total_ns`.
    pub fn packets_per_stream(&self, total_ns: u64) -> u64 {
        let end = self.stop_ns.unwrap_or(total_ns).min(total_ns);
        end.saturating_sub(self.start_ns) / self.interval_ns.max(1) + 1
    }

    /// The streams it sends: calls x directions.
    pub fn streams(&self) -> u64 {
        self.calls as u64 * (self.direction.sends_up() as u64 + self.direction.sends_down() as u64)
    }
}

/// One `[[traffic]]` table of kind "voip"; `total_ns` is warmup + duration.
pub(crate) fn resolve_voip(s: &Sec<'_>, cpus: u32, driver: crate::schema::Driver, total_ns: u64, name: String) -> Result<Voip, Diagnostic> {
    s.check_keys(VOIP_KEYS, Some("(a voice call's packet is `size` bytes every `interval`; rate and flows belong to kind = \"udp\")"))?;
    let codec = match s.choice("codec", "g711", CODEC_NAMES)? {
        "g729a" => Codec::G729a,
        _ => Codec::G711,
    };
    let plc = s.boolean("plc", true)?;
    if codec == Codec::G729a && s.entry("plc").is_some() && !plc {
        return Err(s.value_err(
            "plc",
            format!("`{}` = false: G.729A conceals lost frames itself (G.113 gives it one Bpl, 19.0)", s.kp("plc")),
            Some("remove plc, or use codec = \"g711\" with plc = false".into()),
        ));
    }
    let interval_ns = s.duration("interval", 20_000_000, true)?;
    if interval_ns % codec.frame_ns() != 0 {
        return Err(s.value_err(
            "interval",
            format!("`{}` ({} us) is not a whole number of {} frames ({} us)", s.kp("interval"), interval_ns / 1000, codec.name(), codec.frame_ns() / 1000),
            Some(format!("expected a multiple of {} us, e.g. \"20ms\"", codec.frame_ns() / 1000)),
        ));
    }
    let default_size = (codec.bitrate_bps() as u128 * interval_ns as u128 / 8_000_000_000) as u32;
    let max_size = MAX_UDP_PAYLOAD as u32 - RTP_HEADER_LEN;
    if default_size > max_size && s.entry("size").is_none() {
        return Err(s.value_err("interval", format!("`{}`: {} bytes of {} audio do not fit one UDP datagram", s.kp("interval"), default_size, codec.name()), Some("expected a shorter interval, e.g. \"20ms\"".into())));
    }
    let size = s.u32("size", default_size.max(1), 1, max_size)?;
    let dscp = s.int("dscp", 46, 0, 63)? as u8;
    let calls = s.u32("calls", 1, 1, MAX_CALLS)?;
    let direction = match s.choice("direction", "both", &["both", "up", "down"])? {
        "up" => VoipDirection::Up,
        "down" => VoipDirection::Down,
        _ => VoipDirection::Both,
    };
    let jitter_buffer_ns = s.duration_max("jitter_buffer", 60_000_000, false, MAX_JITTER_BUFFER_NS)?;
    let cpu = s.u32("cpu", 0, 0, cpus - 1)?;
    let (start_ns, stop_ns) = crate::tcp::start_stop(s, "call", total_ns)?;
    let path_delay_ns = crate::resolve::path_delay(s, driver)?;
    let v = Voip { name, codec, plc, interval_ns, size, dscp, calls, direction, jitter_buffer_ns, cpu, path_delay_ns, start_ns, stop_ns };
    let packets = v.packets_per_stream(total_ns).saturating_mul(v.streams());
    if packets > limits::MAX_VOIP_PACKETS {
        return Err(s.value_err(
            "calls",
            format!(
                "{} call(s) sending every {} us send {} packets over warmup + duration; at most {} per entry (each packet's fate is recorded)",
                calls,
                interval_ns / 1000,
                thousands(packets),
                thousands(limits::MAX_VOIP_PACKETS)
            ),
            Some("lower calls, raise interval, or shorten the run".into()),
        ));
    }
    Ok(v)
}

/// Concurrent calls of one entry.
pub const MAX_CALLS: u32 = 10_000;

/// Longest playout buffer: 1 s (G.114's one-way delay limit is 400 ms).
pub const MAX_JITTER_BUFFER_NS: u64 = 1_000_000_000;

/// Serde's `skip_serializing_if` for a `path_delay` of 0.
fn is_zero(v: &u64) -> bool {
    *v == 0
}
