//! uvfs: an embeddable virtual filesystem layer with Linux semantics.
//!
//! Build a [`Vfs`] (a mount namespace with a tmpfs root), make a [`Task`] for each thread that
//! uses it, and call the syscall-shaped methods on the task:
//!
//! ```
//! use uvfs::abi::{OpenFlags, AT_FDCWD};
//! use uvfs::{Cred, Vfs};
//!
//! let vfs = Vfs::new();
//! let task = vfs.task(Cred::root());
//! let fd = task.openat(AT_FDCWD, "/hello", OpenFlags::CREAT | OpenFlags::RDWR, 0o644).unwrap();
//! task.pwrite(fd, b"hi", 0).unwrap();
//! let mut buf = [0u8; 2];
//! assert_eq!(task.pread(fd, &mut buf, 0).unwrap(), 2);
//! task.close(fd).unwrap();
//! ```
//!
//! Layout: [`abi`] holds the Linux ABI (no logic), [`vfs`] the object model and the path walk,
//! [`fs`] the filesystems, [`sys`] the calls. See ARCHITECTURE.md and docs/locking.md.

pub mod abi;
pub mod fs;
pub mod sync;
pub mod sys;
pub mod tree;
pub mod vfs;

pub use abi::{Errno, Result};
pub use sys::Vfs;
pub use vfs::{Capabilities, Cred, Task};
