//! The columns: the host kernel, uvfs, uvfs "vanilla", and the peers a user would pick instead.

pub mod gvisor;
pub mod host;
pub mod uvfs;
pub mod vfs_crate;
