//! `std::fs` for a uvfs tree, and the filesystems built into uvfs.
//!
//! [`Fs`] is the entry point: a view of a tree with credentials, a root and a working
//! directory, with `std::fs`'s functions as methods ([`Fs::read_to_string`],
//! [`Fs::create_dir_all`], [`Fs::read_dir`], ...), [`File`] with `Read`, `Write` and
//! `Seek`, [`OpenOptions`], [`Metadata`], [`Permissions`], and errors that name the
//! operation and the path; [`Fs::watcher`] watches paths with inotify and reads typed
//! [`Event`]s. It is a thin layer over the syscall-shaped calls of
//! [`Task`](crate::Task): every semantic is theirs, checked against Linux.
//!
//! ```
//! use std::io::{BufRead, BufReader, Write};
//! use uvfs::fs::Fs;
//!
//! let fs = Fs::new();
//! fs.create_dir("/logs")?;
//! let mut f = fs.create("/logs/today")?;
//! writeln!(f, "one")?;
//! writeln!(f, "two")?;
//! let lines: Vec<String> = BufReader::new(fs.open("/logs/today")?)
//!     .lines()
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(lines, ["one", "two"]);
//! for entry in fs.read_dir("/logs")? {
//!     let entry = entry?;
//!     assert!(entry.file_type()?.is_file());
//!     assert_eq!(entry.path(), std::path::Path::new("/logs/today"));
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`tmpfs`] is the memory filesystem every [`Vfs`](crate::Vfs) starts with.

pub(crate) mod anon;
mod dir;
pub(crate) mod epoll;
mod error;
pub(crate) mod eventfd;
pub(crate) mod fanotify;
mod file;
mod handle;
pub(crate) mod inotify;
pub mod kernfs;
mod metadata;
pub mod pipefs;
pub(crate) mod pseudo;
pub mod sysfs;
pub mod tmpfs;
mod watch;

pub use dir::{DirEntry, ReadDir};
pub use error::{errno, Error};
pub use fanotify::FanotifyLimits;
pub use file::{File, OpenOptions};
pub use handle::Fs;
pub use inotify::InotifyLimits;
pub use metadata::{FileType, Metadata, Permissions};
pub use watch::{Event, EventMask, WatchDescriptor, WatchMask, Watcher};

pub(crate) use handle::bytes_of as path_bytes;
