//! A run's metrics as a backend assembles them: values by name, and for each `null`
//! the reason (the results' `unavailable`).

use std::collections::BTreeMap;

#[derive(Default)]
pub struct Out {
    pub m: BTreeMap<String, Option<f64>>,
    pub why: BTreeMap<String, String>,
}

impl Out {
    /// A measured value.
    pub fn set(&mut self, k: &str, v: f64) {
        self.m.insert(k.into(), Some(v));
    }

    /// A metric the backend cannot give, with why.
    pub fn none(&mut self, k: &str, reason: &str) {
        self.m.insert(k.into(), None);
        self.why.insert(k.into(), reason.into());
    }
}
