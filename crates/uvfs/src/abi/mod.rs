//! The Linux ABI: error numbers, flag sets, limits and the structures calls return. No logic.

pub mod dirent;
pub mod errno;
pub mod fanotify;
pub mod flags;
pub mod inotify;
pub mod limits;
pub mod lock;
pub mod mode;
pub mod poll;
pub mod stat;
pub mod statmount;

pub use dirent::Dirent;
pub use errno::{Errno, Result};
pub use fanotify::*;
pub use flags::*;
pub use inotify::*;
pub use limits::*;
pub use lock::*;
pub use mode::*;
pub use poll::*;
pub use stat::*;
pub use statmount::{MountAttr, Statmount, StatmountMask};
