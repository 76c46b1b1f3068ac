//! darkbuf results: the JSON contract, statistics, and the formats people read.

pub mod results;

pub use results::*;
