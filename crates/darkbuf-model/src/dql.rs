//! Dynamic queue limits: mirrors lib/dynamic_queue_limits.c. (stub: being implemented)

pub const DQL_MAX_OBJECT: u32 = u32::MAX / 16;
pub const DQL_MAX_LIMIT: u32 = (u32::MAX / 2) - DQL_MAX_OBJECT;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DqlError {
    Overcomplete { count: u32, inflight: u32 },
    ObjectTooLarge { count: u32 },
}

#[derive(Clone, Debug)]
pub struct Dql {
    pub num_queued: u32, pub adj_limit: u32, pub last_obj_cnt: u32,
    pub limit: u32, pub num_completed: u32, pub prev_ovlimit: u32, pub prev_num_queued: u32,
    pub prev_last_obj_cnt: u32, pub lowest_slack: u32, pub slack_start_time: u64,
    pub max_limit: u32, pub min_limit: u32, pub slack_hold_time: u64,
}

impl Dql {
    pub fn new(hold_time_jiffies: u64, now_jiffies: u64) -> Self {
        Dql { num_queued: 0, adj_limit: 0, last_obj_cnt: 0, limit: 0, num_completed: 0, prev_ovlimit: 0,
            prev_num_queued: 0, prev_last_obj_cnt: 0, lowest_slack: u32::MAX, slack_start_time: now_jiffies,
            max_limit: DQL_MAX_LIMIT, min_limit: 0, slack_hold_time: hold_time_jiffies }
    }
    pub fn queued(&mut self, count: u32) -> Result<(), DqlError> { self.last_obj_cnt = count; self.num_queued = self.num_queued.wrapping_add(count); Ok(()) }
    pub fn avail(&self) -> i32 { self.adj_limit.wrapping_sub(self.num_queued) as i32 }
    pub fn inflight(&self) -> u32 { self.num_queued.wrapping_sub(self.num_completed) }
    pub fn completed(&mut self, count: u32, _now_jiffies: u64) -> Result<(), DqlError> {
        self.num_completed = self.num_completed.wrapping_add(count);
        let lim = self.limit.max(2).max(self.min_limit).min(self.max_limit); self.limit = lim;
        self.adj_limit = lim.wrapping_add(self.num_completed); Ok(())
    }
    pub fn set_min_limit(&mut self, min_limit: u32) { self.min_limit = min_limit; }
}
