//! Access-time updates. Linux: `touch_atime()`, `atime_needs_update()`, `relatime_need_update()`
//! in fs/inode.c.

use super::file::FileDescription;
use super::mount::MntFlags;
use super::time::coarse_now;
use crate::abi::OpenFlags;

/// relatime updates an atime older than this even when it is newer than mtime and ctime.
const RELATIME_MAX_AGE_SEC: i64 = 24 * 60 * 60;

/// Updates the atime of `file`'s inode after a read, if the mount's atime mode asks for it.
///
/// # Fast path
/// Flag tests, one coarse clock read and three timestamp loads; writes only when relatime (or
/// strictatime) says the atime is stale.
#[inline]
pub(crate) fn touch_atime(file: &FileDescription) {
    if file.flags().contains(OpenFlags::NOATIME) {
        return;
    }
    touch_atime_at(&file.path().mnt, file.inode());
}

/// Updates the atime of `inode` reached through `mnt` (readlink, readdir, read), if it needs
/// one and the mount lets it be written (Linux: `touch_atime()`, which asks
/// `atime_needs_update()` and then skips the write on a read-only mount).
#[inline]
pub(crate) fn touch_atime_at(mnt: &super::mount::Mount, inode: &super::inode::Inode) {
    if let Some(now) = atime_update(mnt, inode) {
        if !mnt.is_rdonly() {
            inode.write_attrs(|w| w.set_atime(now));
        }
    }
}

/// Whether an access to `inode` through `mnt` needs an atime update, and to what (Linux:
/// `atime_needs_update()`). A read-only filesystem never does (`IS_NOATIME()`); a read-only
/// mount of a writable one may, and only the write is skipped (`touch_atime()`): a
/// `RESOLVE_CACHED` walk follows a symbolic link there only if its atime needs no update.
#[inline]
pub(crate) fn atime_update(
    mnt: &super::mount::Mount,
    inode: &super::inode::Inode,
) -> Option<crate::abi::Timespec> {
    let mf = mnt.flags();
    if mf.contains(MntFlags::NOATIME)
        || (inode.is_dir() && mf.contains(MntFlags::NODIRATIME))
        || mnt.sb().is_rdonly()
    {
        return None;
    }
    let atime = inode.atime_raw();
    if mf.contains(MntFlags::RELATIME) && atime > inode.mtime_raw() && atime > inode.ctime_raw() {
        // relatime: newer than both mtime and ctime, so only the age rule can ask for an update.
        if coarse_now().sec - atime.sec < RELATIME_MAX_AGE_SEC {
            return None;
        }
    }
    let now = coarse_now();
    (atime != now).then_some(now)
}
