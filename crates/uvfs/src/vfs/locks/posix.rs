//! The byte-range lock list of one inode: POSIX (process-owned) and OFD (open-file-owned)
//! record locks, their conflicts, and an owner's splitting and merging. A pure state machine:
//! no waiting, no locking (the caller holds the inode's lock context). Linux:
//! `posix_lock_inode()`, `posix_test_lock()` and `posix_locks_conflict()` in fs/locks.c.

/// The last byte a lock can cover (Linux: `OFFSET_MAX`); a range ending here runs to the end
/// of the file, however it grows.
pub(crate) const OFFSET_MAX: i64 = i64::MAX;

/// Who owns a record lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    /// A POSIX lock: the fd table of the task that took it (Linux: `current->files`), by
    /// its [`FdTable::id`](super::super::fd_table::FdTable::id).
    Files(u64),
    /// An OFD lock: the open file description, by address (Linux: the `struct file`); its
    /// locks go before the description's memory does.
    File(usize),
}

/// Shared or exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `F_RDLCK` (`LOCK_SH`).
    Read,
    /// `F_WRLCK` (`LOCK_EX`).
    Write,
}

impl Kind {
    /// True if a lock of `self` and one of `other` held by different owners conflict: unless
    /// both are shared (Linux: `locks_conflict()`).
    pub(crate) fn conflicts(self, other: Kind) -> bool {
        self == Kind::Write || other == Kind::Write
    }
}

/// One held record lock over `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RangeLock {
    pub(crate) owner: Owner,
    /// What `F_GETLK` reports for it (`-1` for an OFD lock).
    pub(crate) pid: i32,
    pub(crate) kind: Kind,
    pub(crate) start: i64,
    /// Inclusive; [`OFFSET_MAX`] for "to the end".
    pub(crate) end: i64,
}

impl RangeLock {
    fn overlaps(&self, start: i64, end: i64) -> bool {
        self.start <= end && start <= self.end
    }
}

/// The record locks of one inode, in Linux's list order: each owner's locks together,
/// sorted by start, never overlapping, never two of one kind touching; owners in the order
/// their first lock came (an owner whose last lock goes loses its place). `F_GETLK` reports
/// the first conflicting lock in this order, as Linux's `flc_posix` list walk does.
#[derive(Debug, Default)]
pub(crate) struct RangeLocks {
    list: Vec<RangeLock>,
}

impl RangeLocks {
    /// True if no record lock is held.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The locks in list order (for tests and checks).
    #[cfg(test)]
    pub(crate) fn locks(&self) -> &[RangeLock] {
        &self.list
    }

    /// The first lock of another owner that a request of `kind` over `start..=end` by
    /// `owner` conflicts with (Linux: `posix_locks_conflict()` over `flc_posix`).
    pub(crate) fn first_conflict(
        &self,
        owner: Owner,
        kind: Kind,
        start: i64,
        end: i64,
    ) -> Option<&RangeLock> {
        self.list
            .iter()
            .find(|l| l.owner != owner && l.kind.conflicts(kind) && l.overlaps(start, end))
    }

    /// The first lock of `owner` itself overlapping `start..=end` (`F_OFD_GETLK` with
    /// `F_UNLCK`; Linux: `posix_test_locks_conflict()`).
    pub(crate) fn first_own(&self, owner: Owner, start: i64, end: i64) -> Option<&RangeLock> {
        self.list
            .iter()
            .find(|l| l.owner == owner && l.overlaps(start, end))
    }

    /// Sets `owner`'s lock state over `start..=end` to `kind` (`None`: unlocked), splitting
    /// the owner's locks that cross the range's edges and merging the new lock with the
    /// owner's locks of the same kind that overlap or touch it. Conflicts with other owners
    /// are the caller's to check first. Returns true if the owner's locks changed.
    pub(crate) fn set(
        &mut self,
        owner: Owner,
        pid: i32,
        kind: Option<Kind>,
        start: i64,
        end: i64,
    ) -> bool {
        debug_assert!(0 <= start && start <= end, "{start}..={end}");
        let first = self.list.iter().position(|l| l.owner == owner);
        let count = first.map_or(0, |f| {
            self.list[f..]
                .iter()
                .take_while(|l| l.owner == owner)
                .count()
        });
        let at = first.unwrap_or(self.list.len());
        let old: Vec<RangeLock> = self.list[at..at + count].to_vec();
        let mut mine: Vec<RangeLock> = Vec::with_capacity(old.len() + 2);
        let mut new = kind.map(|kind| RangeLock {
            owner,
            pid,
            kind,
            start,
            end,
        });
        for l in &old {
            // Same kind, overlapping or touching: absorbed into the new lock.
            if let Some(n) = new.as_mut() {
                if l.kind == n.kind && touches(l, start, end) {
                    n.start = n.start.min(l.start);
                    n.end = n.end.max(l.end);
                    continue;
                }
            }
            if !l.overlaps(start, end) {
                mine.push(*l);
                continue;
            }
            // Cut out `start..=end`: what is left on either side stays.
            if l.start < start {
                mine.push(RangeLock {
                    end: start - 1,
                    ..*l
                });
            }
            if l.end > end {
                mine.push(RangeLock {
                    start: end + 1,
                    ..*l
                });
            }
        }
        mine.extend(new);
        mine.sort_by_key(|l| l.start);
        if mine == old {
            return false;
        }
        self.list.splice(at..at + count, mine);
        true
    }

    /// Drops every lock of `owner`; true if there was one.
    pub(crate) fn remove_owner(&mut self, owner: Owner) -> bool {
        let before = self.list.len();
        self.list.retain(|l| l.owner != owner);
        self.list.len() != before
    }
}

/// True if `l` overlaps `start..=end` or ends right before it or starts right after it.
fn touches(l: &RangeLock, start: i64, end: i64) -> bool {
    // `start - 1` and `l.start - 1` cannot overflow: starts are not negative.
    l.end >= start - 1 && l.start - 1 <= end
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Owner = Owner::Files(1);
    const B: Owner = Owner::Files(2);
    const R: Option<Kind> = Some(Kind::Read);
    const W: Option<Kind> = Some(Kind::Write);

    fn ranges(l: &RangeLocks, owner: Owner) -> Vec<(Kind, i64, i64)> {
        l.locks()
            .iter()
            .filter(|x| x.owner == owner)
            .map(|x| (x.kind, x.start, x.end))
            .collect()
    }

    #[test]
    fn unlocking_the_middle_splits_a_lock_in_two() {
        let mut l = RangeLocks::default();
        l.set(A, 1, W, 0, 99);
        assert!(l.set(A, 1, None, 40, 59));
        assert_eq!(ranges(&l, A), [(Kind::Write, 0, 39), (Kind::Write, 60, 99)]);
    }

    #[test]
    fn a_different_kind_in_the_middle_splits_into_three() {
        let mut l = RangeLocks::default();
        l.set(A, 1, W, 0, OFFSET_MAX);
        l.set(A, 1, R, 10, 19);
        assert_eq!(
            ranges(&l, A),
            [
                (Kind::Write, 0, 9),
                (Kind::Read, 10, 19),
                (Kind::Write, 20, OFFSET_MAX)
            ]
        );
        // Back to write: one lock again.
        l.set(A, 1, W, 10, 19);
        assert_eq!(ranges(&l, A), [(Kind::Write, 0, OFFSET_MAX)]);
    }

    #[test]
    fn touching_and_overlapping_locks_of_one_kind_merge() {
        let mut l = RangeLocks::default();
        l.set(A, 1, R, 0, 9);
        l.set(A, 1, R, 20, 29);
        l.set(A, 1, R, 10, 19);
        assert_eq!(ranges(&l, A), [(Kind::Read, 0, 29)]);
        l.set(A, 1, R, 25, 40);
        assert_eq!(ranges(&l, A), [(Kind::Read, 0, 40)]);
        // A different kind touching does not merge.
        l.set(A, 1, W, 41, 50);
        assert_eq!(ranges(&l, A), [(Kind::Read, 0, 40), (Kind::Write, 41, 50)]);
    }

    #[test]
    fn shared_locks_of_two_owners_do_not_conflict_exclusive_ones_do() {
        let mut l = RangeLocks::default();
        l.set(A, 1, R, 0, 9);
        assert!(l.first_conflict(B, Kind::Read, 0, 9).is_none());
        assert!(l.first_conflict(B, Kind::Write, 9, 9).is_some());
        assert!(l.first_conflict(B, Kind::Write, 10, 20).is_none());
        assert!(l.first_conflict(A, Kind::Write, 0, 9).is_none());
        l.set(A, 1, W, 0, 9);
        assert!(l.first_conflict(B, Kind::Read, 5, 5).is_some());
    }

    #[test]
    fn owners_keep_their_place_and_locks_stay_sorted() {
        let mut l = RangeLocks::default();
        l.set(B, 2, W, 50, 59);
        l.set(A, 1, W, 20, 29);
        l.set(A, 1, R, 0, 9);
        l.set(B, 2, W, 0, 5);
        let order: Vec<(Owner, i64)> = l.locks().iter().map(|x| (x.owner, x.start)).collect();
        assert_eq!(order, [(B, 0), (B, 50), (A, 0), (A, 20)]);
        assert_eq!(
            l.first_conflict(Owner::Files(3), Kind::Write, 0, 100)
                .unwrap()
                .owner,
            B
        );
        l.set(B, 2, None, 0, OFFSET_MAX);
        l.set(B, 2, W, 0, 0);
        let order: Vec<Owner> = l.locks().iter().map(|x| x.owner).collect();
        assert_eq!(order, [A, A, B]);
    }

    #[test]
    fn unlocking_nothing_changes_nothing() {
        let mut l = RangeLocks::default();
        assert!(!l.set(A, 1, None, 0, OFFSET_MAX));
        l.set(A, 1, W, 10, 19);
        assert!(!l.set(A, 1, None, 0, 9));
        assert!(!l.set(A, 1, W, 12, 15));
        assert!(l.remove_owner(A));
        assert!(l.is_empty());
    }
}
