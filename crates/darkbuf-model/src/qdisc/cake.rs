//! `cake` (net/sched/sch_cake.c): not modelled yet; [`build`] reports that.

use super::{BuildError, DevInfo, Qdisc};
use crate::params::Params;

/// Makes the qdisc from tc-style parameters (`cake_init()` / `cake_change()`).
pub fn build(params: Params, dev: &DevInfo) -> Result<Box<dyn Qdisc>, BuildError> {
    let _ = (params, dev);
    Err(BuildError::NotModelled("cake".into()))
}
