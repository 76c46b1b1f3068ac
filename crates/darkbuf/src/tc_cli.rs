//! `darkbuf show-tc SCENARIO`: a scenario's qdisc tree as the tc lines that build it
//! (`[qdisc] tc = """..."""` and `darkbuf run --tc FILE` take them back).

use crate::run::{self, Failure};
use std::path::Path;

pub fn show_tc(path: &Path, set: &[String], peer: bool) -> Result<(), Failure> {
    let scn = run::load(path, set)?;
    let Some(lines) = darkbuf_scenario::tc::show::scenario_lines(&scn, peer) else {
        return Err(Failure::Input(format!("{}: --peer: the scenario has no far host ([peer] needs device.driver = \"nic\")", path.display())));
    };
    let mut text = lines.join("\n");
    text.push('\n');
    crate::output::stdout(&text)
}
