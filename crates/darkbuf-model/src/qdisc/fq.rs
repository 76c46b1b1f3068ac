//! `fq` (net/sched/sch_fq.c): not modelled yet; [`build`] reports that.

use super::{BuildError, DevInfo, Qdisc};
use crate::params::Params;

/// Makes the qdisc from tc-style parameters (`fq_init()` / `fq_change()`).
pub fn build(params: Params, dev: &DevInfo) -> Result<Box<dyn Qdisc>, BuildError> {
    let _ = (params, dev);
    Err(BuildError::NotModelled("fq".into()))
}
