//! Running a plan's pieces on a uvfs [`Vfs`] through the public `sys` API: the initial tree,
//! one operation, and the final tree. Results are raw here (inode numbers as uvfs gave them);
//! [`super::history`] relabels them so that runs on different `Vfs`es compare.

use uvfs::abi::{AtFlags, Dirent, Errno, FileType, OpenFlags, AT_FDCWD};
use uvfs::{Cred, Task, Vfs};

use super::plan::{InitNode, Op, Plan, DIRS, INNER_CHILD};

/// An inode's identity: `(st_dev, st_ino)`.
pub(crate) type Ident = (u64, u64);

/// Room for every entry of a directory of this name space in one `getdents64` call.
const LISTING_BUF_BYTES: usize = 4096;

/// One entry of a listing, as `getdents64` returned it.
#[derive(Clone, Debug)]
pub(crate) struct RawDirent {
    pub(crate) name: Vec<u8>,
    pub(crate) ident: Ident,
    pub(crate) d_type: u8,
}

/// What an operation returned, with uvfs's inode numbers.
#[derive(Clone, Debug)]
pub(crate) enum Raw {
    /// Success without a value.
    Done,
    /// The inode an open or `lstat` reached.
    Node(Ident, FileType),
    /// A directory's entries, in `getdents64` order, without `.` and `..`.
    Listing(Vec<RawDirent>),
}

/// An operation's result.
pub(crate) type RawResult = Result<Raw, Errno>;

/// One name of the final tree.
#[derive(Clone, Debug)]
pub(crate) struct RawNode {
    /// The absolute path.
    pub(crate) path: String,
    /// The entry as the parent's listing gave it.
    pub(crate) dirent: RawDirent,
    /// `lstat` of the path: identity, type, link count.
    pub(crate) stat: Result<(Ident, FileType, u64), Errno>,
    /// `readlink` of a symbolic link.
    pub(crate) target: Option<Result<Vec<u8>, Errno>>,
}

/// The inodes of the initial tree, with a name for each (its first path).
#[derive(Clone, Debug)]
pub(crate) struct InitialInodes {
    pub(crate) inodes: Vec<(Ident, String)>,
}

/// Builds `plan`'s initial tree on `vfs` and returns its inodes in a fixed order: `/`, `/a`,
/// `/b`, then each leaf in plan order (a hard link adds nothing) and the child of a non-empty
/// directory after it.
///
/// # Panics
/// If uvfs refuses to build the tree (each step is valid on a fresh `Vfs`).
pub(crate) fn build(vfs: &Vfs, plan: &Plan) -> InitialInodes {
    let task = vfs.task(Cred::root());
    for d in DIRS {
        task.mkdirat(AT_FDCWD, format!("/{d}"), 0o755)
            .expect("mkdir of a fixed directory on a fresh Vfs");
    }
    for (leaf, node) in &plan.init {
        let path = leaf.path();
        let r = match node {
            InitNode::File => create_file(&task, &path),
            InitNode::HardLink(of) => {
                task.linkat(AT_FDCWD, of.path(), AT_FDCWD, &path, AtFlags::empty())
            }
            InitNode::Dir { non_empty } => task.mkdirat(AT_FDCWD, &path, 0o755).and_then(|()| {
                if *non_empty {
                    create_file(&task, &format!("{path}/{INNER_CHILD}"))
                } else {
                    Ok(())
                }
            }),
            InitNode::Symlink(target) => task.symlinkat(target, AT_FDCWD, &path),
        };
        r.unwrap_or_else(|e| panic!("building the initial {path} ({node:?}): {e:?}"));
    }
    let mut paths = vec!["/".to_string()];
    paths.extend(DIRS.iter().map(|d| format!("/{d}")));
    for (leaf, node) in &plan.init {
        if matches!(node, InitNode::HardLink(_)) {
            continue;
        }
        paths.push(leaf.path());
        if *node == (InitNode::Dir { non_empty: true }) {
            paths.push(format!("{}/{INNER_CHILD}", leaf.path()));
        }
    }
    let inodes = paths
        .into_iter()
        .map(|p| {
            let st = task
                .lstat(&p)
                .unwrap_or_else(|e| panic!("lstat of the initial {p}: {e:?}"));
            ((st.dev, st.ino), p)
        })
        .collect();
    InitialInodes { inodes }
}

fn create_file(task: &Task, path: &str) -> uvfs::Result<()> {
    let fd = task.openat(
        AT_FDCWD,
        path,
        OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL,
        0o644,
    )?;
    task.close(fd)
}

/// What a serial step of an operation leaves for its next step.
#[derive(Debug, Default)]
pub(crate) enum Carry {
    /// Nothing.
    #[default]
    Empty,
    /// `link`'s first step: the old name opened `O_PATH`, or why not.
    Looked(Result<i32, Errno>),
}

/// Runs step `step` of `op` on `task` for the serial oracle ([`Op::serial_steps`]); returns
/// the operation's result after its last step. `link(old, new)` runs as
/// `open(old, O_PATH|O_NOFOLLOW)` then `linkat(fd, "", new, AT_EMPTY_PATH)`, the two halves
/// of Linux's `do_linkat()`.
pub(crate) fn run_step(task: &Task, op: &Op, step: usize, carry: &mut Carry) -> Option<RawResult> {
    match (op, step) {
        (Op::Link { from, .. }, 0) => {
            *carry = Carry::Looked(task.openat(
                AT_FDCWD,
                from.path(),
                OpenFlags::PATH | OpenFlags::NOFOLLOW,
                0,
            ));
            None
        }
        (Op::Link { to, .. }, 1) => match std::mem::take(carry) {
            Carry::Looked(Ok(fd)) => {
                let r = task.linkat(fd, "", AT_FDCWD, to.path(), AtFlags::EMPTY_PATH);
                task.close(fd).expect("closing the fd of step 0");
                Some(r.map(|()| Raw::Done))
            }
            Carry::Looked(Err(e)) => Some(Err(e)),
            Carry::Empty => unreachable!("step 0 of link leaves its lookup"),
        },
        (_, 0) => Some(run_op(task, op)),
        _ => unreachable!("{op} has {} steps, not {}", op.serial_steps(), step + 1),
    }
}

/// Runs one operation on `task`.
pub(crate) fn run_op(task: &Task, op: &Op) -> RawResult {
    match op {
        Op::Rename { from, to, flags } => task
            .renameat2(AT_FDCWD, from.path(), AT_FDCWD, to.path(), *flags)
            .map(|()| Raw::Done),
        Op::Link { from, to } => task
            .linkat(AT_FDCWD, from.path(), AT_FDCWD, to.path(), AtFlags::empty())
            .map(|()| Raw::Done),
        Op::Unlink(l) => task
            .unlinkat(AT_FDCWD, l.path(), AtFlags::empty())
            .map(|()| Raw::Done),
        Op::Rmdir(l) => task
            .unlinkat(AT_FDCWD, l.path(), AtFlags::REMOVEDIR)
            .map(|()| Raw::Done),
        Op::Mkdir(l) => task.mkdirat(AT_FDCWD, l.path(), 0o755).map(|()| Raw::Done),
        Op::Symlink { target, at } => task
            .symlinkat(target, AT_FDCWD, at.path())
            .map(|()| Raw::Done),
        Op::CreateExcl(l) => open_node(
            task,
            &l.path(),
            OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL,
        ),
        Op::Create(l) => open_node(
            task,
            &l.path(),
            OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::NOFOLLOW,
        ),
        Op::Lstat(l) => task
            .lstat(l.path())
            .map(|st| Raw::Node((st.dev, st.ino), file_type(st.mode))),
        Op::List(d) => list(task, &format!("/{}", DIRS[usize::from(*d)])).map(Raw::Listing),
    }
}

fn file_type(mode: u32) -> FileType {
    FileType::from_mode(mode).expect("uvfs reports a valid file type")
}

/// Opens `path`, reads the inode the fd names, closes it. The inode is fixed when the open
/// succeeds, so the `fstat` after it does not widen the operation.
fn open_node(task: &Task, path: &str, flags: OpenFlags) -> RawResult {
    let fd = task.openat(AT_FDCWD, path, flags, 0o644)?;
    let st = task.fstat(fd);
    task.close(fd).expect("closing the fd just opened");
    let st = st.expect("fstat of an open fd");
    Ok(Raw::Node((st.dev, st.ino), file_type(st.mode)))
}

/// The entries of the directory at `path` in `getdents64` order, without `.` and `..`; the
/// first call gets them all (the buffer holds the largest directory of the name space), and
/// the loop reads until `getdents64` says the end.
fn list(task: &Task, path: &str) -> Result<Vec<RawDirent>, Errno> {
    let fd = task.openat(AT_FDCWD, path, OpenFlags::RDONLY | OpenFlags::DIRECTORY, 0)?;
    let out = list_fd(task, fd);
    task.close(fd).expect("closing the fd just opened");
    out
}

fn list_fd(task: &Task, fd: i32) -> Result<Vec<RawDirent>, Errno> {
    let dev = task.fstat(fd)?.dev;
    let mut buf = vec![0u8; LISTING_BUF_BYTES];
    let mut out = Vec::new();
    loop {
        let n = task.getdents64(fd, &mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        for d in Dirent::parse(&buf[..n]) {
            if d.name == b"." || d.name == b".." {
                continue;
            }
            out.push(RawDirent {
                name: d.name,
                ident: (dev, d.ino),
                d_type: d.d_type,
            });
        }
    }
}

/// The whole tree below `/`, depth first in listing order, read when nothing else runs.
pub(crate) fn snapshot(vfs: &Vfs) -> Result<Vec<RawNode>, String> {
    let task = vfs.task(Cred::root());
    let mut out = Vec::new();
    walk(&task, "", &mut out)?;
    Ok(out)
}

fn walk(task: &Task, dir: &str, out: &mut Vec<RawNode>) -> Result<(), String> {
    let shown = if dir.is_empty() { "/" } else { dir };
    let entries = list(task, shown).map_err(|e| format!("listing {shown}: {e:?}"))?;
    for dirent in entries {
        let path = format!("{dir}/{}", String::from_utf8_lossy(&dirent.name));
        let stat = task
            .lstat(&path)
            .map(|st| ((st.dev, st.ino), file_type(st.mode), st.nlink));
        let kind = stat.as_ref().ok().map(|s| s.1);
        let target = (kind == Some(FileType::Symlink)).then(|| {
            let mut buf = [0u8; 256];
            task.readlinkat(AT_FDCWD, &path, &mut buf)
                .map(|n| buf[..n].to_vec())
        });
        out.push(RawNode {
            path: path.clone(),
            dirent,
            stat,
            target,
        });
        if kind == Some(FileType::Directory) {
            walk(task, &path, out)?;
        }
    }
    Ok(())
}
