//! Jiffies and the timer wheel: include/linux/jiffies.h (`usecs_to_jiffies()`,
//! `jiffies_to_usecs()`) and kernel/time/timer.c (`calc_wheel_index()`).
//!
//! A qdisc that re-arms a `timer_list` every few jiffies (pie's and fq_pie's
//! `adapt_timer`) runs on the timer wheel's ticks, not on its nominal period: the
//! wheel never fires a timer early, so it rounds every expiry up to its level's
//! granularity, and at level 0 (under 63 jiffies away) that is one jiffy more. A timer
//! re-armed from its own callback with `mod_timer(&t, jiffies + 4)` therefore runs
//! every 5 jiffies. [`timer_expiry`] computes where the wheel puts an expiry.
//!
//! The simulator's jiffies count from time 0: jiffy `j` starts at `j * 10^9 / HZ` ns.

const NSEC_PER_SEC: u128 = 1_000_000_000;

/// `LVL_CLK_SHIFT`: each wheel level is 8 times coarser than the one below.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_BITS`: 64 buckets per level.
const LVL_BITS: u32 = 6;
/// `LVL_DEPTH` for HZ > 100 (9 levels; 8 at HZ <= 100, which changes only expiries
/// past about 12 days).
const LVL_DEPTH: u32 = 9;

/// `LVL_START(n)`: the smallest delta that level `n` takes.
fn lvl_start(n: u32) -> u64 {
    ((1u64 << LVL_BITS) - 1) << ((n - 1) * LVL_CLK_SHIFT)
}

/// `usecs_to_jiffies()`: rounds up.
pub fn usecs_to_jiffies(us: u64, hz: u32) -> u64 {
    ((us as u128 * hz as u128).div_ceil(1_000_000)) as u64
}

/// `jiffies_to_usecs()`: `(USEC_PER_SEC / HZ) * j` where HZ divides a second in µs,
/// else `j * USEC_PER_SEC / HZ`, truncated.
pub fn jiffies_to_usecs(j: u64, hz: u32) -> u64 {
    ((j as u128 * 1_000_000) / hz.max(1) as u128) as u64
}

/// `jiffies` at `now_ns`.
pub fn jiffies_at(now_ns: u64, hz: u32) -> u64 {
    ((now_ns as u128 * hz as u128) / NSEC_PER_SEC) as u64
}

/// The first nanosecond of jiffy `j` (the tick whose softirq runs the jiffy's timers).
pub fn jiffy_start_ns(j: u64, hz: u32) -> u64 {
    let ns = (j as u128 * NSEC_PER_SEC).div_ceil(hz.max(1) as u128);
    ns.min(u64::MAX as u128) as u64
}

/// The jiffy a timer armed with `expires` fires in, when the wheel's clock
/// (`base->clk`, the next jiffy it will process) is `clk`: `calc_wheel_index()` and
/// `calc_index()`. Inside a timer callback `clk` is the current jiffy + 1 ("base->clk
/// is set 1 offset ahead of jiffies to avoid endless requeuing"); at `init` it is the
/// current jiffy. An expiry already past fires at `clk`.
pub fn timer_expiry(expires: u64, clk: u64) -> u64 {
    let delta = expires.wrapping_sub(clk);
    if (delta as i64) < 0 {
        return clk;
    }
    let lvl = (1..LVL_DEPTH).find(|&n| delta < lvl_start(n)).map_or(LVL_DEPTH - 1, |n| n - 1);
    let shift = lvl * LVL_CLK_SHIFT;
    // "Round up with level granularity to prevent" early expiry.
    ((expires >> shift) + 1) << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        // pie's default tupdate, 15 ms: 4 jiffies at HZ 250 (3.75 rounded up), 15 at 1000.
        assert_eq!(usecs_to_jiffies(15_000, 250), 4);
        assert_eq!(usecs_to_jiffies(15_000, 1000), 15);
        assert_eq!(usecs_to_jiffies(15_000, 100), 2);
        assert_eq!(jiffies_to_usecs(4, 250), 16_000);
        assert_eq!(jiffies_to_usecs(5, 300), 16_666);
        assert_eq!(jiffies_at(3_999_999, 250), 0);
        assert_eq!(jiffies_at(4_000_000, 250), 1);
        assert_eq!(jiffy_start_ns(5, 250), 20_000_000);
        // HZ 300: jiffy 1 starts at 3,333,334 ns, the first ns that counts as jiffy 1.
        assert_eq!(jiffy_start_ns(1, 300), 3_333_334);
        assert_eq!(jiffies_at(3_333_334, 300), 1);
        assert_eq!(jiffies_at(3_333_333, 300), 0);
    }

    #[test]
    fn wheel_rounds_up() {
        // Level 0 (delta < 63): one jiffy late. A callback at jiffy 100 (clk 101)
        // re-arming for jiffies + 4 runs at 105.
        assert_eq!(timer_expiry(104, 101), 105);
        assert_eq!(timer_expiry(101 + 62, 101), 164);
        // Level 1 (63 <= delta < 504), granularity 8: pie's first run, HZ/2 = 125
        // jiffies after init at jiffy 0 (HZ 250), lands on jiffy 128 (512 ms).
        assert_eq!(timer_expiry(125, 0), 128);
        // HZ 1000: 500 jiffies, also level 1: 504.
        assert_eq!(timer_expiry(500, 0), 504);
        // HZ 100: 50 jiffies is level 0: 51.
        assert_eq!(timer_expiry(50, 0), 51);
        // A multiple of the granularity still moves a whole step.
        assert_eq!(timer_expiry(128, 0), 136);
        // Level 2 (504 <= delta < 4032), granularity 64.
        assert_eq!(timer_expiry(1000, 0), 1024);
        // mod_timer(jiffies + 0) from a callback (fq_pie's next batch): past, so clk.
        assert_eq!(timer_expiry(100, 101), 101);
    }
}
