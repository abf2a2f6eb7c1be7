//! The VFS core: inodes, dentries, mounts, open files, path walk and permissions.

pub mod atime;
pub mod cred;
pub(crate) mod dcache;
#[cfg(all(test, any(loom, feature = "shuttle")))]
mod dcache_check;
pub mod dentry;
pub(crate) mod fd_table;
#[cfg(all(test, any(loom, feature = "shuttle")))]
mod fd_table_check;
pub mod file;
pub(crate) mod fs_struct;
pub mod inode;
pub(crate) mod locks;
pub mod mount;
pub mod name;
pub(crate) mod namei;
pub mod notify;
pub mod ops;
pub mod permission;
pub(crate) mod pin;
pub mod poll;
#[cfg(all(test, any(loom, feature = "shuttle")))]
mod poll_check;
pub mod super_block;
pub mod task;
#[cfg(test)]
pub(crate) mod test_fixture;
pub mod time;

pub use cred::{Capabilities, Cred};
pub use dentry::Dentry;
pub use file::{FMode, FileDescription};
pub use inode::{AttrWriter, Attrs, Inode, InodeInit, SetAttr, Stamp, TimeSet};
pub use locks::InterruptHandle;
pub use mount::{MntFlags, Mount, MountNamespace, VfsPath};
// For the benchmarks and tests that compare with the design the lock-free walk replaced.
#[doc(hidden)]
pub use namei::WalkMode;
pub use ops::{
    DirEntry, FileOps, FileSystemType, FsContext, InodeOps, Name, NewInode, SuperOps, WritePos,
};
pub use super_block::SuperBlock;
pub use task::Task;
