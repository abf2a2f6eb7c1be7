//! The fd table against a naive model: a seeded random sequence of `open`, `dup`, `dup2`,
//! `dup3`, `fcntl(F_DUPFD[_CLOEXEC])`, `fcntl(F_GETFD/F_SETFD)`, `close`, `fstat`, exec's
//! close-on-exec pass, `fork` and limit changes, each answer checked against a model that is a
//! plain array of `(file, cloexec)` with POSIX's rules (the lowest free fd; `EBADF`, `EMFILE`,
//! `EINVAL` as Linux's fs/file.c gives them). The fds range over the table's inline slots, its
//! first array and the array's growth. Run twice: a table no other task shares (read under its
//! lock) and one shared with a thread task (read lock-free through the published array).
//! Seed: `UVFS_STRESS_SEED`.

use uvfs::abi::{Errno, FcntlCmd, FdFlags, OpenFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

/// Fds the sequence keeps below (past the table's first array of 64).
const MAX_FD: i32 = 90;
/// Calls per run.
const STEPS: usize = 20_000;

/// xorshift64*: a deterministic sequence per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The model: per fd, the inode number of its file and its close-on-exec flag.
#[derive(Clone)]
struct Model {
    fds: Vec<Option<(u64, bool)>>,
    limit: i32,
}

impl Model {
    fn lowest_free(&self, min: i32) -> Option<i32> {
        (min..self.limit).find(|&fd| self.get(fd).is_none())
    }
    fn get(&self, fd: i32) -> Option<(u64, bool)> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.fds.get(i).copied().flatten())
    }
    fn set(&mut self, fd: i32, v: Option<(u64, bool)>) {
        let i = fd as usize;
        if self.fds.len() <= i {
            self.fds.resize(i + 1, None);
        }
        self.fds[i] = v;
    }
    /// `F_DUPFD`-style: the lowest free fd `>= min`.
    fn dup_from(&mut self, fd: i32, min: i32, cloexec: bool) -> Result<i32, Errno> {
        let (ino, _) = self.get(fd).ok_or(Errno::EBADF)?;
        if min >= self.limit {
            return Err(Errno::EINVAL);
        }
        let new = self.lowest_free(min).ok_or(Errno::EMFILE)?;
        self.set(new, Some((ino, cloexec)));
        Ok(new)
    }
}

/// The inode of the file at `fd`, or the errno.
fn ino(t: &Task, fd: i32) -> Result<u64, Errno> {
    t.fstat(fd).map(|st| st.ino)
}

fn run(seed: u64, shared: bool) -> usize {
    let vfs = Vfs::new();
    let owner = vfs.task(Cred::root());
    // A thread task holding the table makes it shared: `get` then reads the published array.
    let sharer = shared.then(|| owner.clone_thread());
    let mut t = owner;
    let mut m = Model {
        fds: Vec::new(),
        limit: 1024,
    };
    let mut rng = Rng(seed | 1);
    let mut files = 0u32;
    let mut checks = 0usize;
    let fd_in = |rng: &mut Rng| rng.below(MAX_FD as u64 + 2) as i32 - 1;
    for step in 0..STEPS {
        let what = rng.below(100);
        let ctx = |op: &str| format!("seed {seed} shared {shared} step {step}: {op}");
        match what {
            // Open a new file (a new inode); stop growing near MAX_FD.
            0..=24 => {
                if m.lowest_free(0).is_some_and(|fd| fd >= MAX_FD) {
                    continue;
                }
                files += 1;
                let path = format!("/f{files}");
                let cloexec = rng.below(4) == 0;
                let mut flags = OpenFlags::CREAT | OpenFlags::RDWR;
                if cloexec {
                    flags |= OpenFlags::CLOEXEC;
                }
                let got = t.openat(AT_FDCWD, path.as_str(), flags, 0o600);
                let want = m.lowest_free(0).ok_or(Errno::EMFILE);
                assert_eq!(got, want, "{}", ctx("open"));
                if let Ok(fd) = got {
                    let i = ino(&t, fd).expect("just opened");
                    m.set(fd, Some((i, cloexec)));
                }
            }
            25..=34 => {
                let fd = fd_in(&mut rng);
                let want = m.dup_from(fd, 0, false);
                assert_eq!(t.dup(fd), want, "{}", ctx("dup"));
            }
            35..=44 => {
                let (fd, min) = (fd_in(&mut rng), fd_in(&mut rng).max(0));
                let cloexec = rng.below(2) == 0;
                let cmd = if cloexec {
                    FcntlCmd::DupFdCloexec(min)
                } else {
                    FcntlCmd::DupFd(min)
                };
                let want = m.dup_from(fd, min, cloexec);
                assert_eq!(t.fcntl(fd, cmd), want, "{}", ctx("F_DUPFD"));
            }
            45..=54 => {
                let (old, new) = (fd_in(&mut rng), fd_in(&mut rng));
                let cloexec = rng.below(2) == 0;
                let three = rng.below(2) == 0;
                // Linux's order (fs/file.c): dup3 refuses equal fds first; dup2 of an fd
                // onto itself checks only that it is open; then the new fd's range, then the
                // old fd.
                let want = match m.get(old) {
                    _ if three && old == new => Err(Errno::EINVAL),
                    Some(_) if old == new => Ok(new),
                    _ if new < 0 || new >= m.limit => Err(Errno::EBADF),
                    None => Err(Errno::EBADF),
                    Some((i, _)) => {
                        m.set(new, Some((i, three && cloexec)));
                        Ok(new)
                    }
                };
                let got = if three {
                    let flags = if cloexec {
                        OpenFlags::CLOEXEC
                    } else {
                        OpenFlags::empty()
                    };
                    t.dup3(old, new, flags)
                } else {
                    t.dup2(old, new)
                };
                assert_eq!(got, want, "{}", ctx("dup2/dup3"));
            }
            55..=79 => {
                let fd = fd_in(&mut rng);
                let want = match m.get(fd) {
                    Some(_) => {
                        m.set(fd, None);
                        Ok(())
                    }
                    None => Err(Errno::EBADF),
                };
                assert_eq!(t.close(fd), want, "{}", ctx("close"));
            }
            80..=84 => {
                let fd = fd_in(&mut rng);
                let on = rng.below(2) == 0;
                let flags = if on {
                    FdFlags::CLOEXEC
                } else {
                    FdFlags::empty()
                };
                let want = match m.get(fd) {
                    Some((i, _)) => {
                        m.set(fd, Some((i, on)));
                        Ok(0)
                    }
                    None => Err(Errno::EBADF),
                };
                assert_eq!(
                    t.fcntl(fd, FcntlCmd::SetFd(flags)),
                    want,
                    "{}",
                    ctx("F_SETFD")
                );
            }
            85..=86 => {
                // exec's close-on-exec pass (the shared table stays shared: this is the
                // fds' pass only, not an unshare).
                t.exec_close_fds();
                for fd in 0..m.fds.len() as i32 {
                    if m.get(fd).is_some_and(|(_, c)| c) {
                        m.set(fd, None);
                    }
                }
            }
            // A forked task gets a copy: from here on the copy is the table under test (the
            // old one is dropped). Not in the shared run, whose table must stay shared.
            87 if !shared => t = t.fork(),
            88..=89 => {
                let limit = [8, 40, 70, 100, 1024][rng.below(5) as usize];
                t.set_nofile_limit(limit as u32).expect("below NR_OPEN");
                m.limit = limit;
            }
            _ => {}
        }
        // Every fd's file and flag, as the model says.
        if step % 16 == 0 || what >= 85 {
            for fd in -1..=MAX_FD + 1 {
                let want = m.get(fd);
                let got = ino(&t, fd).ok().map(|i| {
                    let c = t.fcntl(fd, FcntlCmd::GetFd).expect("open") != 0;
                    (i, c)
                });
                assert_eq!(got, want, "{}", ctx(&format!("fd {fd} after the call")));
                checks += 1;
            }
        }
    }
    drop(sharer);
    checks
}

fn seed() -> u64 {
    std::env::var("UVFS_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_f00d)
}

#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn fds_follow_the_model_in_a_table_of_its_own() {
    let checks = run(seed(), false);
    assert!(checks > 100_000, "only {checks} checks");
}

#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn fds_follow_the_model_in_a_shared_table() {
    let checks = run(seed().wrapping_add(1), true);
    assert!(checks > 100_000, "only {checks} checks");
}
