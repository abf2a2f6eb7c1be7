//! The fd table against a naive model: a seeded random sequence of `open`, `dup`, `dup2`,
//! `dup3`, `fcntl(F_DUPFD[_CLOEXEC])`, `fcntl(F_GETFD/F_SETFD)`, `close`, `fstat`, exec's
//! close-on-exec pass, `fork` and limit changes, each answer checked against a model that is a
//! plain array of `(file, cloexec)` with POSIX's rules (the lowest free fd; `EBADF`, `EMFILE`,
//! `EINVAL` as Linux's fs/file.c gives them). The fds range over the table's inline slots, its
//! first array and the array's growth. Run twice: a table no other task shares (read under its
//! lock), and one a thread task shares for stretches (read lock-free through the published
//! array), either task making each call.
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

/// `fd`'s file and close-on-exec flag as the task sees them (`None`: not open).
fn seen(t: &Task, fd: i32) -> Option<(u64, bool)> {
    ino(t, fd).ok().map(|i| {
        let c = t.fcntl(fd, FcntlCmd::GetFd).expect("open") != 0;
        (i, c)
    })
}

fn run(seed: u64, shared: bool) -> usize {
    let vfs = Vfs::new();
    let owner = vfs.task(Cred::root());
    // A thread task holding the table makes it shared: `get` then reads the published array.
    let mut sharer = shared.then(|| owner.clone_thread());
    let mut t = owner;
    let mut m = Model {
        fds: Vec::new(),
        limit: 1024,
    };
    let mut rng = Rng(seed | 1);
    let mut files = 0u32;
    let mut checks = 0usize;
    let mut sweeps = 0u64;
    let fd_in = |rng: &mut Rng| rng.below(MAX_FD as u64 + 2) as i32 - 1;
    for step in 0..STEPS {
        // In the shared run, either task makes the call: both see one table.
        let a: &Task = match &sharer {
            Some(s) if rng.below(2) == 0 => s,
            _ => &t,
        };
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
                let got = a.openat(AT_FDCWD, path.as_str(), flags, 0o600);
                let want = m.lowest_free(0).ok_or(Errno::EMFILE);
                assert_eq!(got, want, "{}", ctx("open"));
                if let Ok(fd) = got {
                    let i = ino(a, fd).expect("just opened");
                    m.set(fd, Some((i, cloexec)));
                }
            }
            25..=34 => {
                let fd = fd_in(&mut rng);
                let want = m.dup_from(fd, 0, false);
                assert_eq!(a.dup(fd), want, "{}", ctx("dup"));
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
                assert_eq!(a.fcntl(fd, cmd), want, "{}", ctx("F_DUPFD"));
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
                // Looked up just before (the task may cache it), checked just after.
                let _ = seen(a, new);
                let got = if three {
                    let flags = if cloexec {
                        OpenFlags::CLOEXEC
                    } else {
                        OpenFlags::empty()
                    };
                    a.dup3(old, new, flags)
                } else {
                    a.dup2(old, new)
                };
                assert_eq!(got, want, "{}", ctx("dup2/dup3"));
                assert_eq!(seen(a, new), m.get(new), "{}", ctx("dup2/dup3's new fd"));
                checks += 1;
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
                let _ = seen(a, fd);
                assert_eq!(a.close(fd), want, "{}", ctx("close"));
                assert_eq!(seen(a, fd), None, "{}", ctx("closed fd"));
                checks += 1;
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
                    a.fcntl(fd, FcntlCmd::SetFd(flags)),
                    want,
                    "{}",
                    ctx("F_SETFD")
                );
            }
            85..=86 => {
                // exec's close-on-exec pass (the shared table stays shared: this is the
                // fds' pass only, not an unshare).
                a.exec_close_fds();
                for fd in 0..m.fds.len() as i32 {
                    if m.get(fd).is_some_and(|(_, c)| c) {
                        m.set(fd, None);
                    }
                }
            }
            // A forked task gets a copy: from here on the copy is the table under test (the
            // old one is dropped).
            87 if !shared => t = t.fork(),
            // The thread task ends (the table is the first task's alone again) or a new one
            // starts: what the first task looked up meanwhile or before must not go stale.
            87 => {
                sharer = match sharer {
                    Some(_) => None,
                    None => Some(t.clone_thread()),
                }
            }
            88..=89 => {
                let limit = [8, 40, 70, 100, 1024][rng.below(5) as usize];
                t.set_nofile_limit(limit as u32).expect("below NR_OPEN");
                m.limit = limit;
            }
            _ => {}
        }
        // Every fd's file and flag, as the model says; upwards and downwards in turn, so that
        // what the task looked up last is looked up first next time (a stale lookup is met
        // before another fd's replaces it).
        if step % 16 == 0 || what >= 85 {
            let mut order: Vec<i32> = (-1..=MAX_FD + 1).collect();
            if sweeps % 2 == 1 {
                order.reverse();
            }
            sweeps += 1;
            for fd in order {
                assert_eq!(
                    seen(&t, fd),
                    m.get(fd),
                    "{}",
                    ctx(&format!("fd {fd} after the call"))
                );
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

/// The case the random runs meet rarely: a task looks an fd up, a thread task it starts
/// replaces that fd's file and ends; the first task must see the new file.
#[test]
#[cfg_attr(
    any(loom, feature = "shuttle"),
    ignore = "skipped: uvfs built with loom/shuttle primitives, which work only inside a model"
)]
fn an_fd_replaced_by_a_thread_task_is_seen_replaced() {
    let vfs = Vfs::new();
    let t = vfs.task(Cred::root());
    let open = |t: &Task, path: &str| {
        t.openat(AT_FDCWD, path, OpenFlags::CREAT | OpenFlags::RDWR, 0o600)
            .expect("create")
    };
    let mut checks = 0;
    for fd_wanted in 0..6 {
        for k in 0..=fd_wanted {
            assert_eq!(open(&t, &format!("/a{fd_wanted}-{k}")), k);
        }
        let before = ino(&t, fd_wanted).expect("open");
        let s = t.clone_thread();
        s.close(fd_wanted).expect("open");
        assert_eq!(open(&s, &format!("/b{fd_wanted}")), fd_wanted);
        let after = ino(&s, fd_wanted).expect("open");
        drop(s);
        assert_ne!(before, after);
        assert_eq!(ino(&t, fd_wanted), Ok(after), "fd {fd_wanted}");
        checks += 1;
        for k in 0..=fd_wanted {
            t.close(k).expect("open");
        }
    }
    assert_eq!(checks, 6);
}
