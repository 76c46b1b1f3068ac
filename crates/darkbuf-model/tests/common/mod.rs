//! Helpers shared by the qdisc property tests.

use proptest::test_runner::TestCaseError;
use std::collections::HashMap;

/// Every id in `drops` (a qdisc's drop list: the kernel's `to_free`, which holds
/// pointers, so ids here) leaves `held`, the packets the test has put in and not seen
/// come out: a packet dropped twice, or never held, fails the case.
pub fn take_dropped<V>(held: &mut HashMap<u32, V>, drops: &[u32]) -> Result<(), TestCaseError> {
    for &id in drops {
        if held.remove(&id).is_none() {
            return Err(TestCaseError::fail(format!("packet {id} dropped twice or was never held")));
        }
    }
    Ok(())
}
