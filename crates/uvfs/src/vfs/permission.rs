//! Permission checks. Linux: `generic_permission()`, `inode_permission()`, `may_delete()`,
//! `may_create()` in fs/namei.c, `inode_owner_or_capable()`.

use super::cred::{Capabilities, Cred};
use super::inode::Inode;
use crate::abi::{Access, Errno, FileType, Result, S_ISVTX, S_IXUGO};

/// Others' write bit.
const S_IWOTH: u32 = 0o002;

/// Owner/group/other check with capability overrides (Linux: `generic_permission()`).
///
/// # Fast path
/// Loads the mode, uid and gid with relaxed loads; no lock.
///
/// # Errors
/// `EACCES`.
#[inline]
pub fn generic_permission(cred: &Cred, inode: &Inode, mask: Access) -> Result<()> {
    let mode = inode.mode();
    let m = mask.bits();
    let bits = if cred.fsuid == inode.uid() {
        mode >> 6
    } else if cred.in_group(inode.gid()) {
        mode >> 3
    } else {
        mode
    };
    if m & !bits & 7 == 0 {
        return Ok(());
    }
    if inode.is_dir() {
        if !mask.contains(Access::WRITE) && cred.capable(Capabilities::DAC_READ_SEARCH) {
            return Ok(());
        }
        if cred.capable(Capabilities::DAC_OVERRIDE) {
            return Ok(());
        }
        return Err(Errno::EACCES);
    }
    if mask == Access::READ && cred.capable(Capabilities::DAC_READ_SEARCH) {
        return Ok(());
    }
    if (!mask.contains(Access::EXEC) || mode & S_IXUGO != 0)
        && cred.capable(Capabilities::DAC_OVERRIDE)
    {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// [`generic_permission`] plus the read-only filesystem rule (Linux: `inode_permission()`).
///
/// # Errors
/// `EROFS` for a write to a regular file, directory or symlink of a read-only superblock;
/// `EACCES`.
pub fn inode_permission(cred: &Cred, inode: &Inode, mask: Access) -> Result<()> {
    if mask.contains(Access::WRITE)
        && inode.sb().is_rdonly()
        && matches!(
            inode.file_type(),
            FileType::Regular | FileType::Directory | FileType::Symlink
        )
    {
        return Err(Errno::EROFS);
    }
    generic_permission(cred, inode, mask)
}

/// Search permission on a directory during a walk (Linux: `may_lookup()`).
///
/// # Fast path
/// A directory with every execute bit set needs no credential check.
///
/// # Errors
/// `EACCES`.
#[inline]
pub fn may_lookup(cred: &Cred, dir: &Inode) -> Result<()> {
    if dir.mode() & S_IXUGO == S_IXUGO {
        return Ok(());
    }
    generic_permission(cred, dir, Access::EXEC)
}

/// True if the caller owns the inode or has `CAP_FOWNER` (Linux: `inode_owner_or_capable()`).
pub fn owner_or_capable(cred: &Cred, inode: &Inode) -> bool {
    cred.fsuid == inode.uid() || cred.capable(Capabilities::FOWNER)
}

/// Sticky-directory rule: may the caller remove or rename `victim` from `dir`?
/// (Linux: `check_sticky()`.)
fn check_sticky(cred: &Cred, dir: &Inode, victim: &Inode) -> bool {
    if dir.mode() & S_ISVTX == 0 {
        return false;
    }
    cred.fsuid != victim.uid() && cred.fsuid != dir.uid() && !cred.capable(Capabilities::FOWNER)
}

/// Whether the victim of [`may_delete`] must be a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VictimKind {
    /// `rmdir`, or rename of a directory.
    Directory,
    /// `unlink`, or rename of a non-directory.
    NonDirectory,
}

/// May the caller remove `victim` from `dir`? (Linux: `may_delete()`.)
///
/// # Errors
/// In Linux's order: `EACCES`/`EROFS` (write+search on `dir`), `EPERM` (sticky), `ENOTDIR`
/// or `EISDIR` (type), `ENOENT` if `dir` is dead.
pub fn may_delete(
    cred: &Cred,
    dir: &Inode,
    victim: &Inode,
    kind: VictimKind,
    dir_dead: bool,
) -> Result<()> {
    inode_permission(cred, dir, Access::WRITE | Access::EXEC)?;
    if check_sticky(cred, dir, victim) {
        return Err(Errno::EPERM);
    }
    match kind {
        VictimKind::Directory if !victim.is_dir() => return Err(Errno::ENOTDIR),
        VictimKind::NonDirectory if victim.is_dir() => return Err(Errno::EISDIR),
        _ => {}
    }
    if dir_dead {
        return Err(Errno::ENOENT);
    }
    Ok(())
}

/// May the caller create an entry in `dir`? (Linux: `may_create()`.)
///
/// # Errors
/// `ENOENT` if `dir` is dead; `EACCES`/`EROFS`.
pub fn may_create(cred: &Cred, dir: &Inode, dir_dead: bool) -> Result<()> {
    if dir_dead {
        return Err(Errno::ENOENT);
    }
    inode_permission(cred, dir, Access::WRITE | Access::EXEC)
}

/// The mode and owner of a directory, read when a name was looked up in it (Linux:
/// `nameidata::dir_mode` and `dir_vfsuid`).
#[derive(Clone, Copy, Debug)]
pub struct DirAttrs {
    /// Type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
}

/// May `open(O_CREAT)` open `inode`, which already existed in the directory `dir`? In a
/// sticky, world-writable directory, a file that neither the caller nor the directory's owner
/// owns is refused (Linux: `may_create_in_sticky()` in fs/namei.c). Regular files and FIFOs
/// are exempt: uvfs behaves as Linux with `fs.protected_regular = fs.protected_fifos = 0`
/// (docs/divergences.md, "Policy choices"), so the rule applies to the other types.
///
/// # Errors
/// `EACCES`.
pub fn may_create_in_sticky(cred: &Cred, dir: DirAttrs, inode: &Inode) -> Result<()> {
    if dir.mode & S_ISVTX == 0 || dir.mode & S_IWOTH == 0 {
        return Ok(());
    }
    if matches!(inode.file_type(), FileType::Regular | FileType::Fifo) {
        return Ok(());
    }
    let owner = inode.uid();
    if owner == dir.uid || owner == cred.fsuid {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// The set-id bits a write or truncate by `cred` must clear (Linux: `should_remove_suid()`
/// with `setattr_should_drop_sgid()`): set-user-ID always, set-group-ID when group-executable
/// or when the writer is not in the file's group; nothing for a caller with `CAP_FSETID` or
/// for a non-regular file.
pub fn should_remove_suid(cred: &Cred, inode: &Inode) -> u32 {
    let mode = inode.mode();
    let mut kill = 0;
    if mode & crate::abi::S_ISUID != 0 {
        kill |= crate::abi::S_ISUID;
    }
    kill |= should_drop_sgid(cred, inode);
    if kill != 0 && !cred.capable(Capabilities::FSETID) && inode.file_type() == FileType::Regular {
        kill
    } else {
        0
    }
}

/// Whether set-group-ID must go (Linux: `setattr_should_drop_sgid()`).
pub fn should_drop_sgid(cred: &Cred, inode: &Inode) -> u32 {
    let mode = inode.mode();
    if mode & crate::abi::S_ISGID == 0 {
        return 0;
    }
    if mode & crate::abi::S_IXGRP != 0
        || !(cred.in_group(inode.gid()) || cred.capable(Capabilities::FSETID))
    {
        return crate::abi::S_ISGID;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{OpenFlags, AT_FDCWD, S_ISGID, S_ISUID};
    use crate::sys::Vfs;
    use std::sync::Arc;

    /// A file of `mode` owned by root:100 (or a directory with `dir`), and its inode.
    fn inode(vfs: &Vfs, mode: u32, dir: bool) -> Arc<Inode> {
        let t = vfs.task(Cred::root());
        let fd = if dir {
            t.mkdirat(AT_FDCWD, "/d", 0o755).expect("mkdir");
            t.openat(AT_FDCWD, "/d", OpenFlags::RDONLY, 0)
                .expect("open")
        } else {
            t.openat(AT_FDCWD, "/f", OpenFlags::CREAT | OpenFlags::RDWR, 0o644)
                .expect("create")
        };
        t.fchown(fd, None, Some(100)).expect("chown");
        t.fchmod(fd, mode).expect("chmod");
        let inode = t.fget(fd).expect("open fd").inode().clone();
        assert_eq!(inode.mode() & 0o7777, mode, "set up");
        inode
    }

    /// The bits a write must clear, by mode and writer (Linux: `should_remove_suid()`,
    /// `setattr_should_drop_sgid()`): these are the function's answers, not only what a write
    /// shows (clearing a bit that is not set changes nothing a write's caller can see).
    #[test]
    fn should_remove_suid_names_exactly_the_set_id_bits_to_clear() {
        let outsider = Cred::user(1000, 1000, &[]);
        let member = Cred::user(1000, 100, &[]);
        let root = Cred::root();
        let cases: [(u32, bool, &Cred, u32); 10] = [
            (0o644, false, &outsider, 0),
            (0o755, false, &outsider, 0),
            (0o4755, false, &outsider, S_ISUID),
            (0o2755, false, &outsider, S_ISGID),
            (0o2745, false, &outsider, S_ISGID),
            (0o2745, false, &member, 0),
            (0o2755, false, &member, S_ISGID),
            (0o6755, false, &outsider, S_ISUID | S_ISGID),
            (0o6755, false, &root, 0),
            (0o6755, true, &outsider, 0),
        ];
        let mut checked = 0;
        for (mode, dir, cred, want) in cases {
            let vfs = Vfs::new();
            let inode = inode(&vfs, mode, dir);
            assert_eq!(
                should_remove_suid(cred, &inode),
                want,
                "mode {mode:o} dir {dir} uid {} gid {}",
                cred.fsuid,
                cred.fsgid
            );
            checked += 1;
        }
        assert_eq!(checked, 10);
    }
}
