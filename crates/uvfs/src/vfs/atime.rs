//! Access-time updates. Linux: `touch_atime()`, `atime_needs_update()`, `relatime_need_update()`
//! in fs/inode.c.
//!
//! The policy is per mount (`MntFlags::NOATIME`, `NODIRATIME`, `RELATIME`; neither of the
//! first and third is strictatime) plus the superblock's read-only flag. `lazytime`
//! (`SuperBlock::is_lazytime`) changes nothing here: on Linux it decides whether a timestamp
//! update dirties the inode for writeback (`I_DIRTY_TIME` instead of `I_DIRTY_SYNC`,
//! `generic_update_time()`), and uvfs has no writeback and no dirty state to mark, as tmpfs on
//! Linux has none; timestamps are always "in memory" here.

use super::file::FileDescription;
use super::inode::{packed, Inode, PACKED_SEC_SHIFT};
use super::mount::{MntFlags, Mount};
use super::time::coarse_now;
use crate::abi::{OpenFlags, Timespec};

/// relatime updates an atime older than this even when it is newer than mtime and ctime.
const RELATIME_MAX_AGE_SEC: i64 = 24 * 60 * 60;

/// Updates the atime of `file`'s inode after a read, if the mount's atime mode asks for it
/// (Linux: `file_accessed()`).
///
/// # Fast path
/// In Linux's order, every test that needs no clock comes first: the file's `O_NOATIME`,
/// then the tests of [`atime_update`]. Only an access that passes them all reads the coarse
/// clock, once, and loads three timestamps; it writes (in an attribute write section) only when
/// relatime (or strictatime) says the atime is stale. The tests compare the inode's packed
/// timestamp words ([`Inode::packed_times`]) where it has them. Nothing invalidates it; there is no
/// slow half to fall back to.
#[inline]
pub(crate) fn touch_atime(file: &FileDescription) {
    touch_file_atime(file, || true);
}

/// [`touch_atime`] for a read of the file's data, which the file's filesystem may not stamp
/// ([`FileOps::reads_touch_atime`](crate::vfs::ops::FileOps::reads_touch_atime): kernfs's
/// attributes). That is asked only once an update is due, so a read that needs none (most,
/// under relatime) makes no call for it.
#[inline]
pub(crate) fn touch_atime_read(file: &FileDescription) {
    touch_file_atime(file, || file.ops().reads_touch_atime());
}

/// [`touch_atime`], the write also subject to `may` (asked last).
#[inline]
fn touch_file_atime(file: &FileDescription, may: impl FnOnce() -> bool) {
    if file.flags().contains(OpenFlags::NOATIME) {
        return;
    }
    stamp_if(&file.path().mnt, file.inode(), may);
}

/// Updates the atime of `inode` reached through `mnt` (readlink, readdir, read), if it needs
/// one and the mount lets it be written (Linux: `touch_atime()`, which asks
/// `atime_needs_update()` and then skips the write on a read-only mount).
#[inline]
pub(crate) fn touch_atime_at(mnt: &Mount, inode: &Inode) {
    stamp_if(mnt, inode, || true);
}

/// Writes the atime of `inode` if [`atime_update`] says one is due, the mount is writable
/// and `may` agrees.
#[inline]
fn stamp_if(mnt: &Mount, inode: &Inode, may: impl FnOnce() -> bool) {
    if let Some(now) = atime_update(mnt, inode) {
        if !mnt.is_rdonly() && may() {
            inode.write_attrs(|w| w.set_atime(now));
        }
    }
}

/// Whether an access to `inode` through `mnt` needs an atime update, and to what (Linux:
/// `atime_needs_update()`). A read-only filesystem never does (`IS_NOATIME()`); a read-only
/// mount of a writable one may, and only the write is skipped (`touch_atime()`): a
/// `RESOLVE_CACHED` walk follows a symbolic link there only if its atime needs no update.
///
/// # Fast path
/// The flag tests come before the clock, in Linux's order: the superblock (read-only), then
/// the mount's `NOATIME`, then `NODIRATIME` for a directory. uvfs has no per-inode
/// `S_NOATIME` (no `chattr +A`) and no superblock-wide `SB_NOATIME`/`SB_NODIRATIME`, which
/// Linux tests among the first. An access they refuse reads no clock and no timestamp; one
/// they let through reads the coarse clock exactly once.
#[inline]
pub(crate) fn atime_update(mnt: &Mount, inode: &Inode) -> Option<Timespec> {
    if mnt.sb().is_rdonly() {
        return None;
    }
    let mf = mnt.flags();
    if mf.contains(MntFlags::NOATIME) || (mf.contains(MntFlags::NODIRATIME) && inode.is_dir()) {
        return None;
    }
    let now = coarse_now();
    let relatime = mf.contains(MntFlags::RELATIME);
    // The same rules on the packed words (one load each, no unpacking), unless a time is
    // outside what a word holds.
    if let (Some([a, m, c]), Some(n)) = (inode.packed_times(), packed(now)) {
        return (!relatime || relatime_need_update_packed(a, m, c, now.sec))
            .then_some(now)
            .filter(|_| a != n);
    }
    let atime = inode.atime_raw();
    if relatime && !relatime_need_update(atime, inode.mtime_raw(), inode.ctime_raw(), now) {
        return None;
    }
    (atime != now).then_some(now)
}

/// The relatime rule (Linux: `relatime_need_update()`): update an atime that is not newer
/// than the mtime or not newer than the ctime, or that is at least a day old by the seconds
/// of the clock.
#[inline]
fn relatime_need_update(atime: Timespec, mtime: Timespec, ctime: Timespec, now: Timespec) -> bool {
    atime <= mtime || atime <= ctime || now.sec.saturating_sub(atime.sec) >= RELATIME_MAX_AGE_SEC
}

/// [`relatime_need_update`] of packed words ([`Inode::packed_times`]), `now_sec` the clock's
/// seconds.
#[inline(always)]
fn relatime_need_update_packed(atime: i64, mtime: i64, ctime: i64, now_sec: i64) -> bool {
    atime <= mtime
        || atime <= ctime
        || now_sec.saturating_sub(atime >> PACKED_SEC_SHIFT) >= RELATIME_MAX_AGE_SEC
}

#[cfg(test)]
mod tests {
    use super::{packed, relatime_need_update, relatime_need_update_packed, RELATIME_MAX_AGE_SEC};
    use crate::abi::Timespec;

    fn t(sec: i64, nsec: i64) -> Timespec {
        Timespec::new(sec, nsec)
    }

    // Oracle: Linux's `relatime_need_update()` (fs/inode.c), rule by rule. The differential
    // cases (atime.cases) reach every rule but the age rule, which needs a ctime older than a
    // day: the host's tmpfs stamps ctimes with the real clock, which a case cannot move back.

    // `now` is the atime's own second in these two, so the age rule cannot answer for them.

    #[test]
    fn relatime_updates_an_atime_not_newer_than_mtime() {
        let now = t(10, 9);
        assert!(relatime_need_update(t(10, 5), t(10, 5), t(1, 0), now));
        assert!(relatime_need_update(t(10, 4), t(10, 5), t(1, 0), now));
        assert!(!relatime_need_update(t(10, 6), t(10, 5), t(1, 0), now));
    }

    #[test]
    fn relatime_updates_an_atime_not_newer_than_ctime() {
        let now = t(10, 9);
        assert!(relatime_need_update(t(10, 5), t(1, 0), t(10, 5), now));
        assert!(relatime_need_update(t(10, 5), t(1, 0), t(10, 6), now));
        assert!(!relatime_need_update(t(10, 6), t(1, 0), t(10, 5), now));
    }

    #[test]
    fn relatime_updates_an_atime_a_day_old_to_the_second() {
        let atime = t(500_000, 999_999_999);
        let (m, c) = (t(1, 0), t(2, 0));
        let day = RELATIME_MAX_AGE_SEC;
        assert!(relatime_need_update(atime, m, c, t(500_000 + day, 0)));
        assert!(!relatime_need_update(
            atime,
            m,
            c,
            t(500_000 + day - 1, 999_999_999)
        ));
        assert!(relatime_need_update(atime, m, c, t(500_000 + day + 1, 0)));
    }

    #[test]
    fn relatime_keeps_a_recent_atime_newer_than_both_and_a_future_one() {
        let (m, c) = (t(1, 0), t(2, 0));
        assert!(!relatime_need_update(t(100, 0), m, c, t(100, 0)));
        assert!(!relatime_need_update(t(i64::MAX, 0), m, c, t(100, 0)));
        assert!(!relatime_need_update(t(200, 0), m, c, t(i64::MIN, 0)));
    }

    /// The packed rule answers as the rule on `Timespec`s, for times on both sides of each
    /// other's seconds and nanoseconds, negative ones and the day boundary.
    #[test]
    fn relatime_on_packed_words_agrees_with_timespecs() {
        let secs = [
            -5,
            -1,
            0,
            9,
            10,
            11,
            10 + RELATIME_MAX_AGE_SEC,
            11 + RELATIME_MAX_AGE_SEC,
        ];
        let times: Vec<Timespec> = secs
            .iter()
            .flat_map(|&s| [0, 5, 999_999_999].map(move |n| t(s, n)))
            .collect();
        let mut checks = 0;
        for &a in &times {
            for &m in &times {
                for &c in &times {
                    for now in [
                        t(10, 7),
                        t(10 + RELATIME_MAX_AGE_SEC, 0),
                        t(20 + RELATIME_MAX_AGE_SEC, 1),
                    ] {
                        let p = |x| packed(x).expect("in range");
                        assert_eq!(
                            relatime_need_update_packed(p(a), p(m), p(c), now.sec),
                            relatime_need_update(a, m, c, now),
                            "{a:?} {m:?} {c:?} {now:?}"
                        );
                        checks += 1;
                    }
                }
            }
        }
        assert_eq!(checks, 24 * 24 * 24 * 3);
    }
}
