//! kernfs and sysfs through the public `Task` API: a tree built with `uvfs::fs::kernfs` or
//! `uvfs::fs::sysfs`, mounted, and driven by system calls. Each test names its oracle: the
//! host's sysfs where it can show the same thing (this machine's Linux 6.18 `/sys`, read live
//! and compared, or "skipped: why" printed when it lacks the file), otherwise the Linux
//! function whose behaviour is pinned.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uvfs::abi::*;
use uvfs::fs::kernfs::{show, show_store, BinAttribute, DirOps, Kernfs, KernfsNode};
use uvfs::fs::sysfs::Sysfs;
use uvfs::{Cred, Errno, Task, Vfs};

/// A tree registered under `name` and mounted at `/k` of a fresh tmpfs root.
fn mounted(tree: &Kernfs) -> (Vfs, Task) {
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/k", 0o755).expect("mkdir /k");
    tree.mount(&task, "/k").expect("mount");
    (vfs, task)
}

fn open(task: &Task, path: &str, flags: OpenFlags) -> i32 {
    task.openat(AT_FDCWD, path, flags, 0)
        .unwrap_or_else(|e| panic!("open {path}: {e:?}"))
}

/// Everything `fd` reads from its offset on, in reads of `chunk` bytes.
fn read_rest(task: &Task, fd: i32, chunk: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        let n = task.read(fd, &mut buf).expect("read");
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

fn read_file(task: &Task, path: &str) -> Vec<u8> {
    let fd = open(task, path, OpenFlags::RDONLY);
    let out = read_rest(task, fd, 4096);
    task.close(fd).expect("close");
    out
}

/// The entries of the directory `path` as one `getdents64` pass at a time of `buf_len`
/// bytes gives them: (name, position after it, `d_type`), `.` and `..` included.
fn listing(task: &Task, path: &str, buf_len: usize) -> Vec<(String, i64, u8)> {
    let fd = open(task, path, OpenFlags::RDONLY | OpenFlags::DIRECTORY);
    let mut buf = vec![0u8; buf_len];
    let mut out = Vec::new();
    loop {
        let n = task.getdents64(fd, &mut buf).expect("getdents64");
        if n == 0 {
            break;
        }
        out.extend(
            Dirent::parse(&buf[..n])
                .into_iter()
                .map(|d| (String::from_utf8(d.name).expect("utf-8"), d.off, d.d_type)),
        );
    }
    task.close(fd).expect("close");
    out
}

/// The host's listing of `path` as `getdents64` gives it (rustix reads it with that call):
/// (name, position after it, `d_type`), or `None` if the host has no such directory.
fn host_listing(path: &str) -> Option<Vec<(String, i64, u8)>> {
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let dir = rustix::fs::Dir::new(fd).ok()?;
    let mut out = Vec::new();
    for e in dir {
        let e = e.ok()?;
        let d_type = match e.file_type() {
            rustix::fs::FileType::Directory => FileType::Directory.dirent_type(),
            rustix::fs::FileType::RegularFile => FileType::Regular.dirent_type(),
            rustix::fs::FileType::Symlink => FileType::Symlink.dirent_type(),
            _ => 0,
        };
        out.push((
            e.file_name().to_string_lossy().into_owned(),
            e.offset(),
            d_type,
        ));
    }
    Some(out)
}

fn skipped(test: &str, why: &str) {
    println!("skipped 1 check of {test}: {why}");
}

const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFLNK: u32 = 0o120_000;

const TOPOLOGY: &str = "/sys/devices/system/cpu/cpu0/topology";

/// Oracle: the host's sysfs. `getdents64` of `devices/system/cpu/cpu0/topology` gives the
/// host's names in the host's order with the host's positions (`d_off`, Linux's
/// `kernfs_name_hash()`) and types, read in one call or one entry per call; a directory the
/// host lacks is compared with the order Linux 6.18 gave on the machine this was written on.
#[test]
fn getdents_lists_a_directory_as_the_hosts_sysfs_does() {
    let sysfs = Sysfs::with_cpu_topology();
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/sys", 0o555).expect("mkdir");
    sysfs.mount(&task, "/sys").expect("mount");
    let ours = listing(&task, TOPOLOGY, 4096);
    let one_by_one = listing(&task, TOPOLOGY, Dirent::reclen(NAME_MAX));
    assert_eq!(ours, one_by_one, "a listing resumed at each position");
    match host_listing(TOPOLOGY) {
        Some(host) => assert_eq!(ours, host, "the host's listing"),
        None => {
            skipped(
                "getdents_lists_a_directory_as_the_hosts_sysfs_does",
                "the host has no /sys/devices/system/cpu/cpu0/topology",
            );
            let names: Vec<&str> = ours.iter().map(|e| e.0.as_str()).collect();
            assert_eq!(
                names,
                [
                    ".",
                    "..",
                    "physical_package_id",
                    "thread_siblings_list",
                    "core_id"
                ]
            );
        }
    }
    // The last position is the end (Linux: `INT_MAX`), and the first two are `.` and `..`.
    assert_eq!(ours.last().map(|e| e.1), Some(i64::from(i32::MAX)));
    assert_eq!((ours[0].0.as_str(), ours[0].1), (".", 1));
    assert_eq!(ours[1].0, "..");
}

/// Oracle: the host's sysfs (`readlink /sys/devices/system/cpu/cpu0/subsystem` is
/// `../../../../bus/cpu`, `/sys/bus/cpu/devices/cpu0` is
/// `../../../devices/system/cpu/cpu0`), and Linux's `kernfs_get_target_path()` for the
/// cases the host was not asked about (a sibling, an ancestor; not the root, for which
/// Linux's function has no answer).
#[test]
fn a_link_reads_as_the_relative_path_linux_gives() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let root = tree.root();
    let cpu0 = root
        .create_dir("devices", 0o755)
        .and_then(|d| d.create_dir("system", 0o755))
        .and_then(|d| d.create_dir("cpu", 0o755))
        .and_then(|d| d.create_dir("cpu0", 0o755))
        .expect("cpu0");
    let bus_cpu = root
        .create_dir("bus", 0o755)
        .and_then(|d| d.create_dir("cpu", 0o755))
        .expect("bus/cpu");
    let devices = bus_cpu
        .create_dir("devices", 0o755)
        .expect("bus/cpu/devices");
    cpu0.create_link("subsystem", &bus_cpu).expect("link");
    devices.create_link("cpu0", &cpu0).expect("link");
    let id = cpu0
        .create_file("online", 0o644, show(|o| o.extend_from_slice(b"1\n")))
        .expect("file");
    cpu0.create_link("sibling", &id).expect("link to a sibling");
    cpu0.create_link("up", &bus_cpu.find("devices").expect("found"))
        .expect("link");
    let bus = root.find("bus").expect("bus");
    devices
        .create_link("bus", &bus)
        .expect("link to an ancestor");
    let (_vfs, task) = mounted(&tree);
    let readlink = |p: &str| {
        let mut buf = [0u8; 256];
        let n = task.readlinkat(AT_FDCWD, p, &mut buf).expect("readlink");
        String::from_utf8(buf[..n].to_vec()).expect("utf-8")
    };
    let cases = [
        (
            "/k/devices/system/cpu/cpu0/subsystem",
            "/sys/devices/system/cpu/cpu0/subsystem",
            "../../../../bus/cpu",
        ),
        (
            "/k/bus/cpu/devices/cpu0",
            "/sys/bus/cpu/devices/cpu0",
            "../../../devices/system/cpu/cpu0",
        ),
    ];
    for (ours, host, expected) in cases {
        assert_eq!(readlink(ours), expected, "{ours}");
        match std::fs::read_link(host) {
            Ok(h) => assert_eq!(h.to_str(), Some(expected), "the host's {host}"),
            Err(e) => skipped(
                "a_link_reads_as_the_relative_path_linux_gives",
                &format!("{host}: {e}"),
            ),
        }
    }
    assert_eq!(readlink("/k/devices/system/cpu/cpu0/sibling"), "online");
    assert_eq!(
        readlink("/k/devices/system/cpu/cpu0/up"),
        "../../../../bus/cpu/devices"
    );
    assert_eq!(readlink("/k/bus/cpu/devices/bus"), "../../../bus");
    // Links are followed: the file through its link is the file.
    assert_eq!(
        read_file(&task, "/k/bus/cpu/devices/cpu0/sibling"),
        b"1\n".to_vec()
    );
    let through = task
        .fstatat(
            AT_FDCWD,
            "/k/devices/system/cpu/cpu0/subsystem",
            AtFlags::empty(),
        )
        .expect("stat");
    assert_eq!(through.ino, bus_cpu.inode().ino());
    let link = task
        .fstatat(
            AT_FDCWD,
            "/k/devices/system/cpu/cpu0/subsystem",
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .expect("lstat");
    assert_eq!(link.mode, S_IFLNK | 0o777);
}

/// A binary attribute over a fixed array, recording what it was given.
struct Blob {
    data: Mutex<Vec<u8>>,
    writes: Mutex<Vec<(Vec<u8>, u64)>>,
}

impl BinAttribute for Blob {
    fn size(&self) -> u64 {
        self.data.lock().expect("blob").len() as u64
    }
    fn read(&self, buf: &mut [u8], pos: u64) -> uvfs::abi::Result<usize> {
        let data = self.data.lock().expect("blob");
        let at = pos as usize;
        let n = buf.len().min(data.len().saturating_sub(at));
        buf[..n].copy_from_slice(&data[at..at + n]);
        Ok(n)
    }
    fn write(&self, src: &[u8], pos: u64) -> uvfs::abi::Result<usize> {
        self.writes.lock().expect("blob").push((src.to_vec(), pos));
        let mut data = self.data.lock().expect("blob");
        let at = pos as usize;
        data[at..at + src.len()].copy_from_slice(src);
        Ok(src.len())
    }
    fn can_write(&self) -> bool {
        true
    }
}

/// Oracle: Linux's `sysfs_kf_bin_read()` and `sysfs_kf_bin_write()`: `stat` shows the size;
/// reads stop at it; a write is cut at it, and one at or past it fails with `EFBIG`.
#[test]
fn a_binary_attribute_reads_at_offsets_and_refuses_writes_past_its_size() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let blob = Arc::new(Blob {
        data: Mutex::new(b"0123456789".to_vec()),
        writes: Mutex::new(Vec::new()),
    });
    tree.root()
        .create_bin("blob", 0o600, blob.clone())
        .expect("bin");
    let (_vfs, task) = mounted(&tree);
    let st = task
        .fstatat(AT_FDCWD, "/k/blob", AtFlags::empty())
        .expect("stat");
    assert_eq!((st.size, st.mode), (10, S_IFREG | 0o600));
    let fd = open(&task, "/k/blob", OpenFlags::RDWR);
    let mut buf = [0u8; 16];
    assert_eq!(task.pread(fd, &mut buf[..4], 3), Ok(4));
    assert_eq!(&buf[..4], b"3456");
    assert_eq!(task.pread(fd, &mut buf, 8), Ok(2));
    assert_eq!(&buf[..2], b"89");
    assert_eq!(task.pread(fd, &mut buf, 10), Ok(0));
    assert_eq!(task.pread(fd, &mut buf, 1000), Ok(0));
    assert_eq!(task.pwrite(fd, b"x", 10), Err(Errno::EFBIG));
    assert_eq!(task.pwrite(fd, b"x", 11), Err(Errno::EFBIG));
    assert_eq!(task.pwrite(fd, b"abc", 8), Ok(2), "cut at the size");
    assert_eq!(
        *blob.writes.lock().expect("blob"),
        vec![(b"ab".to_vec(), 8)]
    );
    assert_eq!(task.lseek(fd, 0, Whence::SET), Ok(0));
    assert_eq!(read_rest(&task, fd, 3), b"01234567ab".to_vec());
    assert_eq!(
        task.lseek(fd, 0, Whence::END),
        Ok(10),
        "the end is the size"
    );
    task.close(fd).expect("close");
}

/// Oracle: Linux's `kernfs_fop_write_iter()`: `store` gets the bytes of one write, at most a
/// page of them (the write returns what `store` used), and its error is the write's.
#[test]
fn a_write_calls_store_with_the_bytes_up_to_a_page() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let stored: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let s = stored.clone();
    tree.root()
        .create_file(
            "rw",
            0o644,
            show_store(
                |o| o.extend_from_slice(b"v\n"),
                move |data| {
                    if data == b"bad" {
                        return Err(Errno::EINVAL);
                    }
                    s.lock().expect("stored").push(data.to_vec());
                    Ok(data.len())
                },
            ),
        )
        .expect("file");
    let (_vfs, task) = mounted(&tree);
    let fd = open(&task, "/k/rw", OpenFlags::WRONLY);
    assert_eq!(task.write(fd, b"hello\n"), Ok(6));
    assert_eq!(task.write(fd, &[b'x'; 5000]), Ok(4096));
    assert_eq!(task.write(fd, b"bad"), Err(Errno::EINVAL));
    task.close(fd).expect("close");
    let got = stored.lock().expect("stored").clone();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], b"hello\n");
    assert_eq!(got[1], vec![b'x'; 4096]);
}

/// Oracle: the host's sysfs for an attribute's size (a page) and `lseek` (`SEEK_END` is the
/// page, `SEEK_SET` anywhere), and for `EACCES` on a write open of a read-only attribute
/// (as root: the mode is checked by kernfs's open, not only by the permission check).
#[test]
fn an_attribute_seeks_and_stats_as_the_hosts_sysfs_attribute() {
    let sysfs = Sysfs::with_cpu_topology();
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/sys", 0o555).expect("mkdir");
    sysfs.mount(&task, "/sys").expect("mount");
    let path = format!("{TOPOLOGY}/core_id");
    let fd = open(&task, &path, OpenFlags::RDONLY);
    let ours = (
        task.fstat(fd).expect("fstat").size,
        task.lseek(fd, 0, Whence::END).expect("SEEK_END"),
        task.lseek(fd, 3, Whence::SET).expect("SEEK_SET"),
        task.lseek(fd, -1, Whence::SET).err(),
        task.openat(AT_FDCWD, &path, OpenFlags::WRONLY, 0).err(),
    );
    task.close(fd).expect("close");
    match std::fs::File::open(&path) {
        Ok(mut f) => {
            use std::io::Seek;
            let size = f.metadata().expect("host stat").len() as i64;
            let end = f.seek(std::io::SeekFrom::End(0)).expect("host seek") as i64;
            let set = f.seek(std::io::SeekFrom::Start(3)).expect("host seek") as i64;
            let neg = f
                .seek(std::io::SeekFrom::Current(-10))
                .err()
                .and_then(|e| e.raw_os_error());
            assert_eq!((ours.0, ours.1, ours.2), (size, end, set), "the host's");
            assert_eq!(ours.3.map(|e| e.raw()), neg, "the host's negative seek");
            if rustix::process::geteuid().is_root() {
                let w = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .err()
                    .and_then(|e| e.raw_os_error());
                assert_eq!(ours.4.map(|e| e.raw()), w, "the host's write open");
            } else {
                skipped(
                    "an_attribute_seeks_and_stats_as_the_hosts_sysfs_attribute",
                    "not root",
                );
            }
        }
        Err(e) => skipped(
            "an_attribute_seeks_and_stats_as_the_hosts_sysfs_attribute",
            &format!("{path}: {e}"),
        ),
    }
    assert_eq!(
        ours,
        (4096, 4096, 3, Some(Errno::EINVAL), Some(Errno::EACCES))
    );
}

/// Oracle: Linux's `kernfs_generic_poll()` (no `POLLPRI` until `sysfs_notify()`, then
/// `POLLERR | POLLPRI` beside the default mask until the file is read again from 0), with
/// `poll` and `epoll` (which reports what was asked for plus `EPOLLERR`).
#[test]
fn poll_and_epoll_see_a_notified_change_until_it_is_read_again() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let value = Arc::new(AtomicUsize::new(1));
    let v = value.clone();
    let attr = tree
        .root()
        .create_file(
            "state",
            0o444,
            show(move |o| {
                o.extend_from_slice(format!("{}\n", v.load(Ordering::SeqCst)).as_bytes())
            }),
        )
        .expect("file");
    let (_vfs, task) = mounted(&tree);
    let fd = open(&task, "/k/state", OpenFlags::RDONLY);
    assert_eq!(read_rest(&task, fd, 64), b"1\n");
    let poll_pri = move |task: &Task, timeout: Option<Duration>| {
        let mut fds = [PollFd::new(fd, PollEvents::PRI)];
        let n = task.poll(&mut fds, timeout).expect("poll");
        (n, fds[0].revents)
    };
    assert_eq!(
        poll_pri(&task, Some(Duration::ZERO)),
        (0, PollEvents::empty())
    );
    let mut fds = [PollFd::new(fd, PollEvents::IN)];
    assert_eq!(task.poll(&mut fds, Some(Duration::ZERO)), Ok(1));
    assert_eq!(fds[0].revents, PollEvents::IN, "the default mask");
    let ep = task.epoll_create1(0).expect("epoll");
    task.epoll_ctl(
        ep,
        EpollOp::Add,
        fd,
        Some(EpollEvent::new(PollEvents::PRI, 7)),
    )
    .expect("epoll_ctl");
    let mut out = [EpollEvent::new(PollEvents::empty(), 0); 4];
    assert_eq!(task.epoll_wait(ep, &mut out, Some(Duration::ZERO)), Ok(0));

    // A poller blocked on the file wakes for the notification.
    value.store(2, Ordering::SeqCst);
    let poller = {
        let task = task.clone_thread();
        std::thread::spawn(move || {
            let start = Instant::now();
            let got = poll_pri(&task, Some(Duration::from_secs(20)));
            (got, start.elapsed())
        })
    };
    attr.notify();
    let (got, took) = poller.join().expect("the poller panicked");
    assert_eq!(got, (1, PollEvents::PRI | PollEvents::ERR));
    assert!(took < Duration::from_secs(20), "woken, not timed out");
    // Still reported until the file is read again from 0, also by epoll.
    assert_eq!(
        poll_pri(&task, Some(Duration::ZERO)),
        (1, PollEvents::PRI | PollEvents::ERR)
    );
    assert_eq!(task.epoll_wait(ep, &mut out, Some(Duration::ZERO)), Ok(1));
    assert_eq!(
        out[0],
        EpollEvent::new(PollEvents::PRI | PollEvents::ERR, 7)
    );
    let mut buf = [0u8; 8];
    assert_eq!(task.pread(fd, &mut buf, 0), Ok(2));
    assert_eq!(&buf[..2], b"2\n", "the read shows the new value");
    assert_eq!(
        poll_pri(&task, Some(Duration::ZERO)),
        (0, PollEvents::empty())
    );
    assert_eq!(task.epoll_wait(ep, &mut out, Some(Duration::ZERO)), Ok(0));
    // A second open made before the notification sees it too, and so does one opened after
    // it until its first read: an open file's count starts at 0, an open node's at 1 (Linux:
    // `kernfs_get_open_node()`; the host shows it, case
    // sysfs_a_fresh_open_polls_pri_and_err_until_read).
    let fd2 = open(&task, "/k/state", OpenFlags::RDONLY);
    attr.notify();
    let fd3 = open(&task, "/k/state", OpenFlags::RDONLY);
    let mut fds = [
        PollFd::new(fd, PollEvents::PRI),
        PollFd::new(fd2, PollEvents::PRI),
        PollFd::new(fd3, PollEvents::PRI),
    ];
    assert_eq!(task.poll(&mut fds, Some(Duration::ZERO)), Ok(3));
    assert_eq!(task.pread(fd3, &mut buf, 0), Ok(2));
    fds[2].revents = PollEvents::empty();
    assert_eq!(task.poll(&mut fds[2..], Some(Duration::ZERO)), Ok(0));
    for f in [fd, fd2, fd3, ep] {
        task.close(f).expect("close");
    }
}

fn inotify_events(task: &Task, fd: i32) -> Vec<(i32, u32, String)> {
    let mut buf = vec![0u8; 4096];
    match task.read(fd, &mut buf) {
        Ok(n) => InotifyEvent::parse_all(&buf[..n])
            .into_iter()
            .map(|e| (e.wd, e.mask, String::from_utf8_lossy(&e.name).into_owned()))
            .collect(),
        Err(Errno::EAGAIN) => Vec::new(),
        Err(e) => panic!("inotify read: {e:?}"),
    }
}

/// Oracle: Linux's `kernfs_notify()` (`fsnotify_modify` shaped: `IN_MODIFY` to watchers of
/// the file, and with the name to watchers of its directory), in the order a write to a
/// tmpfs file watched both ways gives them (the directory's first, as Linux's
/// `fsnotify_handle_event()` delivers them; pinned against the host by
/// cases/inotify.cases), which this test checks on the same task.
#[test]
fn notify_sends_in_modify_to_the_file_and_its_directory_watchers() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let dir = tree.root().create_dir("dev", 0o755).expect("dir");
    let attr = dir
        .create_file("uevent", 0o644, show(|o| o.push(b'\n')))
        .expect("file");
    let (_vfs, task) = mounted(&tree);
    let ino = task.inotify_init1(IN_NONBLOCK).expect("inotify");
    let on_file = task
        .inotify_add_watch(ino, "/k/dev/uevent", IN_MODIFY)
        .expect("watch the file");
    let on_dir = task
        .inotify_add_watch(ino, "/k/dev", IN_MODIFY)
        .expect("watch the directory");
    attr.notify();
    let kernfs_events = inotify_events(&task, ino);
    assert_eq!(
        kernfs_events,
        [
            (on_dir, IN_MODIFY, "uevent".to_string()),
            (on_file, IN_MODIFY, String::new())
        ]
    );
    assert!(
        inotify_events(&task, ino).is_empty(),
        "one notify, one event each"
    );

    // The same watches on a tmpfs file that is written.
    task.mkdirat(AT_FDCWD, "/t", 0o755).expect("mkdir");
    let f = task
        .openat(
            AT_FDCWD,
            "/t/uevent",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o644,
        )
        .expect("create");
    let ino2 = task.inotify_init1(IN_NONBLOCK).expect("inotify");
    let wf = task
        .inotify_add_watch(ino2, "/t/uevent", IN_MODIFY)
        .expect("watch");
    let wd = task
        .inotify_add_watch(ino2, "/t", IN_MODIFY)
        .expect("watch");
    task.write(f, b"x").expect("write");
    assert_eq!(
        inotify_events(&task, ino2),
        [
            (wd, IN_MODIFY, "uevent".to_string()),
            (wf, IN_MODIFY, String::new())
        ],
        "tmpfs's order"
    );
    for fd in [f, ino, ino2] {
        task.close(fd).expect("close");
    }
}

/// Oracle: Linux's `kernfs_iop_setattr()`: chmod and chown through one mount change the
/// node, so another mount of the same tree, and the owner's handle, see them; so does a
/// change made through the handle.
#[test]
fn chmod_and_chown_change_the_node_for_every_mount() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let attr = tree
        .root()
        .create_file("a", 0o444, show(|o| o.push(b'a')))
        .expect("file");
    let (_vfs, task) = mounted(&tree);
    task.mkdirat(AT_FDCWD, "/k2", 0o755).expect("mkdir");
    task.mount(
        Some(&b"kfs"[..]),
        "/k2",
        Some("kfs"),
        MountFlags::empty(),
        None,
    )
    .expect("second mount");
    task.fchmodat(AT_FDCWD, "/k/a", 0o640, AtFlags::empty())
        .expect("chmod");
    task.fchownat(AT_FDCWD, "/k/a", Some(1000), Some(100), AtFlags::empty())
        .expect("chown");
    let st = task
        .fstatat(AT_FDCWD, "/k2/a", AtFlags::empty())
        .expect("stat");
    assert_eq!((st.mode, st.uid, st.gid), (S_IFREG | 0o640, 1000, 100));
    assert_eq!(attr.inode().mode() & 0o7777, 0o640);
    attr.set_mode(0o400);
    attr.set_owner(0, 0);
    let st = task
        .fstatat(AT_FDCWD, "/k/a", AtFlags::empty())
        .expect("stat");
    assert_eq!((st.mode, st.uid, st.gid), (S_IFREG | 0o400, 0, 0));
    // A user who now owns nothing here cannot chmod it (Linux: `EPERM`).
    let user = task.fork();
    user.set_cred(Cred::user(1000, 100, &[]));
    assert_eq!(
        user.fchmodat(AT_FDCWD, "/k2/a", 0o777, AtFlags::empty()),
        Err(Errno::EPERM)
    );
}

/// Oracle: Linux's permission check on kernfs inodes (`kernfs_iop_permission()`, the
/// generic check on the node's mode): a user without read permission gets `EACCES`; one
/// with it reads; a directory without search permission hides what is below it; and
/// `kernfs_fop_open()`'s own check of the mode, which stops root too.
#[test]
fn permissions_apply_to_a_user_who_is_not_root() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let root = tree.root();
    root.create_file("secret", 0o400, show(|o| o.push(b's')))
        .expect("file");
    root.create_file("public", 0o444, show(|o| o.push(b'p')))
        .expect("file");
    root.create_file("rw", 0o644, show_store(|o| o.push(b'w'), |d| Ok(d.len())))
        .expect("file");
    let closed = root.create_dir("closed", 0o700).expect("dir");
    closed
        .create_file("inner", 0o444, show(|o| o.push(b'i')))
        .expect("file");
    let (_vfs, task) = mounted(&tree);
    let user = task.fork();
    user.set_cred(Cred::user(1000, 1000, &[]));
    assert_eq!(
        user.openat(AT_FDCWD, "/k/secret", OpenFlags::RDONLY, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(read_file(&user, "/k/public"), b"p");
    assert_eq!(
        user.openat(AT_FDCWD, "/k/rw", OpenFlags::WRONLY, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(
        user.openat(AT_FDCWD, "/k/closed/inner", OpenFlags::RDONLY, 0),
        Err(Errno::EACCES)
    );
    assert_eq!(read_file(&task, "/k/secret"), b"s", "root reads it");
    // Root may not write an attribute whose mode has no write bit, even one with a `store`
    // (Linux: `kernfs_fop_open()` checks the mode itself, after the permission check that
    // root passes).
    task.fchmodat(AT_FDCWD, "/k/rw", 0o444, AtFlags::empty())
        .expect("chmod");
    assert_eq!(
        task.openat(AT_FDCWD, "/k/rw", OpenFlags::WRONLY, 0),
        Err(Errno::EACCES)
    );
    // Giving the file to the user lets them read it.
    user.set_cred(Cred::root());
    user.fchownat(AT_FDCWD, "/k/secret", Some(1000), None, AtFlags::empty())
        .expect("chown");
    user.set_cred(Cred::user(1000, 1000, &[]));
    assert_eq!(read_file(&user, "/k/secret"), b"s");
}

/// Oracle: Linux's active references (`kernfs_get_active()` fails once `kernfs_remove()`
/// began: `ENODEV` for read, pread, lseek and write of a file open before), its removal of
/// every descendant (a removed directory open before lists `.` and `..` only), and the
/// dcache's `kernfs_dop_revalidate()` (cached paths below a removed node miss with `ENOENT`,
/// and a node added again under the same name is found, not a stale negative entry).
#[test]
fn removal_while_open_gives_enodev_and_a_new_node_of_the_name_is_found() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let dev = tree.root().create_dir("dev", 0o755).expect("dir");
    let sub = dev.create_dir("sub", 0o755).expect("dir");
    sub.create_file("leaf", 0o444, show(|o| o.extend_from_slice(b"leaf\n")))
        .expect("file");
    dev.create_file(
        "rw",
        0o644,
        show_store(|o| o.extend_from_slice(b"old\n"), |d| Ok(d.len())),
    )
    .expect("file");
    let (_vfs, task) = mounted(&tree);
    // Warm the dcache, including a negative entry for a name that does not exist yet.
    assert_eq!(read_file(&task, "/k/dev/sub/leaf"), b"leaf\n");
    assert_eq!(
        task.fstatat(AT_FDCWD, "/k/dev/later", AtFlags::empty())
            .err(),
        Some(Errno::ENOENT)
    );
    let rw = open(&task, "/k/dev/rw", OpenFlags::RDWR);
    let leaf = open(&task, "/k/dev/sub/leaf", OpenFlags::RDONLY);
    let dirfd = open(&task, "/k/dev", OpenFlags::RDONLY | OpenFlags::DIRECTORY);
    let mut buf = [0u8; 8];
    assert_eq!(task.read(rw, &mut buf), Ok(4));
    dev.create_file("later", 0o444, show(|o| o.push(b'l')))
        .expect("file");
    assert_eq!(
        read_file(&task, "/k/dev/later"),
        b"l",
        "no stale negative entry"
    );

    dev.remove();
    assert!(dev.is_removed() && sub.is_removed());
    // Before any walk meets the removed names: the open directory lists `.` and `..`.
    let mut dents = [0u8; 1024];
    let n = task.getdents64(dirfd, &mut dents).expect("getdents64");
    let names: Vec<Vec<u8>> = Dirent::parse(&dents[..n])
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, [b".".to_vec(), b"..".to_vec()]);
    assert_eq!(task.read(rw, &mut buf), Err(Errno::ENODEV));
    assert_eq!(task.pread(rw, &mut buf, 0), Err(Errno::ENODEV));
    assert_eq!(task.lseek(rw, 0, Whence::SET), Err(Errno::ENODEV));
    assert_eq!(task.write(rw, b"new"), Err(Errno::ENODEV));
    assert_eq!(task.read(leaf, &mut buf), Err(Errno::ENODEV));
    assert_eq!(
        task.fstat(rw).map(|s| s.mode),
        Ok(S_IFREG | 0o644),
        "fstat needs no active reference"
    );
    for path in ["/k/dev", "/k/dev/rw", "/k/dev/sub/leaf", "/k/dev/later"] {
        assert_eq!(
            task.fstatat(AT_FDCWD, path, AtFlags::empty()).err(),
            Some(Errno::ENOENT),
            "{path}"
        );
    }
    assert_eq!(
        task.openat(dirfd, "rw", OpenFlags::RDONLY, 0),
        Err(Errno::ENOENT),
        "a lookup in the removed directory"
    );

    // The name again: a new directory, found through the same cached path.
    let again = tree.root().create_dir("dev", 0o750).expect("again");
    again
        .create_file("rw", 0o444, show(|o| o.extend_from_slice(b"new\n")))
        .expect("file");
    let st = task
        .fstatat(AT_FDCWD, "/k/dev", AtFlags::empty())
        .expect("stat");
    assert_eq!((st.ino, st.mode), (again.inode().ino(), S_IFDIR | 0o750));
    assert_eq!(read_file(&task, "/k/dev/rw"), b"new\n");
    assert_eq!(
        task.read(rw, &mut buf),
        Err(Errno::ENODEV),
        "the old file stays gone"
    );
    for fd in [rw, leaf, dirfd] {
        task.close(fd).expect("close");
    }
}

/// Oracle: Linux's `iterate_dir()`, which refuses only a directory whose inode is dead
/// (`S_DEAD`, set by `vfs_rmdir()`, never by `kernfs_remove()`), and
/// `kernfs_fop_readdir()`, which lists `.` and `..` of a removed directory. uvfs marks the
/// dentry dead when a walk drops the stale name (`Dentry::cached_child`, as an unlink);
/// `getdents64` refuses a dead directory only if its inode is not stale (it failed with
/// `ENOENT` before that test).
#[test]
fn a_removed_directory_open_before_lists_dots_also_after_a_walk() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let dev = tree.root().create_dir("dev", 0o755).expect("dir");
    let (_vfs, task) = mounted(&tree);
    let dirfd = open(&task, "/k/dev", OpenFlags::RDONLY | OpenFlags::DIRECTORY);
    dev.remove();
    assert_eq!(
        task.fstatat(AT_FDCWD, "/k/dev", AtFlags::empty()).err(),
        Some(Errno::ENOENT)
    );
    let mut dents = [0u8; 1024];
    let n = task.getdents64(dirfd, &mut dents).expect("getdents64");
    assert_eq!(Dirent::parse(&dents[..n]).len(), 2);
}

/// Directory operations that make a directory with one attribute, and count what they did.
struct Groups {
    made: AtomicUsize,
    removed: AtomicUsize,
}

impl DirOps for Groups {
    fn mkdir(&self, parent: &KernfsNode, name: &[u8], mode: u32) -> uvfs::abi::Result<KernfsNode> {
        if name == b"refused" {
            return Err(Errno::ENOSPC);
        }
        let dir = parent.create_dir(name, mode)?;
        let n = self.made.fetch_add(1, Ordering::SeqCst) + 1;
        dir.create_file(
            "id",
            0o444,
            show(move |o| o.extend_from_slice(format!("{n}\n").as_bytes())),
        )?;
        Ok(dir)
    }
    fn rmdir(&self, dir: &KernfsNode) -> uvfs::abi::Result<()> {
        if dir.name() == b"busy" {
            return Err(Errno::EBUSY);
        }
        self.removed.fetch_add(1, Ordering::SeqCst);
        dir.remove();
        Ok(())
    }
}

/// Oracle: Linux's `kernfs_iop_mkdir()`/`kernfs_iop_rmdir()` as cgroupfs uses them: mkdir
/// and rmdir of system calls go to the directory's operations, which make and remove the
/// directory and what is in it (rmdir of a directory holding files succeeds: the operations
/// decide); their errors are the calls'; the VFS's own checks come first (`EEXIST`).
#[test]
fn dir_ops_take_mkdir_and_rmdir_of_system_calls() {
    let ops = Arc::new(Groups {
        made: AtomicUsize::new(0),
        removed: AtomicUsize::new(0),
    });
    let tree = Kernfs::with_root_ops("kfs", 0x6b66, Some(ops.clone()));
    let (_vfs, task) = mounted(&tree);
    task.mkdirat(AT_FDCWD, "/k/g1", 0o755).expect("mkdir");
    task.mkdirat(AT_FDCWD, "/k/g1/nested", 0o700)
        .expect("mkdir in a made directory");
    assert_eq!(read_file(&task, "/k/g1/id"), b"1\n");
    assert_eq!(read_file(&task, "/k/g1/nested/id"), b"2\n");
    let st = task
        .fstatat(AT_FDCWD, "/k/g1/nested", AtFlags::empty())
        .expect("stat");
    assert_eq!(st.mode, S_IFDIR | 0o700);
    assert!(tree.root().find("g1").is_some());
    assert_eq!(task.mkdirat(AT_FDCWD, "/k/g1", 0o755), Err(Errno::EEXIST));
    assert_eq!(
        task.mkdirat(AT_FDCWD, "/k/refused", 0o755),
        Err(Errno::ENOSPC)
    );
    task.mkdirat(AT_FDCWD, "/k/busy", 0o755).expect("mkdir");
    assert_eq!(
        task.unlinkat(AT_FDCWD, "/k/busy", AtFlags::REMOVEDIR),
        Err(Errno::EBUSY)
    );
    task.unlinkat(AT_FDCWD, "/k/g1/nested", AtFlags::REMOVEDIR)
        .expect("rmdir");
    assert_eq!(
        task.fstatat(AT_FDCWD, "/k/g1/nested", AtFlags::empty())
            .err(),
        Some(Errno::ENOENT)
    );
    assert_eq!(ops.made.load(Ordering::SeqCst), 3);
    assert_eq!(ops.removed.load(Ordering::SeqCst), 1);
    // Files are still refused (Linux: kernfs has no `create`).
    assert_eq!(
        task.openat(
            AT_FDCWD,
            "/k/g1/f",
            OpenFlags::CREAT | OpenFlags::WRONLY,
            0o644
        ),
        Err(Errno::EACCES)
    );
    assert_eq!(
        task.unlinkat(AT_FDCWD, "/k/g1/id", AtFlags::empty()),
        Err(Errno::EPERM)
    );
}

/// Oracle: the host's sysfs: `devices/system/cpu/cpu0/topology/core_id` of
/// `Sysfs::with_cpu_topology()` reads as the host's, and has the host's mode; `statfs`
/// gives sysfs's magic.
#[test]
fn sysfs_cpu_topology_has_the_hosts_values() {
    let sysfs = Sysfs::with_cpu_topology();
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/sys", 0o555).expect("mkdir");
    sysfs.mount(&task, "/sys").expect("mount");
    for name in ["core_id", "physical_package_id", "thread_siblings_list"] {
        let path = format!("{TOPOLOGY}/{name}");
        let ours = read_file(&task, &path);
        let st = task
            .fstatat(AT_FDCWD, &path, AtFlags::empty())
            .expect("stat");
        match std::fs::read(&path) {
            Ok(host) => {
                use std::os::unix::fs::MetadataExt;
                assert_eq!(ours, host, "{path}");
                let mode = std::fs::metadata(&path).expect("host stat").mode();
                assert_eq!(st.mode, mode, "{path}'s mode");
            }
            Err(e) => {
                skipped(
                    "sysfs_cpu_topology_has_the_hosts_values",
                    &format!("{path}: {e}"),
                );
                // The made-up machine: cpu0 is core 0 of package 0, alone in its core.
                assert_eq!(ours, b"0\n");
            }
        }
    }
    let fs = task.statfs("/sys").expect("statfs");
    assert_eq!(fs.f_type, uvfs::fs::sysfs::SYSFS_MAGIC);
    // A second instance cannot take the name "sysfs" in the same namespace.
    let other = Sysfs::new();
    task.mkdirat(AT_FDCWD, "/sys2", 0o555).expect("mkdir");
    assert_eq!(other.mount(&task, "/sys2"), Err(Errno::EBUSY));
    sysfs
        .mount(&task, "/sys2")
        .expect("the same instance mounts again");
}

/// Oracle: Linux's `sysfs_kf_seq_show()`: a sysfs attribute's `show` output is cut to a page
/// less one byte (4095 of 5000); kernfs itself (as cgroupfs uses it) does not cut.
#[test]
fn a_sysfs_show_of_5000_bytes_reads_back_4095() {
    let sysfs = Sysfs::new();
    let big = |o: &mut Vec<u8>| o.extend((0..5000u32).map(|i| b'a' + (i % 26) as u8));
    let dev = sysfs.root().add_child("dev").expect("kobject");
    dev.add_attr("big", 0o444, show(big)).expect("attr");
    dev.node()
        .create_file("raw", 0o444, show(big))
        .expect("kernfs attr");
    let vfs = Vfs::new();
    let task = vfs.task(Cred::root());
    task.mkdirat(AT_FDCWD, "/sys", 0o555).expect("mkdir");
    sysfs.mount(&task, "/sys").expect("mount");
    let mut expected = Vec::new();
    big(&mut expected);
    let capped = read_file(&task, "/sys/dev/big");
    assert_eq!(capped.len(), 4095);
    assert_eq!(capped[..], expected[..4095]);
    assert_eq!(read_file(&task, "/sys/dev/raw"), expected);
}

/// What a second removal removes while the first is still draining.
#[derive(Clone, Copy, Debug)]
enum Second {
    /// The same attribute again.
    SameNode,
    /// The directory holding it.
    Parent,
}

/// Regression (issue 11): a removal that finds another removal of the node (or below it)
/// still draining waits for that drain too. Oracle: Linux's `__kernfs_remove()`, which takes
/// a node off its parent only after `kernfs_drain()` of it, and drains a node still on its
/// parent whoever removes it, so every `kernfs_remove()` returns after the callbacks of
/// everything below it. Before the fix, the second removal returned at once (the node was
/// already deactivated, or already off its parent) while a `show` still ran.
#[test]
fn issue_11_a_removal_waits_for_the_drain_of_another_removal() {
    for second in [Second::SameNode, Second::Parent] {
        let tree = Kernfs::new("kfs", 0x6b66);
        let dir = tree.root().create_dir("dev", 0o755).expect("dir");
        let running = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let attr = {
            let (running, release, finished) = (running.clone(), release.clone(), finished.clone());
            dir.create_file(
                "slow",
                0o444,
                show(move |o| {
                    running.store(1, Ordering::SeqCst);
                    let start = Instant::now();
                    while release.load(Ordering::SeqCst) == 0 {
                        assert!(start.elapsed() < Duration::from_secs(20), "never released");
                        std::thread::yield_now();
                    }
                    o.extend_from_slice(b"done\n");
                    finished.store(1, Ordering::SeqCst);
                }),
            )
            .expect("file")
        };
        let (_vfs, task) = mounted(&tree);
        let wait_for = |what: &dyn Fn() -> bool| {
            let start = Instant::now();
            while !what() {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "{second:?}: stuck"
                );
                std::thread::yield_now();
            }
        };
        let second_returned = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let reader = {
                let task = task.clone_thread();
                s.spawn(move || {
                    // One read: the next would find the node removed (ENODEV).
                    let fd = open(&task, "/k/dev/slow", OpenFlags::RDONLY);
                    let mut buf = [0u8; 64];
                    let n = task
                        .read(fd, &mut buf)
                        .expect("a show begun before removal");
                    task.close(fd).expect("close");
                    buf[..n].to_vec()
                })
            };
            wait_for(&|| running.load(Ordering::SeqCst) == 1);
            let first = s.spawn(|| attr.remove());
            wait_for(&|| attr.is_removed());
            let second_returned = &second_returned;
            let (attr, dir, finished) = (&attr, &dir, &finished);
            let second_remover = s.spawn(move || {
                match second {
                    Second::SameNode => attr.remove(),
                    Second::Parent => dir.remove(),
                }
                second_returned.store(1, Ordering::SeqCst);
                finished.load(Ordering::SeqCst)
            });
            // Give a wrong early return the time to happen, then let the show end.
            let start = Instant::now();
            while second_returned.load(Ordering::SeqCst) == 0
                && start.elapsed() < Duration::from_millis(300)
            {
                std::thread::yield_now();
            }
            release.store(1, Ordering::SeqCst);
            let show_done_at_return = second_remover.join().expect("second removal");
            first.join().expect("first removal");
            assert_eq!(
                show_done_at_return, 1,
                "{second:?}: the second removal returned while a show was running"
            );
            assert_eq!(reader.join().expect("reader"), b"done\n");
        });
    }
}

/// Regression (issue 11): two callbacks of one attribute that each remove the attribute (a
/// `store` that deletes its device, on two threads at once) both return. Oracle: Linux's
/// `kernfs_remove_self()`, which drops the caller's own active reference before removing
/// (`kernfs_break_active_protection()`), so competing self-removals never wait for each
/// other. Each removal waiting for the other's callback would never end: the test fails at
/// its deadline instead of hanging.
#[test]
fn issue_11_two_callbacks_removing_their_own_node_do_not_wait_for_each_other() {
    let tree = Kernfs::new("kfs", 0x6b66);
    let dev = tree.root().create_dir("dev", 0o755).expect("dir");
    let inside = Arc::new(AtomicUsize::new(0));
    let me: Arc<Mutex<Option<KernfsNode>>> = Arc::default();
    let attr = {
        let (inside, me) = (inside.clone(), me.clone());
        dev.create_file(
            "remove",
            0o200,
            show_store(
                |_| {},
                move |data| {
                    // Both writers inside the callback before either removes.
                    inside.fetch_add(1, Ordering::SeqCst);
                    let start = Instant::now();
                    while inside.load(Ordering::SeqCst) < 2 {
                        if start.elapsed() > Duration::from_secs(20) {
                            return Err(Errno::EIO);
                        }
                        std::thread::yield_now();
                    }
                    let node = me.lock().expect("me").clone().expect("set");
                    node.remove();
                    Ok(data.len())
                },
            ),
        )
        .expect("file")
    };
    *me.lock().expect("me") = Some(attr.clone());
    let (_vfs, task) = mounted(&tree);
    let done = Arc::new(AtomicUsize::new(0));
    let results = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..2 {
        let (task, done, results) = (task.clone_thread(), done.clone(), results.clone());
        let fd = open(&task, "/k/dev/remove", OpenFlags::WRONLY);
        // Not scoped: a deadlocked writer must not keep the test from failing.
        std::thread::spawn(move || {
            let r = task.write(fd, b"1");
            results.lock().expect("results").push(r);
            done.fetch_add(1, Ordering::SeqCst);
        });
    }
    let start = Instant::now();
    while done.load(Ordering::SeqCst) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the two self-removals wait for each other"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(*results.lock().expect("results"), [Ok(1), Ok(1)]);
    assert!(attr.is_removed());
    assert_eq!(
        task.fstatat(AT_FDCWD, "/k/dev/remove", AtFlags::empty())
            .err(),
        Some(Errno::ENOENT)
    );
}

/// Oracle: Linux's `seq_read_iter()` (text attributes) and `kernfs_file_read_iter()` (binary
/// ones) never call `file_accessed()`, so reads of an attribute by `read`, `pread`, `readv`
/// and `splice` to a pipe leave its atime as it was, where a tmpfs file's first read after
/// its creation updates it (relatime: an atime not newer than the ctime; `filemap_read()`
/// calls `file_accessed()`), which this test checks first so that the attribute's check can
/// fail. Fails if attribute reads stamp the atime.
#[test]
fn reads_of_an_attribute_leave_its_atime() {
    let tree = Kernfs::new("kfs", 0x6b66);
    tree.root()
        .create_file("a", 0o644, show(|o| o.extend_from_slice(b"text\n")))
        .expect("attr");
    tree.root()
        .create_bin(
            "b",
            0o644,
            Arc::new(Blob {
                data: Mutex::new(b"0123456789".to_vec()),
                writes: Mutex::new(Vec::new()),
            }),
        )
        .expect("bin");
    let (_vfs, task) = mounted(&tree);
    let t = open(&task, "/t", OpenFlags::CREAT | OpenFlags::RDWR);
    task.write(t, b"tmpfs").expect("write");
    let atime = |path: &str| {
        task.fstatat(AT_FDCWD, path, AtFlags::empty())
            .expect("stat")
            .atime
    };
    let before = [atime("/t"), atime("/k/a"), atime("/k/b")];
    // Past the coarse clock's tick, so that a stamp would differ.
    std::thread::sleep(Duration::from_millis(30));
    let mut buf = [0u8; 8];
    assert_eq!(task.pread(t, &mut buf, 0), Ok(5));
    assert_ne!(atime("/t"), before[0], "a tmpfs read stamps the atime");
    let [r, w] = task.pipe2(OpenFlags::empty()).expect("pipe");
    for (path, was) in [("/k/a", before[1]), ("/k/b", before[2])] {
        let fd = open(&task, path, OpenFlags::RDONLY);
        assert!(task.read(fd, &mut buf).expect("read") > 0);
        assert!(task.pread(fd, &mut buf, 1).expect("pread") > 0);
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        task.preadv(fd, &mut iov, 0).expect("preadv");
        let mut off = 0i64;
        let n = task
            .splice(fd, Some(&mut off), w, None, 4, SpliceFlags::empty())
            .expect("splice");
        assert_eq!(n, 4, "{path}");
        assert_eq!(task.read(r, &mut buf), Ok(4));
        assert_eq!(atime(path), was, "{path}");
        task.close(fd).expect("close");
    }
    for fd in [t, r, w] {
        task.close(fd).expect("close");
    }
}
