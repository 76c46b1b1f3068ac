//! ptr_ring: mirrors include/linux/ptr_ring.h. (stub: being implemented)
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct PtrRing { q: VecDeque<u32>, size: usize, batch: usize }

impl PtrRing {
    pub fn new(size: usize, cache_line_bytes: usize) -> Self { let _ = cache_line_bytes; PtrRing { q: VecDeque::with_capacity(size), size, batch: 16 } }
    pub fn produce(&mut self, v: u32) -> Result<(), u32> { if self.full() { Err(v) } else { self.q.push_back(v); Ok(()) } }
    pub fn full(&self) -> bool { self.q.len() >= self.size }
    pub fn empty(&self) -> bool { self.q.is_empty() }
    pub fn consume(&mut self) -> Option<u32> { self.q.pop_front() }
    pub fn len(&self) -> usize { self.q.len() }
    pub fn size(&self) -> usize { self.size }
    pub fn batch(&self) -> usize { self.batch }
}
