//! The testcases of will-it-scale that uvfs can run, the ones it cannot yet, and the files each
//! one works on. Both columns build the same files from [`FilePlan`] and run the same loop
//! (`calls.rs`), so the host and uvfs do exactly the same work.

use std::ffi::CString;

use serde::Serialize;

/// Bytes of one transfer, and the stride of `pread3`/`pwrite3` (a page).
pub const PAGE_BYTES: u64 = 4096;
/// Size of the files `read1`, `read2` and `write1` walk through; `fallocate1` truncates at it.
pub const WALK_BYTES: u64 = 1 << 20;

/// A file-system testcase of will-it-scale (`../shared/research/will-it-scale.md` lists the
/// loops; ours are written from those descriptions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Testcase {
    /// open(O_RDWR) + close of its own file; all files in one directory.
    Open1,
    /// The same, each file in its own directory.
    Open2,
    /// open(O_RDWR) + close of one file shared by all copies.
    Open3,
    /// open(O_RDWR|O_CREAT, 0600) + close + unlink of its own name; one directory.
    Unlink1,
    /// The same, each name in its own directory.
    Unlink2,
    /// dup + close of an fd of its own unlinked file.
    Dup1,
    /// lseek(fd, 0, SEEK_SET) on its own 4 KiB file.
    Lseek1,
    /// lseek(fd, 0, SEEK_SET) on one shared file, each copy with its own open.
    Lseek2,
    /// pread 4 KiB at offset 0 of its own 4 KiB file.
    Pread1,
    /// pread 4 KiB at offset 0 of one shared file (own open each).
    Pread2,
    /// pread 4 KiB at offset page × copy of one shared file.
    Pread3,
    /// pwrite 4 KiB at offset 0 of its own 4 KiB file.
    Pwrite1,
    /// pwrite 4 KiB at offset 0 of one shared file (own open each).
    Pwrite2,
    /// pwrite 4 KiB at offset page × copy of one shared file.
    Pwrite3,
    /// read 4 KiB sequentially through its own 1 MiB file, lseek to 0 at the end.
    Read1,
    /// The same through one shared 1 MiB file (own open each).
    Read2,
    /// write 4 KiB sequentially into its own file, lseek to 0 after 1 MiB.
    Write1,
    /// lseek to 0 then read 4 KiB, own file.
    Readseek1,
    /// lseek to 0 then write 4 KiB, own file.
    Writeseek1,
    /// fallocate(mode 0) of 4 KiB at a growing offset of its own file, ftruncate to 0 after
    /// 1 MiB.
    Fallocate1,
    /// write 1 byte then read 1 byte on its own pipe, both ends in the copy.
    Pipe1,
    /// 1 byte passed back and forth over two pipes between the copy and a partner task of its
    /// own (a thread in threads mode, a forked process in processes mode), which echoes it.
    ContextSwitch1,
    /// fcntl(F_SETLKW) write lock + unlock of byte 0 of its own file.
    Lock1,
    /// The same on one shared file (own open each): in processes mode the copies' locks
    /// conflict; in threads mode one process owns them all.
    Lock2,
    /// poll(POLLOUT, timeout 0) of 1 fd of its own file.
    Poll1,
    /// poll(POLLOUT, timeout 0) of [`POLL2_FDS`] fds: its own file opened that many times
    /// (will-it-scale opens as many files; a poll of a regular file asks only its open file).
    Poll2,
    /// write 8 bytes (the value 1) then read 8 bytes on its own eventfd.
    Eventfd1,
}

/// The fds `poll2` polls at once.
pub const POLL2_FDS: usize = 128;

/// Where a copy's file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `f<copy>`: its own file, all in one directory.
    Own,
    /// `d<copy>/f<copy>`: its own file in its own directory.
    OwnDirectory,
    /// `shared`: one file for all copies.
    Shared,
    /// `u<copy>`: a name the loop creates and unlinks, all in one directory.
    Name,
    /// `d<copy>/u<copy>`: the same, each in its own directory.
    NameOwnDirectory,
    /// `f<copy>`: its own file, which the copy creates and unlinks before the loop (`dup1`).
    Unlinked,
    /// No file: the copy makes its own pipes (`pipe1`, `context_switch1`) or eventfd
    /// (`eventfd1`).
    Anon,
}

/// The shared file's name.
pub const SHARED_NAME: &str = "shared";

impl Testcase {
    /// Every testcase, in suite order.
    pub const ALL: [Testcase; 27] = [
        Testcase::Open1,
        Testcase::Open2,
        Testcase::Open3,
        Testcase::Unlink1,
        Testcase::Unlink2,
        Testcase::Dup1,
        Testcase::Lseek1,
        Testcase::Lseek2,
        Testcase::Pread1,
        Testcase::Pread2,
        Testcase::Pread3,
        Testcase::Pwrite1,
        Testcase::Pwrite2,
        Testcase::Pwrite3,
        Testcase::Read1,
        Testcase::Read2,
        Testcase::Write1,
        Testcase::Readseek1,
        Testcase::Writeseek1,
        Testcase::Fallocate1,
        Testcase::Pipe1,
        Testcase::ContextSwitch1,
        Testcase::Lock1,
        Testcase::Lock2,
        Testcase::Poll1,
        Testcase::Poll2,
        Testcase::Eventfd1,
    ];

    /// The name on the command line and in output (will-it-scale's).
    pub fn name(self) -> &'static str {
        match self {
            Testcase::Open1 => "open1",
            Testcase::Open2 => "open2",
            Testcase::Open3 => "open3",
            Testcase::Unlink1 => "unlink1",
            Testcase::Unlink2 => "unlink2",
            Testcase::Dup1 => "dup1",
            Testcase::Lseek1 => "lseek1",
            Testcase::Lseek2 => "lseek2",
            Testcase::Pread1 => "pread1",
            Testcase::Pread2 => "pread2",
            Testcase::Pread3 => "pread3",
            Testcase::Pwrite1 => "pwrite1",
            Testcase::Pwrite2 => "pwrite2",
            Testcase::Pwrite3 => "pwrite3",
            Testcase::Read1 => "read1",
            Testcase::Read2 => "read2",
            Testcase::Write1 => "write1",
            Testcase::Readseek1 => "readseek1",
            Testcase::Writeseek1 => "writeseek1",
            Testcase::Fallocate1 => "fallocate1",
            Testcase::Pipe1 => "pipe1",
            Testcase::ContextSwitch1 => "context_switch1",
            Testcase::Lock1 => "lock1",
            Testcase::Lock2 => "lock2",
            Testcase::Poll1 => "poll1",
            Testcase::Poll2 => "poll2",
            Testcase::Eventfd1 => "eventfd1",
        }
    }

    /// The testcase named `s`.
    pub fn from_name(s: &str) -> Option<Testcase> {
        Self::ALL.into_iter().find(|t| t.name() == s)
    }

    /// What one iteration does, for the table heading.
    pub fn describe(self) -> &'static str {
        match self {
            Testcase::Open1 => "open(O_RDWR) + close of its own file, one directory",
            Testcase::Open2 => "open(O_RDWR) + close of its own file, a directory each",
            Testcase::Open3 => "open(O_RDWR) + close of one shared file",
            Testcase::Unlink1 => "open(O_CREAT) + close + unlink of its own name, one directory",
            Testcase::Unlink2 => "open(O_CREAT) + close + unlink of its own name, a directory each",
            Testcase::Dup1 => "dup + close of an fd of its own unlinked file",
            Testcase::Lseek1 => "lseek(0, SEEK_SET) of its own file",
            Testcase::Lseek2 => "lseek(0, SEEK_SET) of one shared file, own open each",
            Testcase::Pread1 => "pread 4 KiB at 0 of its own file",
            Testcase::Pread2 => "pread 4 KiB at 0 of one shared file",
            Testcase::Pread3 => "pread 4 KiB at page x copy of one shared file",
            Testcase::Pwrite1 => "pwrite 4 KiB at 0 of its own file",
            Testcase::Pwrite2 => "pwrite 4 KiB at 0 of one shared file",
            Testcase::Pwrite3 => "pwrite 4 KiB at page x copy of one shared file",
            Testcase::Read1 => "read 4 KiB through its own 1 MiB file, rewinding at the end",
            Testcase::Read2 => "read 4 KiB through one shared 1 MiB file, own open each",
            Testcase::Write1 => "write 4 KiB into its own file, rewinding after 1 MiB",
            Testcase::Readseek1 => "lseek(0) + read 4 KiB of its own file",
            Testcase::Writeseek1 => "lseek(0) + write 4 KiB of its own file",
            Testcase::Fallocate1 => "fallocate 4 KiB at a growing offset, ftruncate after 1 MiB",
            Testcase::Pipe1 => "write 1 byte + read 1 byte on its own pipe",
            Testcase::ContextSwitch1 => "1 byte there and back over two pipes with a partner",
            Testcase::Lock1 => "fcntl(F_SETLKW) write lock + unlock of byte 0 of its own file",
            Testcase::Lock2 => "fcntl(F_SETLKW) write lock + unlock of byte 0 of one shared file",
            Testcase::Poll1 => "poll(POLLOUT, 0) of 1 fd of its own file",
            Testcase::Poll2 => "poll(POLLOUT, 0) of 128 fds of its own file",
            Testcase::Eventfd1 => "write 8 bytes + read 8 bytes of its own eventfd",
        }
    }

    /// The file or name a copy works on.
    pub fn target(self) -> Target {
        match self {
            Testcase::Open2 => Target::OwnDirectory,
            Testcase::Open3
            | Testcase::Lseek2
            | Testcase::Pread2
            | Testcase::Pread3
            | Testcase::Pwrite2
            | Testcase::Pwrite3
            | Testcase::Read2
            | Testcase::Lock2 => Target::Shared,
            Testcase::Unlink1 => Target::Name,
            Testcase::Unlink2 => Target::NameOwnDirectory,
            Testcase::Dup1 => Target::Unlinked,
            Testcase::Pipe1 | Testcase::ContextSwitch1 | Testcase::Eventfd1 => Target::Anon,
            _ => Target::Own,
        }
    }

    /// True if a copy holds one file open through the loop (everything but open* and
    /// unlink*, which open inside the loop, and the pipe testcases, which hold pipes).
    pub fn holds_fd(self) -> bool {
        !matches!(
            self,
            Testcase::Open1
                | Testcase::Open2
                | Testcase::Open3
                | Testcase::Unlink1
                | Testcase::Unlink2
                | Testcase::Pipe1
                | Testcase::ContextSwitch1
                | Testcase::Eventfd1
        )
    }

    /// True for the testcases whose copies work on pipes or an eventfd of their own.
    pub fn makes_own_fds(self) -> bool {
        self.target() == Target::Anon
    }

    /// The fds all copies of a run hold at once at most, beyond the few a process has anyway:
    /// `poll2` holds [`POLL2_FDS`] per copy, which a one-table run of 16 copies must fit in
    /// the fd limit (Linux's default soft limit, 1024, does not).
    pub fn fds_held(self, copies: usize) -> usize {
        match self {
            Testcase::Poll2 => POLL2_FDS * copies,
            Testcase::ContextSwitch1 => 4 * copies,
            _ => 2 * copies,
        }
    }

    /// Size of each existing file before the run, for `copies` copies.
    pub fn file_bytes(self, copies: usize) -> u64 {
        match self {
            Testcase::Pread3 | Testcase::Pwrite3 => PAGE_BYTES * copies as u64,
            Testcase::Read1 | Testcase::Read2 => WALK_BYTES,
            Testcase::Write1 | Testcase::Fallocate1 => 0,
            _ => PAGE_BYTES,
        }
    }

    /// Path of copy `copy`'s file or name, relative to the column's directory.
    pub fn path(self, copy: usize) -> String {
        match self.target() {
            Target::Own | Target::Unlinked => format!("f{copy}"),
            Target::OwnDirectory => format!("d{copy}/f{copy}"),
            Target::Shared => SHARED_NAME.to_string(),
            Target::Name => format!("u{copy}"),
            Target::NameOwnDirectory => format!("d{copy}/u{copy}"),
            Target::Anon => format!("pipe{copy}"),
        }
    }

    /// [`Testcase::path`] as the C string both columns pass to their calls.
    pub fn c_path(self, copy: usize) -> CString {
        CString::new(self.path(copy)).expect("testcase paths have no NUL")
    }

    /// The directories and files that exist before a run with `copies` copies.
    pub fn plan(self, copies: usize) -> FilePlan {
        let mut plan = FilePlan::default();
        let bytes = self.file_bytes(copies);
        match self.target() {
            Target::Own => {
                for c in 0..copies {
                    plan.files.push(PlannedFile::own(self.path(c), c, bytes));
                }
            }
            Target::OwnDirectory => {
                for c in 0..copies {
                    plan.dirs.push(format!("d{c}"));
                    plan.files.push(PlannedFile::own(self.path(c), c, bytes));
                }
            }
            Target::Shared => plan.files.push(PlannedFile {
                path: SHARED_NAME.to_string(),
                bytes,
                fill: Fill::PerPage,
            }),
            Target::Name | Target::Unlinked | Target::Anon => {}
            Target::NameOwnDirectory => plan.dirs.extend((0..copies).map(|c| format!("d{c}"))),
        }
        plan
    }
}

/// What a run starts from: directories (made first, in order) and files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilePlan {
    /// Directories, relative to the column's directory.
    pub dirs: Vec<String>,
    /// Files.
    pub files: Vec<PlannedFile>,
}

/// One file of a [`FilePlan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedFile {
    /// Relative path.
    pub path: String,
    /// Size.
    pub bytes: u64,
    /// Its contents.
    pub fill: Fill,
}

impl PlannedFile {
    fn own(path: String, copy: usize, bytes: u64) -> PlannedFile {
        PlannedFile {
            path,
            bytes,
            fill: Fill::Copy(copy),
        }
    }

    /// The file's contents.
    pub fn contents(&self) -> Vec<u8> {
        let len = usize::try_from(self.bytes).expect("bench files fit in memory");
        match self.fill {
            Fill::Copy(c) => vec![fill_byte(c); len],
            Fill::PerPage => (0..len)
                .map(|i| fill_byte(i / PAGE_BYTES as usize))
                .collect(),
        }
    }
}

/// How a planned file is filled, so that a test can tell which file or page a read saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Every byte is [`fill_byte`] of the copy that owns the file.
    Copy(usize),
    /// Page `k` is all [`fill_byte`]`(k)` (the shared file; `pread3` reads page `copy`).
    PerPage,
}

/// The byte files of copy (or page) `i` are filled with: `0x40..0x7f`, never zero.
pub fn fill_byte(i: usize) -> u8 {
    0x40 + (i % 64) as u8
}

/// The byte copy `i` writes: `0x80..0xbf`, never a [`fill_byte`].
pub fn write_byte(i: usize) -> u8 {
    0x80 + (i % 64) as u8
}

/// A will-it-scale testcase uvfs cannot run yet, and the calls it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NotYet {
    /// will-it-scale's name.
    pub name: &'static str,
    /// What uvfs lacks.
    pub needs: &'static str,
}

/// The file-system testcases of will-it-scale that wait for calls uvfs does not have; every
/// report lists them. None since poll1, poll2 and eventfd1 joined.
pub const NOT_YET: [NotYet; 0] = [];

/// "not yet: pipe1, context_switch1 (need pipes); ..." for the report; `None` when every
/// testcase runs.
pub fn not_yet_line() -> Option<String> {
    if NOT_YET.is_empty() {
        return None;
    }
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for n in NOT_YET {
        match groups.iter_mut().find(|(needs, _)| *needs == n.needs) {
            Some((_, names)) => names.push(n.name),
            None => groups.push((n.needs, vec![n.name])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(needs, names)| format!("{} (needs {needs})", names.join(", ")))
        .collect();
    Some(format!("not yet: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for t in Testcase::ALL {
            assert_eq!(Testcase::from_name(t.name()), Some(t));
            assert!(NOT_YET.iter().all(|n| n.name != t.name()));
        }
        assert_eq!(Testcase::from_name("poll9"), None);
        assert_eq!(
            Testcase::from_name("context_switch1"),
            Some(Testcase::ContextSwitch1)
        );
    }

    #[test]
    fn plans_give_each_copy_its_own_file_or_one_shared_file() {
        let p = Testcase::Open2.plan(3);
        assert_eq!(p.dirs, ["d0", "d1", "d2"]);
        let paths: Vec<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["d0/f0", "d1/f1", "d2/f2"]);
        let p = Testcase::Pread3.plan(4);
        assert_eq!(p.files.len(), 1);
        assert_eq!(p.files[0].bytes, 4 * PAGE_BYTES);
        let c = p.files[0].contents();
        assert_eq!(c[3 * PAGE_BYTES as usize], fill_byte(3));
        assert_eq!(c[0], fill_byte(0));
        assert!(Testcase::Unlink1.plan(4).files.is_empty());
        assert_eq!(Testcase::Unlink2.plan(2).dirs, ["d0", "d1"]);
        assert_eq!(Testcase::Read1.plan(1).files[0].bytes, WALK_BYTES);
    }

    #[test]
    fn every_file_system_testcase_of_will_it_scale_runs() {
        assert_eq!(not_yet_line(), None);
        for name in [
            "pipe1",
            "context_switch1",
            "poll1",
            "poll2",
            "lock1",
            "lock2",
            "eventfd1",
        ] {
            assert!(Testcase::from_name(name).is_some(), "{name}");
        }
    }
}
