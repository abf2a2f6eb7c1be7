//! The columns: the host kernel, uvfs, uvfs "vanilla", and the peers a user would pick instead.

pub mod gvisor;
pub mod host;
pub mod host_notify;
pub mod nonotify;
pub(crate) mod served;
pub mod uvfs;
pub mod uvfs_notify;
pub mod vfs_crate;
