//! darkbuf's own load generator, sink, prober, UDP echo server and tap reader.
//!
//! Every tool runs in its own named thread, which first enters the tool's network
//! namespace (`setns` affects only the calling thread), then opens its sockets or
//! device; no child processes. Every `spawn_*` returns once the tool's setup is
//! done (socket bound, tap created) or has failed (the error is then the join
//! result), so a sink started before a flood is already listening.
//!
//! Bounds: every loop ends on its `stop` flag, its `duration` and (flood) its
//! `max_packets`; blocking calls are bounded by 50 ms socket timeouts or poll
//! timeouts, so a tool notices `stop` within about 50 ms (the prober additionally
//! waits up to `timeout` for replies to probes already sent).
//!
//! An empty `netns` means "stay in the caller's namespace" (used by the loopback
//! tests that need no privileges).
//!
//! Timestamps are CLOCK_MONOTONIC, shared by all namespaces of the host, so the
//! flood's payload stamps give one-way delays at the sink and the tap reader.
//!
//! Files: `netns` (setns, thread scaffolding), `flood`, `sink`, `probe`, `echo`,
//! `irtt` (isochronous UDP client and its stamping server), `rr` (netperf's TCP_RR and
//! UDP_RR: a server and one client per connection), `tap`, `tcp` (bulk TCP senders and their receiver, polling or blocking), `web`
//! (short connections at Poisson arrivals from a pool of senders, and their reader), `tcpinfo`
//! (TCP_INFO), `payload` (wire formats, checksum, sampling), `sys` (libc wrappers).

mod echo;
mod flood;
mod irtt;
mod netns;
pub mod payload;
mod probe;
mod rr;
mod sink;
pub(crate) mod sys;
mod tap;
mod tcp;
pub mod voip;
pub mod web;
pub mod tcpinfo;

pub use echo::{spawn_udp_echo, spawn_udp_echo_bound, EchoSpec, ECHO_MAX_LIFETIME};
pub use flood::{spawn_flood, spawn_flood_pinned, FloodSpec, FloodStats, FLOOD_SNDTIMEO, MAX_BATCH, MAX_UDP_PAYLOAD};
pub use irtt::{
    irtt_records, spawn_irtt_client, spawn_irtt_server, IrttClientResult, IrttClientSpec, IrttReply, IrttRequest, IrttServerSpec,
    IrttServerStats, IRTT_MIN_PAYLOAD,
};
pub use netns::{enter_netns, NETNS_RUN_DIR};
pub use probe::{spawn_prober, spawn_prober_with, ProbeKind, ProbeOpts, ProbeResult, ProbeSample, ProbeSpec};
pub use rr::{spawn_rr_client, spawn_rr_server, RrClientSpec, RrProtoSpec, RrServerSpec, RR_MAX_TRANSACTIONS};
pub use sink::{spawn_sink, spawn_sink_bound, SinkSpec, SinkStats, SINK_BATCH, SINK_RCVTIMEO};
pub use sys::{mono_ns, pin_to_cpu, sleep_until_ns};
pub use tcp::{
    open_flow, rcv_buf, spawn_tcp_receiver, spawn_tcp_sender, InfoSample, RcvBuf, ReadMode, ReceiverFlow, SenderFlow, TcpReceiverSpec,
    TcpReceiverStats, TcpSenderSpec, TcpSenderStats, SAMPLE_STEP, TCP_WRITE,
};
pub use tap::{
    create_tap_reader, create_tap_reader_with, spawn_tap_reader, EchoSeen, TapInfo, TapOpts, TapReader, TapReaderSpec,
    TapReaderStats, TAP_PEER_MAC,
};
