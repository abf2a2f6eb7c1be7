//! Filesystems built into uvfs.

pub mod tmpfs;
