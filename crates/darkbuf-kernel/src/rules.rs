//! The slow consumer: N netfilter rules that every received packet traverses and none
//! matches, loaded in one transaction (`nft -f`, or `iptables-restore` when nft is
//! missing) into the receiving namespace's input hook.
//!
//! Rule i is `ip saddr 198.18.H.L udp dport 9 drop` (iptables: `-s 198.18.H.L/32 -p udp
//! --dport 9 -j DROP`): the benchmarking range 198.18.0.0/15 is never a source here, so
//! every packet is compared with all N rules and accepted. Native nft costs about 20 ns
//! per rule per packet on the development VM, iptables-legacy about 5.5 ns
//! (docs/reference/real-kernel-notes.md section 3); one backend is used
//! consistently and reported in the results.
//!
//! Which packets traverse the chain is a [`RuleScope`]: all (the scenario's meaning:
//! "rules every received packet traverses", the probe too), UDP only, or the floods'
//! destination ports only (the probe skips the rules).

use crate::cmd;
use crate::error::{KernelError, Result};

/// Which received packets jump to the chain of N rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleScope {
    /// Every packet (ICMP probes included).
    All,
    /// UDP only (`meta l4proto udp`): ICMP probes skip the rules.
    Udp,
    /// Only UDP to the floods' destination ports.
    Flood,
}

impl RuleScope {
    pub fn parse(s: &str) -> Option<RuleScope> {
        match s.trim().to_ascii_lowercase().as_str() {
            "all" => Some(RuleScope::All),
            "udp" => Some(RuleScope::Udp),
            "flood" | "flood-only" => Some(RuleScope::Flood),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RuleScope::All => "all",
            RuleScope::Udp => "udp",
            RuleScope::Flood => "flood",
        }
    }

    /// From the scenario's `consumer.rules_match`.
    pub fn of(m: darkbuf_scenario::RulesMatch) -> RuleScope {
        match m {
            darkbuf_scenario::RulesMatch::All => RuleScope::All,
            darkbuf_scenario::RulesMatch::Udp => RuleScope::Udp,
            darkbuf_scenario::RulesMatch::Flood => RuleScope::Flood,
        }
    }
}

/// The netfilter front end used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleBackend {
    Nft,
    IptablesRestore,
}

impl RuleBackend {
    pub fn name(self) -> &'static str {
        match self {
            RuleBackend::Nft => "nft",
            RuleBackend::IptablesRestore => "iptables-restore",
        }
    }

    /// nft if installed, else iptables-restore, else None.
    pub fn detect() -> Option<RuleBackend> {
        if cmd::which("nft").is_some() {
            Some(RuleBackend::Nft)
        } else if cmd::which("iptables-restore").is_some() {
            Some(RuleBackend::IptablesRestore)
        } else {
            None
        }
    }
}

/// The most rules the kernel backend loads. nft (1.0.6, kernel 6.18, on the 2-core
/// development machine with a load average of 10) took 17.7 s and 2.4 GB of memory to
/// load 500,000 of these rules, and 33.6 s and 4.9 GB for 1,000,000: past the
/// [`cmd::COMMAND_TIMEOUT`] of 30 s a tool may take. nft's memory grows by about 4.9 KB
/// per rule (7.5 GB at 5 M; at 100 M it crashed with SIGSEGV), the kernel's by about
/// 210 bytes. At 20 ns per rule per packet, 500,000 rules already cost 10 ms a packet.
pub const MAX_RULES: u32 = 500_000;

/// `Err` (exit 2) when `n` is more rules than the kernel backend loads.
pub fn check_count(n: u32) -> Result<()> {
    if n > MAX_RULES {
        return Err(KernelError::Input(format!(
            "consumer.nrules = {}: the kernel backend loads at most {} rules (nft took 17.7 s and 2.4 GB for \
             500,000 here, 33.6 s for 1,000,000, past the 30 s a command may take); lower consumer.nrules, \
             or run it on the simulator (--backend sim), which has no such limit",
            darkbuf_scenario::limits::thousands(n as u64),
            darkbuf_scenario::limits::thousands(MAX_RULES as u64)
        )));
    }
    Ok(())
}

/// Destination port of the never-matching rules (discard); no flood uses it.
pub const RULE_DPORT: u16 = 9;

/// The never-matching source address of rule `i` (198.18.0.0/15 has 131072 addresses).
fn rule_src(i: u32) -> String {
    let i = i % (2 * 65536);
    format!("198.{}.{}.{}", 18 + i / 65536, (i / 256) % 256, i % 256)
}

/// The `nft -f` script: table `inet darkbuf`, an input chain jumping to `slow`.
pub fn nft_script(n: u32, scope: RuleScope, flood_ports: &[u16]) -> String {
    let mut s = String::with_capacity(64 + n as usize * 48);
    s.push_str("table inet darkbuf {\n  chain slow {\n");
    for i in 0..n {
        s.push_str(&format!("    ip saddr {} udp dport {RULE_DPORT} drop\n", rule_src(i)));
    }
    s.push_str("  }\n  chain input {\n    type filter hook input priority filter; policy accept;\n");
    match scope {
        RuleScope::All => s.push_str("    jump slow\n"),
        RuleScope::Udp => s.push_str("    meta l4proto udp jump slow\n"),
        RuleScope::Flood => {
            let ports: Vec<String> = flood_ports.iter().map(|p| p.to_string()).collect();
            if !ports.is_empty() {
                s.push_str(&format!("    udp dport {{ {} }} jump slow\n", ports.join(", ")));
            }
        }
    }
    s.push_str("  }\n}\n");
    s
}

/// The `iptables-restore` input: chain DKB_SLOW on filter INPUT.
pub fn iptables_script(n: u32, scope: RuleScope, flood_ports: &[u16]) -> String {
    let mut s = String::with_capacity(64 + n as usize * 56);
    s.push_str("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:DKB_SLOW - [0:0]\n");
    match scope {
        RuleScope::All => s.push_str("-A INPUT -j DKB_SLOW\n"),
        RuleScope::Udp => s.push_str("-A INPUT -p udp -j DKB_SLOW\n"),
        RuleScope::Flood => {
            for p in flood_ports {
                s.push_str(&format!("-A INPUT -p udp --dport {p} -j DKB_SLOW\n"));
            }
        }
    }
    for i in 0..n {
        s.push_str(&format!("-A DKB_SLOW -s {}/32 -p udp --dport {RULE_DPORT} -j DROP\n", rule_src(i)));
    }
    s.push_str("COMMIT\n");
    s
}

/// Loads `n` rules into namespace `ns`. Nothing is loaded for n = 0.
pub fn load(ns: &str, n: u32, scope: RuleScope, flood_ports: &[u16], backend: RuleBackend) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    match backend {
        RuleBackend::Nft => {
            cmd::must_in(ns, "nft", &["-f", "-"], Some(&nft_script(n, scope, flood_ports))).map(|_| ())
        }
        RuleBackend::IptablesRestore => {
            cmd::must_in(ns, "iptables-restore", &[], Some(&iptables_script(n, scope, flood_ports))).map(|_| ())
        }
    }
    .map_err(|e| e.context(&format!("loading {n} rules with {}", backend.name())))
}

/// Counts the rules in the `slow` chain (to check a load).
pub fn count(ns: &str, backend: RuleBackend) -> Result<u64> {
    match backend {
        RuleBackend::Nft => {
            let o = cmd::run_in(ns, "nft", &["list", "chain", "inet", "darkbuf", "slow"], None)
                .map_err(|e| KernelError::Internal(e.to_string()))?;
            Ok(o.stdout.lines().filter(|l| l.trim_start().starts_with("ip saddr")).count() as u64)
        }
        RuleBackend::IptablesRestore => {
            let o = cmd::run_in(ns, "iptables-save", &[], None).map_err(|e| KernelError::Internal(e.to_string()))?;
            Ok(o.stdout.lines().filter(|l| l.starts_with("-A DKB_SLOW")).count() as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_cover_the_benchmark_range() {
        assert_eq!(rule_src(0), "198.18.0.0");
        assert_eq!(rule_src(257), "198.18.1.1");
        assert_eq!(rule_src(65536), "198.19.0.0");
        assert_eq!(rule_src(131071), "198.19.255.255");
    }

    #[test]
    fn nft_script_shape() {
        let s = nft_script(2, RuleScope::Udp, &[]);
        assert_eq!(
            s,
            "table inet darkbuf {\n  chain slow {\n    ip saddr 198.18.0.0 udp dport 9 drop\n    ip saddr 198.18.0.1 udp dport 9 drop\n  }\n  chain input {\n    type filter hook input priority filter; policy accept;\n    meta l4proto udp jump slow\n  }\n}\n"
        );
        assert!(nft_script(1, RuleScope::All, &[]).contains("    jump slow\n"));
        assert!(nft_script(1, RuleScope::Flood, &[5001, 5002]).contains("udp dport { 5001, 5002 } jump slow"));
    }

    #[test]
    fn iptables_script_shape() {
        let s = iptables_script(1, RuleScope::All, &[]);
        assert!(s.starts_with("*filter\n"));
        assert!(s.contains("-A INPUT -j DKB_SLOW\n"));
        assert!(s.contains("-A DKB_SLOW -s 198.18.0.0/32 -p udp --dport 9 -j DROP\n"));
        assert!(s.ends_with("COMMIT\n"));
        assert!(iptables_script(0, RuleScope::Flood, &[7]).contains("-A INPUT -p udp --dport 7 -j DKB_SLOW\n"));
    }

    #[test]
    fn the_rule_count_is_bounded() {
        assert!(check_count(MAX_RULES).is_ok());
        let e = check_count(5_000_000).unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(e.message().starts_with("consumer.nrules = 5,000,000: the kernel backend loads at most 500,000 rules"), "{e}");
    }

    #[test]
    fn scope_parse() {
        assert_eq!(RuleScope::parse("flood-only"), Some(RuleScope::Flood));
        assert_eq!(RuleScope::parse("ALL"), Some(RuleScope::All));
        assert_eq!(RuleScope::parse("x"), None);
    }
}
