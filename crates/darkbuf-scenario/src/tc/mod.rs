//! tc as the scenario's qdisc language: `[qdisc] tc = """..."""`, `[peer.qdisc] tc`,
//! `darkbuf run --tc FILE` (the key `qdisc.tc_file`), and `darkbuf show-tc`.
//!
//! The lines are iproute2's: `tc qdisc add|replace|change dev DEV (root | parent H |
//! ingress | clsact) [handle H] KIND OPTIONS`, `tc class add ... parent H classid H htb
//! OPTIONS`, `tc filter add dev DEV parent H [protocol P] [prio N] (matchall | u32 |
//! fw | flow) ... [flowid | classid H] [action mirred egress redirect dev IFB |
//! action skbedit ...]`. The leading `tc` is optional; `#` starts a comment and a
//! trailing `\` continues a line. `ip link add NAME type ifb` and `ip link set [dev]
//! NAME up`, which an SQM script runs between its tc lines, are accepted and create
//! nothing more (an `ifbN` named by tc lines is an ifb).
//!
//! Modules: [`lex`] (lines and tokens with their byte spans), [`cmd`] (the commands),
//! [`options`] (each qdisc's keywords: tc's names, its flags and multi-word values, its
//! units), [`build`] (the commands as the scenario's qdisc tree, [`QdiscSpec`]) and
//! [`show`] (a tree as tc lines).
//!
//! Errors carry the byte span of the word they are about, the keyword and what would be
//! valid; the caller turns the span into file:line:column.

pub mod build;
pub mod cmd;
pub mod import;
pub mod lex;
pub mod options;
pub(crate) mod section;
pub mod show;

use std::ops::Range;

/// A tc line darkbuf cannot take: the word's span, what is wrong, what would be valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcError {
    pub span: Range<usize>,
    pub message: String,
    pub help: String,
}

impl TcError {
    pub fn new(span: Range<usize>, message: impl Into<String>, help: impl Into<String>) -> Self {
        TcError { span, message: message.into(), help: help.into() }
    }
}

/// tc's handles (`get_qdisc_handle()`, `get_tc_classid()`): `MAJ:` (a qdisc), `MAJ:MIN`
/// (a class), hexadecimal; `root`, `none`. Returns `(major, minor)`.
pub fn parse_handle(s: &str) -> Option<(u16, u16)> {
    let (maj, min) = s.split_once(':')?;
    let hex = |x: &str| if x.is_empty() { Some(0) } else { u16::from_str_radix(x, 16).ok() };
    Some((hex(maj)?, hex(min)?))
}

/// A handle as tc prints it: `1:`, `1:10`.
pub fn format_handle((maj, min): (u16, u16)) -> String {
    if min == 0 {
        format!("{maj:x}:")
    } else {
        format!("{maj:x}:{min:x}")
    }
}
