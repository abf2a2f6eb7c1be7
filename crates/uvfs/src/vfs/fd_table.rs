//! The file descriptor table. Linux: `struct files_struct`, fs/file.c.

use std::sync::Arc;

use parking_lot::Mutex;

use super::file::FileDescription;
use crate::abi::{Errno, Result, DEFAULT_NOFILE};

/// Hard ceiling of the per-table limit (Linux: `fs.nr_open` default).
pub const NR_OPEN: u32 = 1 << 20;

#[derive(Clone)]
struct Entry {
    file: Arc<FileDescription>,
    cloexec: bool,
}

struct Inner {
    slots: Vec<Option<Entry>>,
    /// Lowest index that may be free.
    first_free: usize,
    limit: u32,
}

/// A table of open fds, shared by tasks cloned with shared files. Aligned to a cache-line
/// pair so that two tasks' tables never share a line (tables made one after the other by
/// one thread sit side by side in the allocator).
#[repr(align(128))]
pub struct FdTable {
    /// Protects: every slot, the limit.
    /// Order: innermost except for dropping closed files, which happens after release.
    inner: Mutex<Inner>,
}

impl Default for FdTable {
    fn default() -> Self {
        FdTable {
            inner: Mutex::new(Inner {
                slots: Vec::new(),
                first_free: 0,
                limit: DEFAULT_NOFILE,
            }),
        }
    }
}

impl FdTable {
    /// An empty table with the default limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// The file at `fd`.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn get(&self, fd: i32) -> Result<Arc<FileDescription>> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let g = self.inner.lock();
        match g.slots.get(i) {
            Some(Some(e)) => Ok(e.file.clone()),
            _ => Err(Errno::EBADF),
        }
    }

    /// Installs `file` at the lowest free fd `>= min`.
    ///
    /// # Errors
    /// `EMFILE` when no fd below the limit is free; `EINVAL` if `min` is at or past the limit.
    pub fn install(&self, file: Arc<FileDescription>, cloexec: bool, min: i32) -> Result<i32> {
        let mut g = self.inner.lock();
        let min = usize::try_from(min).map_err(|_| Errno::EINVAL)?;
        let limit = g.limit as usize;
        if min >= limit {
            return Err(if min == 0 {
                Errno::EMFILE
            } else {
                Errno::EINVAL
            });
        }
        let start = min.max(g.first_free);
        let mut i = start;
        while i < g.slots.len() && g.slots[i].is_some() {
            i += 1;
        }
        if i >= limit {
            return Err(Errno::EMFILE);
        }
        if i >= g.slots.len() {
            g.slots.resize(i + 1, None);
        }
        g.slots[i] = Some(Entry { file, cloexec });
        if start == g.first_free {
            g.first_free = i + 1;
        }
        Ok(i as i32)
    }

    /// Installs `file` at exactly `fd`, returning what was there (`dup2`/`dup3`).
    ///
    /// # Errors
    /// `EBADF` if `fd` is negative or at/past the limit.
    pub fn install_at(
        &self,
        fd: i32,
        file: Arc<FileDescription>,
        cloexec: bool,
    ) -> Result<Option<Arc<FileDescription>>> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.inner.lock();
        if i >= g.limit as usize {
            return Err(Errno::EBADF);
        }
        if i >= g.slots.len() {
            g.slots.resize(i + 1, None);
        }
        let old = g.slots[i].replace(Entry { file, cloexec });
        Ok(old.map(|e| e.file))
    }

    /// Removes `fd`, returning its file (dropped by the caller after the lock is released).
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn remove(&self, fd: i32) -> Result<Arc<FileDescription>> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.inner.lock();
        let e = g
            .slots
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(Errno::EBADF)?;
        if i < g.first_free {
            g.first_free = i;
        }
        Ok(e.file)
    }

    /// The `FD_CLOEXEC` flag of `fd`.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn cloexec(&self, fd: i32) -> Result<bool> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let g = self.inner.lock();
        match g.slots.get(i) {
            Some(Some(e)) => Ok(e.cloexec),
            _ => Err(Errno::EBADF),
        }
    }

    /// Sets the `FD_CLOEXEC` flag of `fd`.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open.
    pub fn set_cloexec(&self, fd: i32, on: bool) -> Result<()> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut g = self.inner.lock();
        match g.slots.get_mut(i) {
            Some(Some(e)) => {
                e.cloexec = on;
                Ok(())
            }
            _ => Err(Errno::EBADF),
        }
    }

    /// True if some fd below the limit is free (open reserves one before it walks).
    pub fn has_free(&self) -> bool {
        let g = self.inner.lock();
        let limit = g.limit as usize;
        let mut i = g.first_free;
        while i < g.slots.len() && g.slots[i].is_some() {
            i += 1;
        }
        i < limit
    }

    /// The open-file limit (Linux: `RLIMIT_NOFILE`).
    pub fn limit(&self) -> u32 {
        self.inner.lock().limit
    }

    /// Sets the open-file limit; fds at or past it stay open, as with `setrlimit`.
    ///
    /// # Errors
    /// `EPERM` past [`NR_OPEN`].
    pub fn set_limit(&self, limit: u32) -> Result<()> {
        if limit > NR_OPEN {
            return Err(Errno::EPERM);
        }
        self.inner.lock().limit = limit;
        Ok(())
    }

    /// Removes every close-on-exec fd (exec), returning the files to drop.
    pub fn close_on_exec(&self) -> Vec<Arc<FileDescription>> {
        let mut g = self.inner.lock();
        let mut out = Vec::new();
        for (i, s) in g.slots.iter_mut().enumerate() {
            if s.as_ref().is_some_and(|e| e.cloexec) {
                out.extend(s.take().map(|e| e.file));
                let _ = i;
            }
        }
        g.first_free = 0;
        out
    }

    /// A copy of the table (fork without shared files).
    pub fn duplicate(&self) -> FdTable {
        let g = self.inner.lock();
        FdTable {
            inner: Mutex::new(Inner {
                slots: g.slots.clone(),
                first_free: 0,
                limit: g.limit,
            }),
        }
    }
}
