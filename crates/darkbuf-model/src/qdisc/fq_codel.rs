//! `fq_codel` (net/sched/sch_fq_codel.c): not modelled yet; [`build`] reports that.

use super::{BuildError, DevInfo, Qdisc};
use crate::params::Params;

/// Makes the qdisc from tc-style parameters (`fq_codel_init()` / `fq_codel_change()`).
pub fn build(params: Params, dev: &DevInfo) -> Result<Box<dyn Qdisc>, BuildError> {
    let _ = (params, dev);
    Err(BuildError::NotModelled("fq_codel".into()))
}
