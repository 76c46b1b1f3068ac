//! What every metric means and in what unit, for the report page's glossary, `--plot`
//! checking and anyone reading a results file.
//!
//! Metric names are the results contract's; a name of the form `sink.pps.N`,
//! `cpu.N.busy_pct` or `qdisc.tinN_drops` stands for all its indices. Counters of the qdisc algorithms
//! (`qdisc.<tc name>`) carry tc's own xstats names and meanings. A test runs every
//! scenario of the repository and fails on a metric missing here.

/// One metric: its name (`N` for an index), unit, and meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    pub unit: &'static str,
    pub meaning: &'static str,
}

const fn e(name: &'static str, unit: &'static str, meaning: &'static str) -> Entry {
    Entry { name, unit, meaning }
}

/// Every metric and time series, in the report's order.
pub const GLOSSARY: &[Entry] = &[
    e("ping.rtt_avg_ms", "ms", "mean round-trip time of the answered probes (ICMP echo, or UDP echo on the kernel backend) sent in the measured window"),
    e("ping.rtt_min_ms", "ms", "shortest probe round trip"),
    e("ping.rtt_p50_ms", "ms", "median probe round trip (nearest rank)"),
    e("ping.rtt_p99_ms", "ms", "99th percentile of the probe round trips (nearest rank; with fewer than 100 probes it is the maximum)"),
    e("ping.rtt_max_ms", "ms", "longest probe round trip"),
    e("ping.loss_pct", "%", "probes lost (dropped, or unanswered within the timeout) out of the probes whose fate is known"),
    e("ping.probes", "probes", "probes sent in the measured window whose fate is known (answered or lost)"),
    e("ping.unsendable", "probes", "probes sent in the measured window whose send failed (the local qdisc dropped them at enqueue: ENOBUFS); counted as lost"),
    e("ping.wait_qdisc_ms", "ms", "mean time a probe waited in the qdisc (its send to the hand-off to the driver; kernel: to the driver's software TX timestamp)"),
    e("ping.wait_ring_ms", "ms", "mean time a probe waited in the driver ring (veth ptr_ring, tun ring)"),
    e("ping.wait_consumer_ms", "ms", "mean time from leaving the ring to reaching the receiving socket (NAPI, GRO, netfilter rules)"),
    e("ping.rtt_ms", "ms", "time series: one point per probe sent in the measured window, null when it was lost"),
    e("ping.N.rtt_avg_ms", "ms", "with more than one ping entry: pinger N's mean round trip (N counts the ping entries; ping.* are pinger 0's)"),
    e("ping.N.rtt_min_ms", "ms", "pinger N's shortest round trip"),
    e("ping.N.rtt_p50_ms", "ms", "pinger N's median round trip"),
    e("ping.N.rtt_p99_ms", "ms", "pinger N's 99th percentile round trip"),
    e("ping.N.rtt_max_ms", "ms", "pinger N's longest round trip"),
    e("ping.N.loss_pct", "%", "pinger N's probes lost, of those whose fate is known"),
    e("ping.N.probes", "probes", "pinger N's probes whose fate is known"),
    e("ping.N.unsendable", "probes", "pinger N's probes the local qdisc dropped at enqueue"),
    e("ping.N.wait_qdisc_ms", "ms", "pinger N's mean wait in the qdisc"),
    e("ping.N.wait_ring_ms", "ms", "pinger N's mean wait in the driver ring (kernel: pinger 0's only)"),
    e("ping.N.wait_consumer_ms", "ms", "pinger N's mean time from the ring to the receiving socket (kernel: pinger 0's only)"),
    e("ping.N.wait_wire_ms", "ms", "nic: pinger N's mean time onto and across the wire"),
    e("ping.N.wait_return_ms", "ms", "nic: pinger N's echo reply's way back"),
    e("ping.N.rtt_ms", "ms", "time series: pinger N's round trip per probe (null = lost)"),
    e("consumer.pps", "packets/s", "packets the receiving side processed per second (NAPI poll or tun reader)"),
    e("sink.pps", "packets/s", "flood packets delivered to the floods' sinks per second"),
    e("sink.pps.N", "packets/s", "flood packets of [[traffic]] entry N delivered to its sink per second"),
    e("sink.owd_avg_ms", "ms", "mean one-way delay of the delivered flood packets (send to socket)"),
    e("sink.owd_p50_ms", "ms", "kernel: median one-way delay of the delivered flood packets"),
    e("sink.owd_p99_ms", "ms", "kernel: 99th percentile one-way delay of the delivered flood packets"),
    e("flood.pps", "packets/s", "kernel: UDP datagrams the floods sent per second (OutDatagrams)"),
    e("flood.send_errors", "sends", "kernel: flood sends that failed (ENOBUFS at a full qdisc, EAGAIN on a full send buffer), whole run"),
    e("qdisc.sent_pkts", "packets", "packets the root qdisc handed to the driver in the measured window (tc -s: Sent ... pkt)"),
    e("qdisc.drops", "packets", "packets the qdisc dropped (tc -s: dropped)"),
    e("qdisc.requeues", "packets", "packets put back into the qdisc because the driver was busy (tc -s: requeues)"),
    e("qdisc.overlimits", "events", "times the qdisc held packets back because of a rate limit or a full queue (tc -s: overlimits)"),
    e("qdisc.backlog_avg_pkts", "packets", "time-averaged backlog of the measured device's qdiscs, not the peer's (sim: by Little's law; kernel: averaged over samples)"),
    e("path.limit_drops", "frames", "frames the path's netem dropped at its limit (path.limit; 1000 with path.rate), both ways, in the measured window; only with a limit"),
    e("path.drops", "frames", "frames path.loss lost beyond the wire (netem's loss model), both ways, in the measured window; only with path.loss"),
    e("path.marks", "frames", "frames path.loss would have lost that path.ecn marked CE instead (netem's ecn), both ways, in the measured window; only with path.ecn"),
    e("path.reordered", "frames", "frames path.reorder sent at once, ahead of the delayed ones (netem's requeues), both ways, in the measured window; only with path.reorder"),
    e("netem.corrupt_drops", "packets", "packets a netem qdisc corrupted (corrupt P) that the receiving stack dropped (a checksum, another host's MAC, another EtherType; a bit in the source MAC passes), in the measured window; only with a netem qdisc"),
    e("qdisc.backlog_pkts", "packets", "time series: qdisc backlog, every sample_interval"),
    e("bql.limit_avg", "units", "time-averaged DQL limit of the device: on a device with several TX queues the largest queue's limit at each instant (packets for veth's per-packet BQL, bytes with unit = \"byte\")"),
    e("bql.limit_last", "units", "the device's DQL limit at the end of the run (the largest queue's)"),
    e("bql.inflight_avg", "units", "time-averaged units queued to the driver and not yet completed, summed over the device's TX queues"),
    e("bql.inflight_p50", "units", "time-weighted median of the device's in-flight units: what a read of byte_queue_limits/inflight at a random instant returns at least half the time (kernel backend: the median of its sysfs samples)"),
    e("bql.inflight_p99", "units", "time-weighted 99th percentile of the device's in-flight units (kernel backend: of its sysfs samples)"),
    e("bql.inflight_max", "units", "largest in-flight count of the device (the sum over its TX queues at one instant)"),
    e("bql.completions", "calls", "netdev_tx_completed_queue() calls that completed something, on every device with BQL (the far host's too); bql.txq.N.completions are this device's queues' (the kernel does not count them)"),
    e("bql.limit", "units", "time series: the device's DQL limit (the largest queue's), every sample_interval"),
    e("bql.inflight", "units", "time series: the device's DQL in-flight units (summed over its queues), every sample_interval"),
    e("bql.txq.N.limit_avg", "units", "with more than one TX queue: queue N's time-averaged DQL limit (sysfs queues/tx-N/byte_queue_limits/limit)"),
    e("bql.txq.N.limit_last", "units", "queue N's DQL limit at the end of the run"),
    e("bql.txq.N.inflight_avg", "units", "queue N's time-averaged in-flight units (byte_queue_limits/inflight)"),
    e("bql.txq.N.inflight_p50", "units", "queue N's time-weighted median in-flight units (what a read of its byte_queue_limits/inflight returns at least half the time)"),
    e("bql.txq.N.inflight_p99", "units", "queue N's time-weighted 99th percentile of in-flight units"),
    e("bql.txq.N.inflight_max", "units", "queue N's largest in-flight count"),
    e("bql.txq.N.completions", "calls", "queue N's netdev_tx_completed_queue() calls that completed something (the kernel does not count them)"),
    e("bql.txq.N.limit_min", "units", "queue N's byte_queue_limits/limit_min at the end of the run"),
    e("bql.txq.N.limit_max", "units", "queue N's byte_queue_limits/limit_max at the end of the run"),
    e("txq.stack_xoff", "events", "times BQL stopped the TX queue (__QUEUE_STATE_STACK_XOFF)"),
    e("txq.drv_xoff", "events", "times the driver stopped the TX queue (__QUEUE_STATE_DRV_XOFF: a full ring)"),
    e("napi.polls", "polls", "NAPI polls of the consumer in the measured window"),
    e("napi.avg_work", "packets/poll", "packets per NAPI poll (budget 64)"),
    e("napi.full_budget_polls", "polls", "NAPI polls that used their whole budget (and so were repolled)"),
    e("napi.thread_cpu_pct", "%", "kernel: CPU time of the threaded-NAPI kthreads, percent of one CPU"),
    e("ring.drops", "packets", "packets dropped at a full driver ring (veth without backpressure; tun tx_dropped)"),
    e("ring.occupancy_avg", "packets", "time-averaged fill of the measured driver ring (by Little's law)"),
    e("ring.occupancy", "packets", "time series: driver ring fill, every sample_interval"),
    e("dev.noqueue_drops", "packets", "packets dropped by __dev_queue_xmit() on a noqueue device whose driver would not take them"),
    e("dev.tx_dropped", "packets", "kernel: the TX device's tx_dropped counter"),
    e("softnet.time_squeeze", "events", "times net_rx_action() ran out of budget or time with work left (/proc/net/softnet_stat)"),
    e("cpu.N.busy_pct", "%", "percent of the measured window this host's CPU N was busy (the simulator's far host and [lan] client have their own, peer.cpu.N.* and lan.cpu.N.*; the kernel backend's are the machine's CPUs)"),
    e("cpu.stalled_pct", "%", "simulator, with a profile's [[stalls]]: percent of the measured window the machine took from the CPUs (stalls begun in it, averaged over the CPUs; not busy time)"),
    e("cpu.N.softirq_pct", "%", "percent of the measured window CPU N spent in softirq handlers (mpstat's %soft)"),
    e("cpu.N.net_tx_pct", "%", "percent of the measured window CPU N spent in NET_TX softirq (net_tx_action, qdisc runs)"),
    e("cpu.N.net_rx_pct", "%", "percent of the measured window CPU N spent in NET_RX softirq (NAPI polls: RX, TX completions, ACKs)"),
    e("cpu.N.tasklet_pct", "%", "percent of the measured window CPU N spent in the sockets' deferred work (TSQ tasklet, TCP timers)"),
    e("peer.cpu.N.busy_pct", "%", "nic: percent of the measured window the far host's CPU N was busy (N counted from 0 on the far host, as its own /proc/stat numbers them)"),
    e("peer.cpu.N.softirq_pct", "%", "nic: percent of the measured window the far host's CPU N spent in softirq handlers"),
    e("peer.cpu.N.net_tx_pct", "%", "nic: percent of the measured window the far host's CPU N spent in NET_TX softirq (its replies', ACKs' and downloads' qdisc runs)"),
    e("peer.cpu.N.net_rx_pct", "%", "nic: percent of the measured window the far host's CPU N spent in NET_RX softirq (its NAPI polls)"),
    e("peer.cpu.N.tasklet_pct", "%", "nic: percent of the measured window the far host's CPU N spent in its sockets' deferred work"),
    e("lan.cpu.N.busy_pct", "%", "[lan]: percent of the measured window the client's CPU N was busy (N counted from 0 on the client)"),
    e("lan.cpu.N.softirq_pct", "%", "[lan]: percent of the measured window the client's CPU N spent in softirq handlers"),
    e("lan.cpu.N.net_tx_pct", "%", "[lan]: percent of the measured window the client's CPU N spent in NET_TX softirq"),
    e("lan.cpu.N.net_rx_pct", "%", "[lan]: percent of the measured window the client's CPU N spent in NET_RX softirq"),
    e("lan.cpu.N.tasklet_pct", "%", "[lan]: percent of the measured window the client's CPU N spent in its sockets' deferred work"),
    e("xps.queue_changes", "changes", "times netdev_pick_tx() changed a socket's TX queue over the run, first picks included"),
    e("xps.queue_flips", "changes", "changes of a socket's TX queue from one queue to another (seed 001's flips)"),
    e("xps.queue_flips_ooo_okay", "changes", "flips on an skb with ooo_okay set (TCP allows a flip only then)"),
    e("ingress.qdisc.sent_pkts", "packets", "ingress shaping: the ifb's root qdisc, packets sent (GSO segments counted), as tc -s qdisc show dev ifbN"),
    e("ingress.qdisc.drops", "packets", "ingress shaping: the ifb's root qdisc, drops"),
    e("ingress.qdisc.requeues", "events", "ingress shaping: the ifb's root qdisc, requeues"),
    e("ingress.qdisc.overlimits", "events", "ingress shaping: the ifb's root qdisc, overlimits (the shaper held a packet back)"),
    e("qdisc.txq.N.sent_pkts", "packets", "TX queue N's own qdisc (an mq child): packets sent, GSO segments counted"),
    e("qdisc.txq.N.drops", "packets", "TX queue N's own qdisc: drops"),
    e("qdisc.txq.N.throttled", "events", "TX queue N's fq: times a flow was put on the throttled tree"),
    e("qdisc.txq.N.flows_plimit", "packets", "TX queue N's fq: drops because a flow reached flow_limit"),
    e("qdisc.txq.N.latency_ns", "ns", "TX queue N's fq: its unthrottle-latency EWMA at the end (tc's latency)"),
    e("qdisc.txq.N.fastpath_packets", "packets", "TX queue N's fq: packets that took the fast path"),
    e("machine.other_cpu_pct", "%", "kernel: CPU time used by processes other than darkbuf's during the measured window (a busy machine skews the results)"),
    e("udp.in_errors", "datagrams", "kernel: UDP InErrors in the receiving namespace"),
    e("udp.rcvbuf_errors", "datagrams", "kernel: UDP RcvbufErrors (datagrams dropped at a full receive buffer)"),
    e("udp.sndbuf_errors", "datagrams", "kernel: UDP SndbufErrors (sends dropped, including qdisc drops reported as ENOBUFS)"),
    // A physical NIC (driver = "nic") and what lies beyond it.
    e("ping.wait_wire_ms", "ms", "nic: mean time a probe spent from the NIC's ring onto and across the wire"),
    e("ping.wait_return_ms", "ms", "nic: mean time of the echo reply's way back from the peer"),
    e("nic.tx_packets", "packets", "nic: packets the NIC transmitted in the measured window"),
    e("nic.tx_bytes", "bytes", "nic: bytes the NIC transmitted"),
    e("nic.tx_xmit_more", "packets", "nic: packets handed to the driver with xmit_more set (doorbell deferred)"),
    e("nic.tx_queue_stopped", "events", "nic: times the driver stopped a TX queue (descriptor ring full)"),
    e("nic.tx_queue_wake", "events", "nic: times the driver woke a stopped TX queue"),
    e("nic.tx_cqes", "completions", "nic: TX completions (descriptors reclaimed)"),
    e("nic.tx_irqs", "interrupts", "nic: TX-completion interrupts"),
    e("nic.tx_irqs_per_s", "interrupts/s", "nic: TX-completion interrupts per second"),
    e("nic.tx_usecs", "µs", "nic: the measured queue's TX moderation period at the end of the run (ethtool -c tx-usecs; adaptive_tx moves it)"),
    e("nic.completions_per_irq", "completions/interrupt", "nic: TX completions per interrupt (what coalescing batches)"),
    e("wire.util_pct", "%", "nic: percent of the measured window the wire was busy sending"),
    e("peer.rx_packets", "packets", "nic: packets the far host received"),
    e("peer.rx_dropped", "packets", "nic: packets the far host dropped on receive"),
    // The qdisc algorithms' counters (tc -s qdisc show's xstats), by tc's names.
    e("qdisc.allocation_errors", "events", "fq: flow allocations that failed"),
    e("qdisc.avg_hdr_offset", "bytes", "cake: average network header offset"),
    e("qdisc.backlog_bytes", "bytes", "bytes queued in the qdisc at the end"),
    e("qdisc.borrows", "events", "htb: times a class borrowed rate from its parent"),
    e("qdisc.bulk_flows", "flows", "cake: bulk flows at the end"),
    e("qdisc.capacity_estimate", "bytes/s", "cake: the shaper's capacity estimate"),
    e("qdisc.ce_mark", "packets", "fq_codel/codel: packets marked CE above ce_threshold"),
    e("qdisc.count", "packets", "codel: drops in the current dropping state (state)"),
    e("qdisc.direct_packets_stat", "packets", "htb: packets sent directly (no class matched)"),
    e("qdisc.drop_next", "ns", "codel: time to the next drop (state)"),
    e("qdisc.drop_overlimit", "packets", "fq_codel: drops because the qdisc was over its limit"),
    e("qdisc.drop_overmemory", "packets", "fq_codel: drops because memory_limit was reached"),
    e("qdisc.dropping", "flag", "codel: 1 while in the dropping state"),
    e("qdisc.ecn_mark", "packets", "packets marked CE instead of dropped (AQM with ecn)"),
    e("qdisc.fastpath_packets", "packets", "fq: packets that bypassed the flow queues"),
    e("qdisc.flows", "flows", "fq: flows at the end (state)"),
    e("qdisc.flows_plimit", "packets", "fq: drops because a flow reached flow_limit"),
    e("qdisc.bandN_pkts", "packets", "fq (6.7+): packets held in priority band N at the end"),
    e("qdisc.bandN_drops", "packets", "fq (6.7+): drops because band N reached the qdisc's limit"),
    e("qdisc.gc_flows", "flows", "fq: detached flows garbage-collected"),
    e("qdisc.giants", "packets", "fq: packets larger than the quantum allows"),
    e("qdisc.highprio_packets", "packets", "fq: packets in the high-priority band"),
    e("qdisc.horizon_caps", "packets", "fq: packets whose time stamp was capped to the horizon"),
    e("qdisc.horizon_drops", "packets", "fq: packets dropped beyond the horizon"),
    e("qdisc.inactive_flows", "flows", "fq: inactive flows at the end (state)"),
    e("qdisc.lastcount", "packets", "codel: count of the previous dropping state (state)"),
    e("qdisc.ldelay", "ns", "codel: sojourn time of the last dequeued packet (state); over mq, the mean of the children that sent"),
    e("qdisc.class.borrows", "events", "htb class (tc -s class, named \"qdisc.class MAJ:MIN borrows\"): times it borrowed rate from its parent"),
    e("qdisc.class.lends", "events", "htb class: times it lent rate to a child (sent at its own rate)"),
    e("qdisc.class.dropped", "packets", "htb class: packets its leaf qdisc dropped"),
    e("qdisc.class.overlimits", "events", "htb class: dequeues it could not make (over its rate or ceil)"),
    e("qdisc.lends", "events", "htb: times a class lent rate to a child"),
    e("qdisc.max_adj_size", "bytes", "cake: largest packet size after overhead adjustment"),
    e("qdisc.max_network_size", "bytes", "cake: largest network packet size"),
    e("qdisc.maxpacket", "bytes", "codel: largest packet seen (state)"),
    e("qdisc.memory_limit", "bytes", "fq_codel/cake: memory limit (state)"),
    e("qdisc.memory_used", "bytes", "fq_codel/fq_pie/cake: memory used at the end (state)"),
    e("qdisc.min_adj_size", "bytes", "cake: smallest packet size after overhead adjustment"),
    e("qdisc.min_network_size", "bytes", "cake: smallest network packet size"),
    e("qdisc.new_flow_count", "flows", "fq_codel/fq_pie: flows that became new flows"),
    e("qdisc.new_flows_len", "flows", "fq_codel/fq_pie: flows on the new list at the end (state)"),
    e("qdisc.old_flows_len", "flows", "fq_codel/fq_pie: flows on the old list at the end (state)"),
    e("qdisc.pkts_in", "packets", "pie/fq_pie: packets enqueued (not dropped on arrival)"),
    e("qdisc.dropped", "packets", "pie/fq_pie: packets dropped on arrival, early drops and overlimit drops together"),
    e("qdisc.overlimit", "packets", "pie/fq_pie: drops because the qdisc held limit packets (qdisc.overlimits stays 0 for them)"),
    e("qdisc.overmemory", "packets", "fq_pie: arrivals while memory_used was over memory_limit; fq_pie counts them and drops none"),
    e("qdisc.maxq", "packets", "pie: most packets queued when one arrived (state)"),
    e("qdisc.prob", "fraction", "pie: the drop probability at the end, as tc -s prints it (state); over mq, the mean of the children that sent. Also a time series (simulator): the probability every sample_interval, averaged over the host's pie qdiscs"),
    e("qdisc.delay_us", "µs", "time series (simulator, pie): the delay pie's controller uses, every sample_interval, averaged over the host's pie qdiscs"),
    e("qdisc.delay", "µs", "pie: the queue delay its controller last used (state); over mq, the mean of the children that sent"),
    e("qdisc.avg_dq_rate", "bytes/s", "pie with dq_rate_estimator: the measured drain rate (state; 0 without the estimator)"),
    e("qdisc.pkts_too_long", "packets", "fq: packets too long for the quantum"),
    e("qdisc.sent_bytes", "bytes", "bytes sent by the qdisc"),
    e("qdisc.sent_packets", "packets", "packets sent by the qdisc (xstats)"),
    e("qdisc.threshold_rate", "bytes/s", "cake: rate threshold of the tin"),
    e("qdisc.throttled", "events", "fq: times a flow was throttled by pacing"),
    e("qdisc.throttled_flows", "flows", "fq: throttled flows at the end (state)"),
    e("qdisc.time_next_delayed_flow", "ns", "fq: time to the next throttled flow (state)"),
    e("qdisc.latency_ns", "ns", "fq: how late throttled flows were released, an EWMA at the end (tc's latency); over mq, the mean of the children that sent"),
    e("qdisc.way_collisions", "events", "cake: set-associative hash collisions"),
    e("qdisc.way_indirect_hits", "events", "cake: set-associative indirect hits"),
    e("qdisc.way_misses", "events", "cake: set-associative misses"),
    e("qdisc.sparse_flows", "flows", "cake: sparse flows at the end (state)"),
    e("qdisc.unresponsive_flows", "flows", "cake: flows COBALT's BLUE found unresponsive (state)"),
    e("qdisc.flow_quantum", "bytes", "fq: per-flow quantum (state)"),
    e("qdisc.max_pkt_len", "bytes", "cake: largest packet seen (state)"),
    e("qdisc.tokens", "ns", "htb/tbf: tokens at the end (state)"),
    e("qdisc.tinN_threshold_rate", "bytes/s", "cake, tin N in tc's order: the tin's rate threshold"),
    e("qdisc.tinN_target_us", "µs", "cake, tin N in tc's order: the tin's CoDel target"),
    e("qdisc.tinN_interval_us", "µs", "cake, tin N in tc's order: the tin's CoDel interval"),
    e("qdisc.tinN_peak_delay_us", "µs", "cake, tin N in tc's order: the tin's peak delay"),
    e("qdisc.tinN_avg_delay_us", "µs", "cake, tin N in tc's order: the tin's average delay"),
    e("qdisc.tinN_base_delay_us", "µs", "cake, tin N in tc's order: the tin's base delay"),
    e("qdisc.tinN_sent_packets", "packets", "cake, tin N in tc's order: packets the tin sent"),
    e("qdisc.tinN_sent_bytes", "bytes", "cake, tin N in tc's order: bytes the tin sent"),
    e("qdisc.tinN_way_indirect_hits", "events", "cake, tin N in tc's order: the tin's set-associative indirect hits"),
    e("qdisc.tinN_way_misses", "events", "cake, tin N in tc's order: the tin's set-associative misses"),
    e("qdisc.tinN_way_collisions", "events", "cake, tin N in tc's order: the tin's set-associative collisions"),
    e("qdisc.tinN_drops", "packets", "cake, tin N in tc's order: packets the tin dropped"),
    e("qdisc.tinN_ecn_mark", "packets", "cake, tin N in tc's order: packets the tin marked CE"),
    e("qdisc.tinN_ack_drops", "packets", "cake, tin N in tc's order: ACKs the tin's ACK filter dropped"),
    e("qdisc.tinN_sparse_flows", "flows", "cake, tin N in tc's order: the tin's sparse flows (state)"),
    e("qdisc.tinN_bulk_flows", "flows", "cake, tin N in tc's order: the tin's bulk flows (state)"),
    e("qdisc.tinN_unresponsive_flows", "flows", "cake, tin N in tc's order: the tin's unresponsive flows (state)"),
    e("qdisc.tinN_max_pkt_len", "bytes", "cake, tin N in tc's order: the tin's largest packet (state)"),
    e("qdisc.tinN_flow_quantum", "bytes", "cake, tin N in tc's order: the tin's flow quantum (state)"),
    e("qdisc.tinN_backlog_bytes", "bytes", "cake, tin N in tc's order: bytes queued in the tin at the end (state)"),
    // TCP flows, as ss -ti and iperf3 name their figures.
    e("tcp.goodput_mbps", "Mbit/s", "tcp: bytes the receiving applications read in the measured window, all flows"),
    e("tcp.retrans", "segments", "tcp: segments retransmitted (not counting local qdisc drops, sent again as new data)"),
    e("tcp.reord_seen", "events", "tcp: reorderings detected in the measured window, all flows (tp->reord_seen; kernel backend: TCP_INFO's tcpi_reord_seen, 4.19+); once one is, RACK waits min_rtt/4 before it marks a segment lost"),
    e("tcp.dsack_dups", "segments", "tcp: segments the receivers D-SACKed, data that arrived twice (tp->dsack_dups; kernel backend: TCP_INFO's tcpi_dsack_dups, 4.19+), all flows, in the measured window"),
    e("tcp.undos", "recoveries", "tcp: window reductions undone: D-SACKs showed every retransmission of the recovery spurious, or F-RTO an RTO's (TcpExtTCPFullUndo + TcpExtTCPDSACKUndo + TcpExtTCPLossUndo; the kernel backend's is the sending namespace's), all flows, in the measured window"),
    e("tcp.spurious_rtos", "timeouts", "tcp: retransmission timeouts F-RTO found spurious (an ACK or SACK of data sent before the timeout and never retransmitted) and undid (TcpExtTCPSpuriousRTOs, tcp_process_loss(); the kernel backend's is the sending namespace's), all flows, in the measured window"),
    e("tcp.backlog_acks", "ACKs", "tcp: ACKs that arrived while the writing application held its socket (lock_sock() in tcp_sendmsg()) and waited in the socket's backlog for its release_sock(), those coalesced included, all flows, in the measured window; null with lock_sock = false, and on the kernel backend (no counter)"),
    e("tcp.backlog_coalesce", "ACKs", "tcp: backlog ACKs that tcp_add_backlog() merged into the previous one (same timestamps and SACK blocks; TcpExtTCPBacklogCoalesce, the kernel backend's of the sending namespace), all flows, in the measured window; null with lock_sock = false"),
    e("tcp.release_cb_work", "events", "tcp: times TSQ's handler or the retransmit timer found the socket held by its writer and left its work to tcp_release_cb() (TCP_TSQ_DEFERRED, TCP_WRITE_TIMER_DEFERRED), all flows, in the measured window; null with lock_sock = false, and on the kernel backend (no counter)"),
    e("tcp.timeouts", "timeouts", "tcp: retransmission timeouts in the measured window, all flows (TcpExtTCPTimeouts; the kernel backend's is the sending namespace's)"),
    e("tcp.loss_probes", "probes", "tcp: tail loss probes sent in the measured window, all flows (TcpExtTCPLossProbes; the kernel backend's is the sending namespace's)"),
    e("tcp.loss_probe_recoveries", "probes", "tcp: tail loss probes whose ACK showed a repaired loss, all flows (TcpExtTCPLossProbeRecovery)"),
    e("tcp.hystart_train_detect", "exits", "tcp: slow starts CUBIC's HyStart ended by its ACK-train detector (TcpExtTCPHystartTrainDetect; the kernel backend's is the sending namespace's), all flows, over the whole run: slow start usually ends in the warmup"),
    e("tcp.hystart_train_cwnd", "packets", "tcp: snd_cwnd summed over HyStart's ACK-train exits (TcpExtTCPHystartTrainCwnd), over the whole run; divided by tcp.hystart_train_detect, the cwnd slow start ended at"),
    e("tcp.hystart_delay_detect", "exits", "tcp: slow starts CUBIC's HyStart ended by its delay-increase detector (TcpExtTCPHystartDelayDetect), all flows, over the whole run"),
    e("tcp.hystart_delay_cwnd", "packets", "tcp: snd_cwnd summed over HyStart's delay exits (TcpExtTCPHystartDelayCwnd), over the whole run"),
    e("tcp.cwnd_avg_pkts", "packets", "tcp: time-averaged congestion window, mean over the flows"),
    e("tcp.srtt_avg_ms", "ms", "tcp: time-averaged smoothed RTT, mean over the flows"),
    e("tcp.pacing_rate_mbps", "Mbit/s", "tcp: time-averaged sk_pacing_rate, mean over the flows"),
    e("tcp.delivery_rate_mbps", "Mbit/s", "tcp (kernel backend): mean of TCP_INFO's tcpi_delivery_rate samples, mean over the flows"),
    e("tcp.flow_goodput_p1_mbps", "Mbit/s", "tcp: the per-flow goodput that 1% of the flows stay at or under (nearest rank over the run's TCP flows; below 10 flows the 10th and 90th are the slowest and the fastest)"),
    e("tcp.flow_goodput_p10_mbps", "Mbit/s", "tcp: the per-flow goodput's 10th percentile (nearest rank over the run's TCP flows; below 10 flows the 10th and 90th are the slowest and the fastest)"),
    e("tcp.flow_goodput_p50_mbps", "Mbit/s", "tcp: the per-flow goodput's median (nearest rank over the run's TCP flows; below 10 flows the 10th and 90th are the slowest and the fastest)"),
    e("tcp.flow_goodput_p90_mbps", "Mbit/s", "tcp: the per-flow goodput's 90th percentile (nearest rank over the run's TCP flows; below 10 flows the 10th and 90th are the slowest and the fastest)"),
    e("tcp.flow_goodput_p99_mbps", "Mbit/s", "tcp: the per-flow goodput's 99th percentile (nearest rank over the run's TCP flows; below 10 flows the 10th and 90th are the slowest and the fastest)"),
    e("tcp.flow_jain", "index", "tcp: Jain's fairness index of the flows' goodput, (sum x)^2 / (n sum x^2): 1 when every flow has the same, 1/n when one has it all"),
    e("tcp.delivered_ce", "packets", "tcp: packets delivered whose ACKs echoed CE, flows whose congestion control needs ECN (DCTCP), in the measured window (TcpExtTCPDeliveredCE; the kernel backend's is the sending namespace's, every flow)"),
    e("tcp.dctcp_alpha_avg", "fraction", "tcp: DCTCP's alpha (dctcp_alpha / 1024, the fraction of CE-echoed deliveries averaged per window with g = 1/16), time-averaged over each DCTCP flow's active time, mean over those flows (simulator only: the kernel's needs inet_diag DCTCPINFO)"),
    e("tcp.flow.N.dctcp_alpha_avg", "fraction", "tcp: flow N's DCTCP alpha, time-averaged (ss -ti's dctcp:(alpha:...) / 1024)"),
    e("tcp.flow.N.goodput_mbps", "Mbit/s", "tcp: flow N's goodput (also a time series at flent's 0.2 s step, with at most 1,000 flows in the run; the tcp.flow.N.* metrics with at most 10,000)"),
    e("tcp.flow.N.retrans", "segments", "tcp: flow N's retransmitted segments"),
    e("tcp.flow.N.timeouts", "timeouts", "tcp: flow N's retransmission timeouts (kernel backend: TCP_INFO's tcpi_total_rto, 6.7+)"),
    e("tcp.flow.N.min_rtt_ms", "ms", "tcp: flow N's tcp_min_rtt() at the end (ss -ti's minrtt:, tcpi_min_rtt): the windowed minimum RTT, which tcp_tso_autosize() sizes skbs by; with the handshake, the SYN's round trip on an idle path"),
    e("tcp.flow.N.reordering", "segments", "tcp: flow N's tp->reordering at the end (ss -ti's reordering:), the reordering degree measured; 3 until one is"),
    e("tcp.flow.N.reord_seen", "events", "tcp: reorderings flow N detected in the measured window (ss -ti's reord_seen:, tcp_check_sack_reordering())"),
    e("tcp.flow.N.tx_queue_changes", "changes", "tcp: times netdev_pick_tx() changed flow N's TX queue over the run"),
    e("tcp.flow.N.sndbuf_bytes", "bytes", "tcp: flow N's sending socket's sk_sndbuf at the end, as autotuned (ss -m's tb: twice the cwnd at tcp_sndbuf_expand()'s charge per segment, BBR three times, at most the scenario's sndbuf)"),
    e("tcp.flow.N.rcvbuf_bytes", "bytes", "tcp: flow N's receiving socket's sk_rcvbuf at the end (ss -m's rb; simulator: receiver = \"poll\" or \"blocking\" only)"),
    e("tcp.flow.N.rcv_ssthresh_bytes", "bytes", "tcp: flow N's receiver's rcv_ssthresh at the end, the window it may advertise (TCP_INFO tcpi_rcv_ssthresh; simulator: a modelled receiver only)"),
    e("tcp.flow.N.rcv_space_bytes", "bytes", "tcp: flow N's receiver's rcvq_space.space at the end, DRS's bytes per receiver RTT (TCP_INFO tcpi_rcv_space; simulator: a modelled receiver only)"),
    e("tcp.flow.N.cwnd_avg_pkts", "packets", "tcp: flow N's time-averaged congestion window"),
    e("tcp.flow.N.srtt_avg_ms", "ms", "tcp: flow N's time-averaged smoothed RTT"),
    e("tcp.flow.N.cwnd_pkts", "packets", "tcp: flow N's congestion window as ss -ti shows it at the end of each 0.2 s step (a time series; null while idle)"),
    e("tcp.flow.N.srtt_ms", "ms", "tcp: flow N's smoothed RTT at the end of each 0.2 s step (a time series; null while idle)"),
    e("tcp.flow.N.pacing_rate_mbps", "Mbit/s", "tcp: flow N's sk_pacing_rate at the end of each 0.2 s step (a time series; null while idle)"),
    e("qdisc.ctokens", "ns", "htb: ceil tokens at the end (state)"),
    // kind = "web": short TCP flows (docs/web.md). FCT: connect() to the receiver having read the last byte.
    e("web.flows_started", "flows", "web: connections opened (connect()) in the measured window, at the entry's Poisson arrivals"),
    e("web.flows_completed", "flows", "web: of those, the flows whose last byte the receiver read before the window's end (flows_started = flows_completed + flows_open)"),
    e("web.flows_open", "flows", "web: connections opened in the measured window whose data the receiver had not all read at its end"),
    e("web.open_peak", "flows", "web: the most connections open at once over the run, warmup included (summed over web entries)"),
    e("web.slots", "sockets", "web: sockets the simulator allocated for the web entries; a closed connection's slot is reused once its last packet has left, so this follows the connections open at once, not the arrivals; null on the kernel backend, where each connection is a new socket"),
    e("web.offered_mbps", "Mbit/s", "web: the bytes of the flows opened in the measured window x 8 / the window: the offered load"),
    e("web.fct_p50_ms", "ms", "web: median flow completion time (nearest rank), from connect() to the receiver having read the flow's last byte, handshake included"),
    e("web.fct_p99_ms", "ms", "web: 99th percentile flow completion time (nearest rank)"),
    e("web.fct_avg_ms", "ms", "web: mean flow completion time"),
    e("web.slowdown_p50", "ratio", "web: median slowdown, FCT / the ideal FCT of the flow's size on the idle path (the handshake's round trip, then the data's frames back to back at the bottleneck, the line or a shaper's buckets, and one-way propagation; no host time): null on a path with neither a line rate nor a shaper (a bare veth pair or tap)"),
    e("web.slowdown_p99", "ratio", "web: 99th percentile slowdown (nearest rank)"),
    e("web.bucket.N.size_min_bytes", "bytes", "web: size bucket N's smallest flow size; the buckets' upper edges are the entry's size_buckets (default 10 KB, 100 KB, 1 MB, 10 MB in powers of 1000, then one bucket above)"),
    e("web.bucket.N.size_max_bytes", "bytes", "web: size bucket N's largest flow size (null for the last bucket, which has no upper edge)"),
    e("web.bucket.N.flows_completed", "flows", "web: flows of size bucket N completed in the measured window"),
    e("web.bucket.N.fct_p50_ms", "ms", "web: median FCT of the flows in size bucket N"),
    e("web.bucket.N.fct_p99_ms", "ms", "web: 99th percentile FCT of the flows in size bucket N"),
    e("web.bucket.N.fct_avg_ms", "ms", "web: mean FCT of the flows in size bucket N"),
    e("web.bucket.N.slowdown_p50", "ratio", "web: median slowdown of the flows in size bucket N"),
    e("web.bucket.N.slowdown_p99", "ratio", "web: 99th percentile slowdown of the flows in size bucket N"),
    // irtt probers ([[traffic]] kind = "irtt"), as irtt client reports them; the
    // simulator knows the true one-way times, so no clock synchronisation is assumed.
    e("irtt.rtt_avg_ms", "ms", "irtt: mean round trip of the requests answered, all probers"),
    e("irtt.rtt_min_ms", "ms", "irtt: shortest round trip, all probers"),
    e("irtt.rtt_p50_ms", "ms", "irtt: median round trip (nearest rank), all probers"),
    e("irtt.rtt_p99_ms", "ms", "irtt: 99th percentile round trip (nearest rank), all probers"),
    e("irtt.rtt_max_ms", "ms", "irtt: longest round trip, all probers"),
    e("irtt.owd_up_avg_ms", "ms", "irtt: mean one-way delay client -> server (the server's receive time - the send time)"),
    e("irtt.owd_down_avg_ms", "ms", "irtt: mean one-way delay server -> client, the reply's build time included"),
    e("irtt.ipdv_avg_ms", "ms", "irtt: mean IPDV of the round trip: |delay(n) - delay(n-1)| over consecutive requests both answered"),
    e("irtt.ipdv_up_avg_ms", "ms", "irtt: mean IPDV of the one-way delay up"),
    e("irtt.ipdv_down_avg_ms", "ms", "irtt: mean IPDV of the one-way delay down"),
    e("irtt.loss_up_pct", "%", "irtt: requests dropped on the way to the server, of those whose fate is known"),
    e("irtt.loss_down_pct", "%", "irtt: replies dropped on the way back, of the requests the server received"),
    e("irtt.packets", "packets", "irtt: requests sent in the measured window whose fate is known (answered or dropped)"),
    e("irtt.N.rtt_avg_ms", "ms", "irtt: prober N's mean round trip (N counts the irtt entries; also a time series irtt.N.rtt_ms)"),
    e("irtt.N.rtt_ms", "ms", "irtt: prober N's round trip per request sent in the measured window (a time series; null = lost)"),
    e("irtt.N.owd_up_avg_ms", "ms", "irtt: prober N's mean one-way delay up"),
    e("irtt.N.owd_down_avg_ms", "ms", "irtt: prober N's mean one-way delay down"),
    e("irtt.N.loss_up_pct", "%", "irtt: prober N's requests dropped on the way to the server"),
    e("irtt.N.loss_down_pct", "%", "irtt: prober N's replies dropped on the way back"),
    // Voice calls ([[traffic]] kind = "voip"): per direction the E-model (ITU-T G.107) of
    // the stream behind a fixed playout buffer; see docs/voip.md.
    e("voip.mos", "MOS", "voice: the MOS (G.107 Annex B, from the E-model's R) of the worse direction (the lower MOS) of the worst entry; voip.owd_p99_ms, voip.jitter_ms and voip.loss_pct are that same direction's"),
    e("voip.r", "R", "voice: the E-model's rating R = Ro - Is - Id - Ie,eff + A of the direction voip.mos is"),
    e("voip.owd_p99_ms", "ms", "voice: 99th percentile one-way delay (nearest rank) of the received packets, of the direction voip.mos is"),
    e("voip.jitter_ms", "ms", "voice: RFC 3550 interarrival jitter (J += (|D| - J)/16, in arrival order), its mean over the stream's arrivals, of the direction voip.mos is"),
    e("voip.loss_pct", "%", "voice: packets lost to the decoder (dropped in the network, or arrived after their playout time), of the direction voip.mos is"),
    e("voip.up.mos", "MOS", "voice: the MOS of this host's stream to the far host (up) (G.107 Annex B; with several entries, the worst entry's)"),
    e("voip.up.r", "R", "voice: the E-model's R of this host's stream to the far host (up): Ro - Is (G.107 defaults) - Id (delay: Ta, T = Ta, Tr = 2 Ta) - Ie,eff (codec and loss, BurstR = 1)"),
    e("voip.up.mouth_to_ear_ms", "ms", "voice: the E-model's Ta of this host's stream to the far host (up): packetization (one interval) + codec look-ahead + the playout delay (a fixed jitter_buffer behind the delay it last re-primed at), mean over the packets played"),
    e("voip.up.owd_avg_ms", "ms", "voice: mean one-way delay (send to the receiving socket) of this host's stream to the far host (up)'s received packets"),
    e("voip.up.owd_p50_ms", "ms", "voice: median one-way delay of this host's stream to the far host (up)"),
    e("voip.up.owd_p99_ms", "ms", "voice: 99th percentile one-way delay of this host's stream to the far host (up)"),
    e("voip.up.owd_max_ms", "ms", "voice: longest one-way delay of this host's stream to the far host (up)"),
    e("voip.up.jitter_ms", "ms", "voice: RFC 3550 interarrival jitter of this host's stream to the far host (up), its mean over the arrivals (averaged over calls)"),
    e("voip.up.loss_pct", "%", "voice: packets of this host's stream to the far host (up) lost to the decoder: net_loss_pct + late_pct (the E-model's Ppl)"),
    e("voip.up.net_loss_pct", "%", "voice: packets of this host's stream to the far host (up) dropped on the way (qdisc, ring, wire), of those whose fate is known"),
    e("voip.up.late_pct", "%", "voice: packets of this host's stream to the far host (up) that arrived after their playout time (underruns of the fixed playout buffer, which then re-primes)"),
    e("voip.up.packets", "packets", "voice: packets of this host's stream to the far host (up) sent in the measured window whose fate is known"),
    e("voip.down.mos", "MOS", "voice: the MOS of the far host's stream to this host (down) (G.107 Annex B; with several entries, the worst entry's)"),
    e("voip.down.r", "R", "voice: the E-model's R of the far host's stream to this host (down): Ro - Is (G.107 defaults) - Id (delay: Ta, T = Ta, Tr = 2 Ta) - Ie,eff (codec and loss, BurstR = 1)"),
    e("voip.down.mouth_to_ear_ms", "ms", "voice: the E-model's Ta of the far host's stream to this host (down): packetization (one interval) + codec look-ahead + the playout delay (a fixed jitter_buffer behind the delay it last re-primed at), mean over the packets played"),
    e("voip.down.owd_avg_ms", "ms", "voice: mean one-way delay (send to the receiving socket) of the far host's stream to this host (down)'s received packets"),
    e("voip.down.owd_p50_ms", "ms", "voice: median one-way delay of the far host's stream to this host (down)"),
    e("voip.down.owd_p99_ms", "ms", "voice: 99th percentile one-way delay of the far host's stream to this host (down)"),
    e("voip.down.owd_max_ms", "ms", "voice: longest one-way delay of the far host's stream to this host (down)"),
    e("voip.down.jitter_ms", "ms", "voice: RFC 3550 interarrival jitter of the far host's stream to this host (down), its mean over the arrivals (averaged over calls)"),
    e("voip.down.loss_pct", "%", "voice: packets of the far host's stream to this host (down) lost to the decoder: net_loss_pct + late_pct (the E-model's Ppl)"),
    e("voip.down.net_loss_pct", "%", "voice: packets of the far host's stream to this host (down) dropped on the way (qdisc, ring, wire), of those whose fate is known"),
    e("voip.down.late_pct", "%", "voice: packets of the far host's stream to this host (down) that arrived after their playout time (underruns of the fixed playout buffer, which then re-primes)"),
    e("voip.down.packets", "packets", "voice: packets of the far host's stream to this host (down) sent in the measured window whose fate is known"),
    e("voip.N.mos", "MOS", "voice: entry N's MOS: its worse direction's (N counts the voip entries)"),
    e("voip.N.owd_p99_ms", "ms", "voice: entry N's 99th percentile one-way delay, of its worse direction"),
    e("voip.N.jitter_ms", "ms", "voice: entry N's RFC 3550 jitter, of its worse direction"),
    e("voip.N.loss_pct", "%", "voice: entry N's loss to the decoder, of its worse direction"),
    e("voip.N.up.mos", "MOS", "voice: entry N's MOS of this host's stream to the far host (up)"),
    e("voip.N.up.owd_p99_ms", "ms", "voice: entry N's 99th percentile one-way delay of this host's stream to the far host (up)"),
    e("voip.N.up.jitter_ms", "ms", "voice: entry N's RFC 3550 jitter of this host's stream to the far host (up)"),
    e("voip.N.up.loss_pct", "%", "voice: entry N's loss to the decoder of this host's stream to the far host (up)"),
    e("voip.N.down.mos", "MOS", "voice: entry N's MOS of the far host's stream to this host (down)"),
    e("voip.N.down.owd_p99_ms", "ms", "voice: entry N's 99th percentile one-way delay of the far host's stream to this host (down)"),
    e("voip.N.down.jitter_ms", "ms", "voice: entry N's RFC 3550 jitter of the far host's stream to this host (down)"),
    e("voip.N.down.loss_pct", "%", "voice: entry N's loss to the decoder of the far host's stream to this host (down)"),
    // Request/response ([[traffic]] kind = "rr"), as netperf's TCP_RR and UDP_RR report
    // them (omni selectors TRANSACTION_RATE, MEAN/P50/P90/P99_LATENCY): a transaction
    // counts when its response is read whole in the measured window.
    e("rr.transactions", "transactions", "rr: transactions completed in the measured window, all connections of all rr entries"),
    e("rr.transactions_per_s", "transactions/s", "rr: transactions completed per second of the measured window, all connections (netperf's TRANSACTION_RATE summed over its instances)"),
    e("rr.timeouts", "timeouts", "rr: timer expiries on a transaction: UDP_RR's receive timeout (`timeout`, netperf -e; the transaction is lost and the next starts), TCP_RR's loss probe or retransmission timeout of a request or response (the transaction goes on)"),
    e("rr.latency_mean_us", "us", "rr: mean transaction latency, from the request's send() to the response read whole (netperf's MEAN_LATENCY)"),
    e("rr.latency_min_us", "us", "rr: shortest transaction latency (netperf's MIN_LATENCY)"),
    e("rr.latency_p50_us", "us", "rr: median transaction latency (nearest rank; netperf's P50_LATENCY)"),
    e("rr.latency_p90_us", "us", "rr: 90th percentile transaction latency (nearest rank; netperf's P90_LATENCY)"),
    e("rr.latency_p99_us", "us", "rr: 99th percentile transaction latency (nearest rank; netperf's P99_LATENCY)"),
    e("rr.latency_max_us", "us", "rr: longest transaction latency (netperf's MAX_LATENCY)"),
    e("rr.N.transactions", "transactions", "with more than one rr entry: entry N's completed transactions (N counts the rr entries)"),
    e("rr.N.transactions_per_s", "transactions/s", "rr entry N's transactions per second, all its connections"),
    e("rr.N.timeouts", "timeouts", "rr entry N's timer expiries (see rr.timeouts)"),
    e("rr.N.latency_mean_us", "us", "rr entry N's mean transaction latency"),
    e("rr.N.latency_min_us", "us", "rr entry N's shortest transaction latency"),
    e("rr.N.latency_p50_us", "us", "rr entry N's median transaction latency"),
    e("rr.N.latency_p90_us", "us", "rr entry N's 90th percentile transaction latency"),
    e("rr.N.latency_p99_us", "us", "rr entry N's 99th percentile transaction latency"),
    e("rr.N.latency_max_us", "us", "rr entry N's longest transaction latency"),
    // driver = "wifi": the radio (NAME = the station's name in [[wifi.station]]).
    e("wifi.goodput_mbps", "Mbit/s", "wifi: transport payload (UDP, ICMP and TCP data) delivered over the air both ways, to and from all stations, per second"),
    e("wifi.tx_mbps", "Mbit/s", "wifi: IP bytes delivered to all stations over the air per second"),
    e("wifi.busy_pct", "%", "wifi: percent of the measured window the air was used by exchanges, the AP's and the stations' (AIFS, backoff, PPDU, SIFS, BlockAck or ACK)"),
    e("wifi.rx_mbps", "Mbit/s", "wifi: IP bytes the AP received from all stations over the air per second (their replies, ACKs and uploads)"),
    e("wifi.goodput_jain", "index", "wifi: Jain's fairness index over the goodputs of the stations that have traffic (1 = equal)"),
    e("wifi.airtime_jain", "index", "wifi: Jain's fairness index over the air used by the stations that have traffic (1 = equal)"),
    e("wifi.ampdu_avg_subframes", "frames", "wifi: mean frames per transmission (A-MPDU subframes; 1 for a single frame), retries included"),
    e("wifi.mac_queue_ms_avg", "ms", "wifi: mean wait of the delivered frames in the queue above the driver (mac80211's TXQs; the driver's per-TID queues on the old path)"),
    e("wifi.hw_queue_ms_avg", "ms", "wifi: mean time of the delivered frames from the driver's dequeue to their TX status (the hardware queue and the air, retries included)"),
    e("wifi.mac_queue_ms_p50", "ms", "wifi: median of the wait above the driver (100 us buckets)"),
    e("wifi.hw_queue_ms_p50", "ms", "wifi: median of the time from the driver's dequeue to TX status (100 us buckets)"),
    e("wifi.codel_drops", "packets", "wifi: packets CoDel dropped in mac80211's TXQs (debugfs aqm drops)"),
    e("wifi.codel_marks", "packets", "wifi: packets CoDel ECN-marked in mac80211's TXQs (debugfs aqm marks)"),
    e("wifi.fq_overlimit", "events", "wifi: times the radio's fq went over its packet or memory limit and dropped from its fattest flow (debugfs aqm fq_overlimit)"),
    e("wifi.fq_overmemory", "events", "wifi: those of the overlimit events due to the memory limit (fq_overmemory)"),
    e("wifi.fq_collisions", "packets", "wifi: packets whose flow slot belonged to another TXQ, queued in their TXQ's default flow (fq_collisions)"),
    e("wifi.station.NAME.goodput_mbps", "Mbit/s", "wifi: transport payload delivered to and from station NAME per second (its traffic both ways; TCP ACKs carry none)"),
    e("wifi.station.NAME.tx_mbps", "Mbit/s", "wifi: IP bytes delivered to station NAME per second"),
    e("wifi.station.NAME.airtime_pct", "%", "wifi: station NAME's share of the busy air: its exchanges with the AP both ways (TX + RX airtime, with AIFS, backoff and the response)"),
    e("wifi.station.NAME.rx_mbps", "Mbit/s", "wifi: IP bytes the AP received from station NAME per second (iw station dump's rx bytes)"),
    e("wifi.station.NAME.rx_airtime_ms", "ms", "wifi: RX airtime of station NAME's own PPDUs (iw station dump's rx duration; charged to its deficit with AIRTIME_USE_RX)"),
    e("wifi.station.NAME.uplink_drops", "frames", "wifi: station NAME's own frames dropped at its full queue for the air (uplink_queue_frames) or after retry_limit attempts"),
    e("wifi.station.NAME.tx_airtime_ms", "ms", "wifi: PPDU airtime charged to station NAME (iw station dump's tx duration; what the airtime scheduler charges)"),
    e("wifi.station.NAME.ampdu_avg_subframes", "frames", "wifi: mean frames per transmission to station NAME"),
    e("wifi.station.NAME.tx_retries", "frames", "wifi: subframes to station NAME lost and sent again (iw station dump's tx retries)"),
    e("wifi.station.NAME.tx_failed", "frames", "wifi: frames to station NAME dropped after retry_limit attempts (tx failed)"),
    e("wifi.station.NAME.mac_queue_ms_avg", "ms", "wifi: mean wait of station NAME's frames above the driver"),
    e("wifi.station.NAME.hw_queue_ms_avg", "ms", "wifi: mean time of station NAME's frames from the driver's dequeue to TX status"),
    e("wifi.station.NAME.aql_pending_us_max", "us", "wifi: the largest AQL pending airtime of station NAME's BE queue (aql Q depth) seen after a dequeue"),
];

/// The glossary entry of `metric`: exact, or with its numeric parts read as `N`
/// (`sink.pps.1` -> `sink.pps.N`, `cpu.3.busy_pct` -> `cpu.N.busy_pct`).
pub fn lookup(metric: &str) -> Option<&'static Entry> {
    if let Some(e) = GLOSSARY.iter().find(|e| e.name == metric) {
        return Some(e);
    }
    // An htb class's counters (`tc -s class`): "qdisc.class 1:10 lends" -> "qdisc.class.lends".
    if let Some(rest) = metric.strip_prefix("qdisc.class ") {
        let counter = rest.split_once(' ').map_or(rest, |(_, c)| c);
        return GLOSSARY.iter().find(|e| e.name.strip_prefix("qdisc.class.") == Some(counter));
    }
    let pattern: Vec<String> = metric
        .split('.')
        .map(|part| {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                return "N".to_string();
            }
            // cake's per-tin and fq's per-band counters: tin0_drops -> tinN_drops,
            // band2_pkts -> bandN_pkts.
            for prefix in ["tin", "band"] {
                if let Some((n, rest)) = part.strip_prefix(prefix).and_then(|r| r.split_once('_')) {
                    if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                        return format!("{prefix}N_{rest}");
                    }
                }
            }
            part.to_string()
        })
        .collect();
    let pattern = pattern.join(".");
    if let Some(e) = GLOSSARY.iter().find(|e| e.name == pattern) {
        return Some(e);
    }
    if let Some((_, rest)) = metric.strip_prefix("wifi.station.").and_then(|r| r.split_once('.')) {
        // A station's metrics are named by the station: wifi.station.fast1.airtime_pct.
        return GLOSSARY.iter().find(|e| e.name.strip_prefix("wifi.station.NAME.") == Some(rest));
    }
    // The ifb's qdisc's xstats (`ingress.qdisc.tin0_drops`) read as the root's.
    metric.strip_prefix("ingress.").filter(|r| r.starts_with("qdisc.")).and_then(lookup)
}

/// Every name in the glossary (with `N` for an index), for "valid metrics" messages.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = GLOSSARY.iter().map(|e| e.name.to_string()).collect();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_read_as_n() {
        assert_eq!(lookup("sink.pps.3").map(|e| e.name), Some("sink.pps.N"));
        assert_eq!(lookup("cpu.12.busy_pct").map(|e| e.unit), Some("%"));
        assert_eq!(lookup("peer.cpu.1.net_rx_pct").map(|e| e.name), Some("peer.cpu.N.net_rx_pct"));
        assert_eq!(lookup("qdisc.band2_pkts").map(|e| e.name), Some("qdisc.bandN_pkts"));
        assert_eq!(lookup("qdisc.txq.11.flows_plimit").map(|e| e.name), Some("qdisc.txq.N.flows_plimit"));
        assert_eq!(lookup("bql.txq.15.inflight_avg").map(|e| e.name), Some("bql.txq.N.inflight_avg"));
        assert_eq!(lookup("ping.rtt_avg_ms").map(|e| e.unit), Some("ms"));
        assert!(lookup("nosuch.metric").is_none());
        assert_eq!(lookup("wifi.station.fast1.airtime_pct").map(|e| e.name), Some("wifi.station.NAME.airtime_pct"));
        assert_eq!(lookup("wifi.station.7.goodput_mbps").map(|e| e.unit), Some("Mbit/s"));
        assert!(lookup("wifi.station.fast1.nosuch").is_none());
        assert!(lookup("sink.pps.x").is_none());
        assert_eq!(lookup("irtt.2.owd_up_avg_ms").map(|e| e.unit), Some("ms"));
    }

    #[test]
    fn no_name_twice() {
        let mut seen = std::collections::BTreeSet::new();
        for e in GLOSSARY {
            assert!(seen.insert(e.name), "{} twice", e.name);
            assert!(!e.unit.is_empty() && !e.meaning.is_empty(), "{}", e.name);
        }
    }
}
