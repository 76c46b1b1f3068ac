//! The kernel backend: runs a scenario on the running kernel in network namespaces.
//! See ../shared/DESIGN.md "The kernel backend".

pub mod load;
