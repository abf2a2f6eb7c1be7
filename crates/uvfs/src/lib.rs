//! uvfs: an embeddable virtual filesystem layer with Linux semantics.
//!
//! A whole filesystem tree inside your process — path walk, dentry and inode caches, mounts,
//! permissions, tmpfs, symlinks, hard links, extended attributes — that behaves as Linux does,
//! down to which errno comes first, and is checked against the host kernel.
//!
//! # Embedding in ten lines
//!
//! [`fs::Fs`] is `std::fs` for a uvfs tree: the same functions as methods, a [`fs::File`]
//! with `Read`, `Write` and `Seek`, errors that name the path.
//!
//! ```
//! use std::io::Write;
//! use uvfs::fs::Fs;
//!
//! let fs = Fs::new(); // an empty tree: a tmpfs root, seen as root
//! fs.create_dir_all("/etc/app")?;
//! fs.write("/etc/app/config.toml", "port = 8080\n")?;
//! let mut log = fs.create("/etc/app/log")?;
//! writeln!(log, "started")?;
//! assert_eq!(fs.read_to_string("/etc/app/config.toml")?, "port = 8080\n");
//! assert_eq!(fs.metadata("/etc/app/log")?.len(), 8);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Tasks and credentials
//!
//! A [`Vfs`] is one mount namespace. Under `uvfs::fs` is the syscall-shaped API: a [`Task`]
//! is one thread of a program using the tree (credentials, root, working directory, umask and
//! an fd table), and its methods are Linux's system calls, taking and returning what they do
//! (`openat` returns an fd, `fstatat` a [`abi::Stat`], errors are [`Errno`]s). Use it when
//! you emulate or sandbox a program that makes system calls, or need a call `uvfs::fs` does
//! not wrap (`renameat2` flags, `openat2`'s resolve flags, `mknodat`, `mount`).
//!
//! ```
//! use uvfs::abi::{OpenFlags, AT_FDCWD};
//! use uvfs::{Cred, Errno, Vfs};
//!
//! let vfs = Vfs::new();
//! let root = vfs.task(Cred::root());
//! root.mkdirat(AT_FDCWD, "/home", 0o755)?;
//! let user = vfs.task(Cred::user(1000, 1000, &[]));
//! let err = user.openat(AT_FDCWD, "/home/f", OpenFlags::CREAT | OpenFlags::WRONLY, 0o644);
//! assert_eq!(err, Err(Errno::EACCES)); // /home is root's, 0755
//! # Ok::<(), Errno>(())
//! ```
//!
//! [`Cred`] holds the ids, groups and capabilities; [`Task::clone_thread`] makes a thread
//! that shares the fd table, root and cwd (`CLONE_FILES | CLONE_FS`), [`Task::fork`] a copy.
//! `Fs::as_user`, `Fs::chroot` and `Fs::with_current_dir` give views of a tree with other
//! credentials, roots and working directories.
//!
//! # fds and `uvfs::fs::File`
//!
//! An fd is an index into one task's table: it means nothing to another task (unless they
//! share the table), and it stays open until closed. A [`fs::File`] holds the open file
//! description itself: it takes no fd, works on any thread, and closes when dropped.
//! [`fs::File::install`] puts one in a task's table when raw calls need it.
//!
//! # Errors
//!
//! Every call returns Linux's errno for Linux's reason, in Linux's order when several apply;
//! each method's `# Errors` lists them. `uvfs::fs` returns `std::io::Error`s whose message
//! names the operation and the path and whose kind is the errno's; [`fs::errno`] gives the
//! errno back. Bad input (names with `/` or NUL, over-long names, bad fds and flags,
//! overflowing offsets) gets the errno Linux returns, never a panic.
//!
//! # Threads
//!
//! [`Vfs`] and [`fs::Fs`] are `Send + Sync`; a [`Task`] is `Send` but used by one thread at a
//! time (make one per thread). A cached path walk takes no lock and writes no shared memory,
//! so threads working on different files do not slow each other down; docs/locking.md lists
//! every lock and every shared written location.
//!
//! # Writing a filesystem
//!
//! tmpfs ([`fs::tmpfs`]) is built from the same parts an outside filesystem uses: a
//! [`vfs::SuperBlock`] with [`vfs::SuperOps`], inodes with [`vfs::InodeOps`], open files with
//! [`vfs::FileOps`], and a [`vfs::FileSystemType`] whose `get_tree` makes an instance. Register
//! the type with [`Vfs::register_filesystem`] and mount it anywhere with [`Task::mount`], as
//! `mount(2)` mounts tmpfs: the same permission checks and errors. The [`vfs::ops`] module
//! says what an implementation guarantees and which errno each operation it leaves out gives;
//! `examples/own_fs.rs` mounts a small read-only filesystem generated from code.
//!
//! # Platform support
//!
//! Linux only (the coarse clock and `sysinfo` come from the host kernel); see the README.
//!
//! # Layout
//!
//! [`abi`] holds the Linux ABI (no logic), [`vfs`] the object model and the path walk,
//! [`fs`] `std::fs`'s shape and the built-in filesystems, [`sys`] the calls. See
//! ARCHITECTURE.md and docs/locking.md.

pub mod abi;
pub mod fs;
pub(crate) mod sync;
pub mod sys;
pub mod tree;
pub mod vfs;
#[cfg(feature = "vfs-crate")]
pub mod vfs_crate;

pub use abi::{Errno, Result};
pub use sys::Vfs;
pub use vfs::{Capabilities, Cred, Task};
