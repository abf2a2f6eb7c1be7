//! Access-time updates. Linux: `touch_atime()`, `atime_needs_update()`, `relatime_need_update()`
//! in fs/inode.c.

use super::file::FileDescription;
use super::mount::MntFlags;
use super::time::coarse_now;
use crate::abi::{OpenFlags, Timespec};

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

/// Updates the atime of `inode` reached through `mnt` (readlink, readdir, read).
#[inline]
pub(crate) fn touch_atime_at(mnt: &super::mount::Mount, inode: &super::inode::Inode) {
    let mf = mnt.flags();
    if mf.contains(MntFlags::NOATIME) || (inode.is_dir() && mf.contains(MntFlags::NODIRATIME)) || mnt.is_rdonly() {
        return;
    }
    let atime = inode.atime_raw();
    let now = coarse_now();
    if atime == now {
        return;
    }
    if mf.contains(MntFlags::RELATIME) && !relatime_need_update(inode, atime, now) {
        return;
    }
    inode.write_attrs(|w| w.set_atime(now));
}

#[cold]
fn relatime_need_update(inode: &super::inode::Inode, atime: Timespec, now: Timespec) -> bool {
    let a = inode.attrs(false);
    a.mtime >= atime || a.ctime >= atime || now.sec - atime.sec >= RELATIME_MAX_AGE_SEC
}
