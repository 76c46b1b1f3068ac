//! `darkbuf import [--dev IFACE] [--netns NAME] [--from DIR] --out FILE.toml`: a scenario
//! for a real host's device, from what is running (the commands below, in the
//! namespace with --netns) or from their saved outputs (--from DIR, the same file
//! names):
//!
//! | file | command |
//! |---|---|
//! | `tc-qdisc.json`, `tc-class.json` | `tc -s -d -j qdisc show dev IFACE`, `tc -d -j class show dev IFACE` |
//! | `tc-filter-ingress.json` | `tc -j filter show dev IFACE ingress` |
//! | `tc-qdisc-IFB.json`, `tc-class-IFB.json` | the same for the ifb IFACE's ingress is redirected to |
//! | `ip-link.json` | `ip -d -j link show dev IFACE` (kind, MTU, txqueuelen, TX queues) |
//! | `ethtool-i.txt`, `ethtool-g.txt`, `ethtool-c.txt`, `ethtool-k.txt`, `ethtool-l.txt` | `ethtool -i/-g/-c/-k/-l IFACE` |
//! | `tx-N/limit`, `limit_min`, `limit_max`, `hold_time`, `xps_cpus` | /sys/class/net/IFACE/queues/tx-N/ (BQL's byte_queue_limits/, XPS) |
//! | `nproc.txt` | `nproc` |
//! | `interrupts.txt`, `irq-N.txt` | `/proc/interrupts`, `/proc/irq/N/smp_affinity_list` of each vector named `IFACE-...` |
//! | `sysctl.txt` | `sysctl -e net.core.default_qdisc net.ipv4.tcp_congestion_control net.ipv4.tcp_limit_output_bytes net.ipv4.tcp_tso_rtt_log net.ipv4.tcp_wmem net.ipv4.tcp_rmem net.ipv4.tcp_ecn net.core.wmem_default` |
//!
//! What cannot be mapped is listed in comments at the top of the scenario with the
//! reason. Reading needs no root where the files are readable.

use crate::output::errln;
use crate::run::Failure;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The commands a live import runs, each saved under its file name.
fn commands(dev: &str) -> Vec<(String, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("tc-qdisc.json".into(), s(&["tc", "-s", "-d", "-j", "qdisc", "show", "dev", dev])),
        ("tc-class.json".into(), s(&["tc", "-d", "-j", "class", "show", "dev", dev])),
        ("tc-filter-ingress.json".into(), s(&["tc", "-j", "filter", "show", "dev", dev, "ingress"])),
        ("ip-link.json".into(), s(&["ip", "-d", "-j", "link", "show", "dev", dev])),
        ("ethtool-i.txt".into(), s(&["ethtool", "-i", dev])),
        ("ethtool-g.txt".into(), s(&["ethtool", "-g", dev])),
        ("ethtool-c.txt".into(), s(&["ethtool", "-c", dev])),
        ("ethtool-k.txt".into(), s(&["ethtool", "-k", dev])),
        ("ethtool-l.txt".into(), s(&["ethtool", "-l", dev])),
        ("nproc.txt".into(), s(&["nproc"])),
        (
            "sysctl.txt".into(),
            // -e: a name this kernel or namespace lacks (net.core.default_qdisc is the
            // initial namespace's only) must not fail the others.
            s(&["sysctl", "-e", "net.core.default_qdisc", "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_limit_output_bytes", "net.ipv4.tcp_tso_rtt_log", "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_ecn", "net.core.wmem_default"]),
        ),
    ]
}

/// Runs `argv` (in `netns`), its stdout or `None` when it failed or is not installed.
fn run(netns: Option<&str>, argv: &[String]) -> Option<String> {
    let mut c = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).args(argv);
            c
        }
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    let o = c.output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Saves what a live host shows into `dir`, as `--from` reads it.
fn snapshot(dev: &str, netns: Option<&str>, dir: &Path) -> Result<Vec<String>, Failure> {
    let mut missing = Vec::new();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).map_err(|e| Failure::Internal(format!("cannot write {}: {e}", dir.join(name).display())));
    for (name, argv) in commands(dev) {
        match run(netns, &argv) {
            Some(out) => write(&name, &out)?,
            None => missing.push(format!("`{}` failed or is not installed: what it shows is left out", argv.join(" "))),
        }
    }
    // The ifb the ingress redirects to.
    if let Some(ifb) = read_json(dir, "tc-filter-ingress.json").as_ref().and_then(redirect_target) {
        for (kind, extra) in [("qdisc", &["-s", "-d"][..]), ("class", &["-d"][..])] {
            let mut argv = vec!["tc".to_string()];
            argv.extend(extra.iter().map(|x| x.to_string()));
            argv.extend(["-j", kind, "show", "dev", &ifb].iter().map(|x| x.to_string()));
            if let Some(out) = run(netns, &argv) {
                write(&format!("tc-{kind}-{ifb}.json"), &out)?;
            }
        }
    }
    // The device's interrupt vectors (`IFACE-TxRx-N` and the like) and their affinity.
    if let Some(irqs) = run(None, &["cat".into(), "/proc/interrupts".into()]) {
        write("interrupts.txt", &irqs)?;
        for (irq, _) in device_vectors(&irqs, dev) {
            if let Some(a) = run(None, &["cat".into(), format!("/proc/irq/{irq}/smp_affinity_list")]) {
                write(&format!("irq-{irq}.txt"), &a)?;
            }
        }
    }
    // sysfs: BQL and XPS per TX queue (in the namespace's own /sys).
    for q in 0..4096 {
        let base = format!("/sys/class/net/{dev}/queues/tx-{q}");
        let Some(_) = run(netns, &["test".into(), "-d".into(), base.clone()]) else { break };
        std::fs::create_dir_all(dir.join(format!("tx-{q}"))).map_err(|e| Failure::Internal(format!("cannot create {}: {e}", dir.display())))?;
        for f in ["byte_queue_limits/limit", "byte_queue_limits/limit_min", "byte_queue_limits/limit_max", "byte_queue_limits/hold_time", "xps_cpus"] {
            if let Some(v) = run(netns, &["cat".into(), format!("{base}/{f}")]) {
                let name = f.rsplit('/').next().unwrap_or(f);
                write(&format!("tx-{q}/{name}"), &v)?;
            }
        }
    }
    Ok(missing)
}

/// The interrupt vectors of `dev` in `/proc/interrupts`: (IRQ, queue index) of each line
/// whose name is `dev-...-N` (igb's `eth0-TxRx-0`, ixgbe's, virtio's are not), in queue
/// order. A vector without a trailing index (igb's link vector `eth0`) is left out.
fn device_vectors(interrupts: &str, dev: &str) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = interrupts
        .lines()
        .filter_map(|l| {
            let (irq, rest) = l.trim_start().split_once(':')?;
            let irq = irq.trim().parse::<u32>().ok()?;
            let name = rest.split_whitespace().last()?;
            let tail = name.strip_prefix(dev)?.strip_prefix('-')?;
            let q = tail.rsplit('-').next()?.parse::<u32>().ok()?;
            Some((irq, q))
        })
        .collect();
    v.sort_by_key(|&(_, q)| q);
    v
}

/// `device.irq_cpus` from the vectors' affinity (each vector's first CPU), when every TX
/// queue has one.
fn irq_cpus(dir: &Path, dev: &str, txq: u64, notes: &mut Vec<String>) -> Option<Vec<u32>> {
    let irqs = read(dir, "interrupts.txt")?;
    let vectors = device_vectors(&irqs, dev);
    if vectors.is_empty() {
        notes.push(format!("no interrupt vector named {dev}-... in /proc/interrupts (mlx5 names its vectors after the PCI device): irq_cpus left at the default"));
        return None;
    }
    let cpus: Vec<u32> = vectors
        .iter()
        .filter_map(|(irq, _)| read(dir, &format!("irq-{irq}.txt")).and_then(|a| a.trim().split([',', '-']).next()?.parse().ok()))
        .collect();
    if cpus.len() as u64 != txq || cpus.len() != vectors.len() {
        notes.push(format!("{} vectors of {dev} with a readable affinity for {txq} TX queues: irq_cpus left at the default", cpus.len()));
        return None;
    }
    Some(cpus)
}

/// `[device.coalesce]` from `ethtool -c` (a NIC): TX and RX moderation, adaptive TX
/// (mlx5e's DIM, or igb's dynamic ITR, which ethtool shows as tx-usecs 1 to 3), CQE mode.
fn coalesce(dir: &Path, drv: &str, t: &mut String, notes: &mut Vec<String>) {
    let Some(c) = read(dir, "ethtool-c.txt") else { return };
    let num = |k: &str| ethtool_field(&c, k).and_then(|v| v.parse::<u32>().ok());
    let on_tx = |k: &str| c.lines().find(|l| l.trim_start().starts_with(k)).and_then(|l| l.split("TX:").nth(1)).map(|v| v.trim().starts_with("on"));
    let igb_dynamic = drv == "igb" && matches!(num("tx-usecs"), Some(1..=3));
    let adaptive = on_tx("Adaptive RX").unwrap_or(false) || igb_dynamic;
    let mut lines = Vec::new();
    if adaptive {
        lines.push(if igb_dynamic {
            format!("adaptive_tx = true        # igb tx-usecs {}: its dynamic ITR", num("tx-usecs").unwrap_or(0))
        } else {
            "adaptive_tx = true".to_string()
        });
    } else {
        for (k, key) in [("tx-usecs", "tx_usecs"), ("tx-frames", "tx_frames")] {
            if let Some(v) = num(k) {
                lines.push(format!("{key} = {}", v.min(if key == "tx_usecs" { 4095 } else { 65535 })));
            }
        }
    }
    for (k, key) in [("rx-usecs", "rx_usecs"), ("rx-frames", "rx_frames")] {
        if let Some(v) = num(k) {
            lines.push(format!("{key} = {}", v.min(if key == "rx_usecs" { 4095 } else { 65535 })));
        }
    }
    if on_tx("CQE mode RX") == Some(true) {
        lines.push("cqe_mode = true".into());
    }
    if c.lines().any(|l| l.trim_start().starts_with("Adaptive RX: on")) {
        notes.push("adaptive-rx on: the model's RX moderation is fixed (rx_usecs/rx_frames as read)".into());
    }
    if !lines.is_empty() {
        t.push_str("\n[device.coalesce]\n");
        for l in lines {
            t.push_str(&l);
            t.push('\n');
        }
    }
}

fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok()
}

fn read_json(dir: &Path, name: &str) -> Option<Value> {
    read(dir, name).and_then(|t| serde_json::from_str(&t).ok())
}

/// The device a `mirred` action of these filters redirects to.
fn redirect_target(filters: &Value) -> Option<String> {
    let s = filters.to_string();
    let i = s.find("\"to_dev\":\"")?;
    s[i + 10..].split('"').next().map(str::to_string)
}

/// `key: value` lines of ethtool's output, the value of `key`.
fn ethtool_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| l.trim().strip_prefix(key).and_then(|r| r.trim_start().strip_prefix(':')).map(|v| v.trim().to_string()))
}

/// `tc class show` as text (an iproute2 whose class show ignores -j): each `class htb
/// H root|parent P ... rate R ceil C burst B cburst B prio N quantum Q` line as the JSON
/// object `tc -j` prints (rates in bytes/s, sizes in bytes).
fn class_text(text: &str) -> Value {
    let rate = |w: &str| {
        let l = w.to_ascii_lowercase();
        let (num, mul) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)].iter().find_map(|(u, m)| l.strip_suffix(u).map(|n| (n.to_string(), *m)))?;
        num.parse::<f64>().ok().map(|v| (v * mul / 8.0).round() as u64)
    };
    let size = |w: &str| w.split('/').next().and_then(|x| x.trim_end_matches('b').parse::<u64>().ok());
    let mut out = Vec::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 4 || w[0] != "class" {
            continue;
        }
        let mut o = serde_json::Map::new();
        o.insert("class".into(), w[1].into());
        o.insert("handle".into(), w[2].into());
        let mut i = 3;
        while i < w.len() {
            match (w[i], w.get(i + 1)) {
                ("root", _) => {
                    o.insert("root".into(), true.into());
                    i += 1;
                    continue;
                }
                ("parent" | "leaf", Some(v)) => o.insert(w[i].into(), (*v).into()),
                ("rate" | "ceil", Some(v)) => o.insert(w[i].into(), rate(v).into()),
                ("burst" | "cburst", Some(v)) => o.insert(w[i].into(), size(v).into()),
                ("prio" | "quantum", Some(v)) => o.insert(w[i].into(), v.parse::<u64>().ok().into()),
                _ => None,
            };
            i += 2;
        }
        out.push(Value::Object(o));
    }
    Value::Array(out)
}

/// The CPUs of a hexadecimal CPU mask (`xps_cpus`: "00000002", comma-separated words).
fn mask_cpus(mask: &str) -> Vec<u32> {
    let hex: String = mask.trim().chars().filter(|c| *c != ',').collect();
    let mut cpus = Vec::new();
    for (i, c) in hex.chars().rev().enumerate() {
        let v = c.to_digit(16).unwrap_or(0);
        for b in 0..4 {
            if v & (1 << b) != 0 {
                cpus.push(i as u32 * 4 + b);
            }
        }
    }
    cpus
}

/// The scenario TOML for device `dev` from the files in `dir`.
pub fn scenario(dev: &str, dir: &Path, mut notes: Vec<String>) -> String {
    let mut t = String::new();
    let link = read_json(dir, "ip-link.json").and_then(|v| v.get(0).cloned()).unwrap_or(Value::Null);
    let kind = link.pointer("/linkinfo/info_kind").and_then(Value::as_str).unwrap_or("");
    let drv = read(dir, "ethtool-i.txt").and_then(|t| ethtool_field(&t, "driver")).unwrap_or_default();
    let driver = match (kind, drv.as_str()) {
        ("veth", _) | (_, "veth") => "veth",
        ("tun", _) | (_, "tun") => "tun",
        (_, "igb" | "igc" | "e1000e" | "ixgbe") => "nic",
        (_, d) if d.starts_with("mlx5") => "nic",
        (k, d) => {
            notes.push(format!("driver {:?} (link kind {k:?}) is not one darkbuf models: written as a NIC (igb class)", d));
            "nic"
        }
    };
    let cpus = read(dir, "nproc.txt").and_then(|s| s.trim().parse::<u32>().ok());
    let txq = link.get("num_tx_queues").and_then(Value::as_u64).unwrap_or(1);
    t.push_str(&format!("name = \"import-{dev}\"\nduration = \"10s\"\nwarmup = \"1s\"\n"));
    // [machine] only with what was read: an empty section would say nothing.
    match cpus {
        Some(c) => {
            // The model's machine has a sender's CPU and a consumer's: at least 2.
            if !(2..=64).contains(&c) {
                notes.push(format!("nproc {c}: the model takes 2 to 64 CPUs; written as {}", c.clamp(2, 64)));
            }
            t.push_str(&format!("\n[machine]\ncpus = {}\n", c.clamp(2, 64)))
        }
        None => notes.push("the CPU count (nproc) was not read: the default is used".into()),
    }
    t.push_str(&format!("\n[device]\nname = \"{dev}\"\ndriver = \"{driver}\"\ntx_queues = {}\n", txq.clamp(1, 64)));
    if txq > 64 {
        notes.push(format!("{txq} TX queues: the model takes at most 64"));
    }
    if let Some(q) = link.get("txqlen").and_then(Value::as_u64) {
        t.push_str(&format!("txqueuelen = {q}\n"));
    }
    if driver == "nic" {
        if let Some(m) = link.get("mtu").and_then(Value::as_u64) {
            t.push_str(&format!("mtu = {m}\n"));
        }
        if drv.starts_with("mlx5") {
            t.push_str("model = \"mlx5\"\n");
        }
        if let Some(r) = read(dir, "ethtool-g.txt").and_then(|g| g.split("Current hardware settings").nth(1).and_then(|c| ethtool_field(c, "TX"))) {
            t.push_str(&format!("ring_size = {r}\n"));
        }
        if let Some(k) = read(dir, "ethtool-k.txt").and_then(|k| ethtool_field(&k, "tcp-segmentation-offload")) {
            t.push_str(&format!("tso = {}\n", k.starts_with("on")));
        }
        if let Some(c) = irq_cpus(dir, dev, txq, &mut notes) {
            t.push_str(&format!("irq_cpus = {c:?}\n"));
        }
    }
    xps_and_bql(dir, txq, &mut t, &mut notes);
    if driver == "nic" {
        coalesce(dir, &drv, &mut t, &mut notes);
    }
    let empty = Value::Null;
    let q = read_json(dir, "tc-qdisc.json").unwrap_or(Value::Null);
    let c = read_json(dir, "tc-class.json").or_else(|| read(dir, "tc-class.json").map(|t| class_text(&t))).unwrap_or(Value::Null);
    let f = read_json(dir, "tc-filter-ingress.json").unwrap_or(Value::Null);
    let ifb = redirect_target(&f);
    let (iq, ic) = match &ifb {
        Some(n) => {
            // The ifb's classes as the device's: JSON, or the text tc prints where its
            // class dump has no JSON.
            let classes = format!("tc-class-{n}.json");
            let c = read_json(dir, &classes).or_else(|| read(dir, &classes).map(|t| class_text(&t))).unwrap_or(Value::Null);
            (read_json(dir, &format!("tc-qdisc-{n}.json")).unwrap_or(Value::Null), c)
        }
        None => (empty.clone(), empty.clone()),
    };
    let imp = darkbuf_scenario::tc::import::tc_lines(dev, &q, &c, &f, ifb.as_deref().map(|n| (n, &iq, &ic)));
    notes.extend(imp.unmapped);
    if !imp.lines.is_empty() {
        t.push_str("\n[qdisc]\ntc = '''\n");
        for l in &imp.lines {
            t.push_str(l);
            t.push('\n');
        }
        t.push_str("'''\n");
    } else {
        notes.push("no qdisc was read (tc-qdisc.json): the driver's default qdisc is used".into());
    }
    // sysctls: the ones the model reads go into [sysctl] (darkbuf-scenario's sysctl.rs);
    // the rest are noted.
    let sysctl = read(dir, "sysctl.txt").unwrap_or_default();
    let get = |k: &str| sysctl.lines().find_map(|l| l.split_once('=').filter(|(a, _)| a.trim() == k).map(|(_, v)| v.trim().to_string()));
    let mut sys = String::new();
    match get("net.ipv4.tcp_congestion_control") {
        Some(c) if matches!(c.as_str(), "reno" | "cubic" | "bbr") => sys.push_str(&format!("\"net.ipv4.tcp_congestion_control\" = \"{c}\"\n")),
        Some(c) => notes.push(format!("net.ipv4.tcp_congestion_control = {c}: the model has reno, cubic and bbr")),
        None => {}
    }
    for k in ["net.ipv4.tcp_limit_output_bytes", "net.ipv4.tcp_ecn", "net.core.wmem_default"] {
        if let Some(v) = get(k).filter(|v| v.parse::<u32>().is_ok()) {
            sys.push_str(&format!("\"{k}\" = {v}\n"));
        }
    }
    // A u8 (5.18+; `sysctl -e` prints nothing on older kernels).
    if let Some(v) = get("net.ipv4.tcp_tso_rtt_log").filter(|v| v.parse::<u8>().is_ok()) {
        sys.push_str(&format!("\"net.ipv4.tcp_tso_rtt_log\" = {v}\n"));
    }
    for (k, fixed) in [("net.ipv4.tcp_wmem", [4096u64, 16384]), ("net.ipv4.tcp_rmem", [4096, 131072])] {
        let Some(v) = get(k) else { continue };
        let n: Vec<u64> = v.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        if n.len() == 3 && n[..2] == fixed {
            sys.push_str(&format!("\"{k}\" = \"{} {} {}\"\n", n[0], n[1], n[2]));
        } else {
            notes.push(format!("{k} = {v}: the model keeps MIN and DEFAULT at {} {} (only MAX, where autotuning stops, is read)", fixed[0], fixed[1]));
        }
    }
    // The imported qdiscs are written out in full; the sysctl still sets the default of a
    // queue an edit leaves without one.
    match get("net.core.default_qdisc") {
        Some(v) if darkbuf_scenario::DEFAULT_QDISC_KINDS.contains(&v.as_str()) => sys.push_str(&format!("\"net.core.default_qdisc\" = \"{v}\"\n")),
        Some(v) => notes.push(format!("net.core.default_qdisc = {v}: not a qdisc the model has (the root qdisc above is what the device runs)")),
        None => {}
    }
    if !sys.is_empty() {
        t.push_str("\n[sysctl]\n");
        t.push_str(&sys);
    }
    t.push_str("\n# The load: edit to taste.\n[[traffic]]\nkind = \"tcp\"\n\n[[traffic]]\nkind = \"ping\"\ninterval = \"100ms\"\n");
    let mut head = format!("# darkbuf import of {dev}\n");
    for n in &notes {
        head.push_str(&format!("# not mapped: {n}\n"));
    }
    head + "\n" + &t
}

/// XPS (one CPU per queue) and BQL (tx-0's limits, if every queue has the same).
fn xps_and_bql(dir: &Path, txq: u64, t: &mut String, notes: &mut Vec<String>) {
    let mut xps = Vec::new();
    for q in 0..txq {
        match read(dir, &format!("tx-{q}/xps_cpus")).map(|m| mask_cpus(&m)) {
            Some(c) if c.len() == 1 => xps.push(c[0]),
            Some(c) if c.is_empty() => {}
            Some(c) => notes.push(format!("tx-{q}'s xps_cpus has {} CPUs: the model takes one per queue", c.len())),
            None => {}
        }
    }
    if !xps.is_empty() && xps.len() as u64 == txq {
        t.push_str(&format!("xps = {:?}\n", xps));
    }
    let val = |f: &str| read(dir, &format!("tx-0/{f}")).and_then(|s| s.trim().parse::<u64>().ok());
    if let (Some(min), Some(max)) = (val("limit_min"), val("limit_max")) {
        t.push_str(&format!("\n[device.bql]\nenabled = true\nlimit_min = {min}\nlimit_max = {max}\n"));
        if let Some(h) = val("hold_time") {
            t.push_str(&format!("hold_time = \"{h}ms\"\n"));
        }
    } else {
        t.push_str("\n[device.bql]\nenabled = false   # no byte_queue_limits in sysfs\n");
    }
}

/// The saved output a scenario key's value was read from, for an error about it.
fn source_of(key: &str) -> &'static str {
    let section = key.split('.').next().unwrap_or("");
    match section {
        "machine" => "nproc.txt",
        "device" if key.contains("coalesce") => "ethtool-c.txt",
        "device" if key.contains("ring") => "ethtool-g.txt",
        "device" if key.contains("bql") || key.contains("xps") => "the device's sysfs queues (tx-N/)",
        "device" => "ip-link.json",
        "qdisc" => "tc-qdisc.json (with tc-class.json)",
        "ingress" => "tc-qdisc.json of the ifb (with tc-filter-ingress.json)",
        "sysctl" | "traffic" => "sysctl.txt",
        _ => "one of the saved outputs",
    }
}

/// `darkbuf import`: the scenario from a live host (a snapshot in a temporary directory,
/// removed whatever happens) or from saved outputs (`from`), loaded once to check it,
/// then written to `out` (`-`: standard output, as the tools' convention has it).
pub fn import(dev: Option<&str>, netns: Option<&str>, from: Option<&Path>, out: &Path) -> Result<(), Failure> {
    let dev = dev.unwrap_or("eth0");
    let (dir, text) = match from {
        Some(d) => {
            if !d.is_dir() {
                return Err(Failure::Input(format!("--from {}: not a directory", d.display())));
            }
            (d.to_path_buf(), build(dev, netns, d, Vec::new())?)
        }
        None => {
            let d = std::env::temp_dir().join(format!("darkbuf-import-{}", std::process::id()));
            std::fs::create_dir_all(&d).map_err(|e| Failure::Internal(format!("cannot create {}: {e}", d.display())))?;
            // What import created goes, also when the snapshot or its reading fails.
            let text = snapshot(dev, netns, &d).and_then(|notes| build(dev, netns, &d, notes));
            let _ = std::fs::remove_dir_all(&d);
            (d, text?)
        }
    };
    // What is written must load: a value the host's outputs hold that darkbuf does not
    // take is the input's (exit 2), named with the file it came from.
    darkbuf_scenario::load_str(&out.display().to_string(), &text, &[]).map_err(|d| {
        let from = source_of(&d.key);
        Failure::Input(format!(
            "{}: {from} gives a scenario darkbuf does not take (nothing was written; the scenario built from it follows):\n{d}\n{text}",
            dir.display()
        ))
    })?;
    if out.as_os_str() == "-" {
        return crate::output::stdout(&text);
    }
    crate::run::write_file(out, text.as_bytes())?;
    errln!("darkbuf: wrote {}", out.display());
    Ok(())
}

/// The scenario's text from the outputs saved in `dir`, after checking that the
/// device's are there and that each JSON output is what its command prints.
fn build(dev: &str, netns: Option<&str>, dir: &Path, notes: Vec<String>) -> Result<String, Failure> {
    if read(dir, "tc-qdisc.json").is_none() && read(dir, "ip-link.json").is_none() {
        return Err(Failure::Input(format!("{}: no tc-qdisc.json or ip-link.json for {dev} (is the device there{}?)", dir.display(), netns.map_or(String::new(), |n| format!(" in netns {n}")))));
    }
    // A saved output that is not what its command prints would be read as nothing at
    // all, and the scenario written without it: say which file instead.
    // (tc-class.json is left out: an iproute2 whose class show ignores -j writes it as
    // text, which class_text() reads.)
    for name in ["tc-qdisc.json", "tc-filter-ingress.json", "ip-link.json"] {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else { continue };
        // tc prints nothing at all for some empty lists (`tc -j class show` on some
        // trees): read as absent, as before.
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Err(e) = serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()).and_then(|v| {
            if v.is_array() { Ok(()) } else { Err("not a JSON array, as iproute2's -j prints".into()) }
        }) {
            let cmd = commands(dev).into_iter().find(|(n, _)| n == name).map(|(_, a)| a.join(" ")).unwrap_or_default();
            return Err(Failure::Input(format!("{}: {e}; expected the output of `{cmd}`", path.display())));
        }
    }
    Ok(scenario(dev, dir, notes))
}
