//! What a kernel-clock step's token or sequence count alone decides, kept per count the first
//! time a run meets it: a run meets the same few hundred counts over and over, and each read of a
//! curve or an axis costs logarithms and an exponential. Counts above [`MAX_COUNT`] are read each
//! time. A cache only: what it returns is what the read gives, bit for bit, and two clocks are
//! equal whatever they cached.

use std::cell::RefCell;

/// The largest count kept (a few tens of KB a clock at most, copied with each checkpoint).
pub const MAX_COUNT: u64 = 1024;

/// Values by count, read on first use.
#[derive(Clone, Debug)]
pub struct ByCount<T: Copy>(RefCell<Vec<Option<T>>>);

impl<T: Copy> Default for ByCount<T> {
    fn default() -> Self {
        ByCount(RefCell::new(Vec::new()))
    }
}

impl<T: Copy> ByCount<T> {
    /// The value at `count`, from `read` the first time.
    pub fn get_or(&self, count: u64, read: impl FnOnce() -> T) -> T {
        if count > MAX_COUNT {
            return read();
        }
        let i = count as usize;
        let kept = self.0.borrow().get(i).copied().flatten();
        if let Some(v) = kept {
            return v;
        }
        let v = read();
        let mut values = self.0.borrow_mut();
        if values.len() <= i {
            values.resize(i + 1, None);
        }
        values[i] = Some(v);
        v
    }
}

impl<T: Copy> PartialEq for ByCount<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_read_once_and_a_large_one_every_time() {
        let cache = ByCount::default();
        let reads = std::cell::Cell::new(0);
        let read = |x: u64| {
            reads.set(reads.get() + 1);
            x as f64 * 1.5
        };
        assert_eq!(cache.get_or(7, || read(7)), 10.5);
        assert_eq!(cache.get_or(7, || read(7)), 10.5);
        assert_eq!(reads.get(), 1);
        assert_eq!(cache.get_or(MAX_COUNT + 1, || read(MAX_COUNT + 1)), (MAX_COUNT + 1) as f64 * 1.5);
        assert_eq!(cache.get_or(MAX_COUNT + 1, || read(MAX_COUNT + 1)), (MAX_COUNT + 1) as f64 * 1.5);
        assert_eq!(reads.get(), 3);
        assert_eq!(cache, ByCount::default(), "a cache does not tell clocks apart");
    }
}
