//! `uvfs watch`: what uvfs's inotify reports for a sequence of operations. A host directory
//! is copied into a fresh in-memory uvfs tree (as `uvfs import` reads one), the given paths
//! of that tree are watched (`uvfs::fs::Watcher`), the operations run one by one, and after
//! each the events queued are printed one a line as `inotifywait -m` prints them (its
//! default format, `%w %e %f`): the watched path (a directory's with a trailing `/`), the
//! event names joined by commas, and the name of the child if the event is about one.
//!
//! The operations, one per argument after `--` or one per line of `--ops FILE` (where blank
//! lines and lines starting with `#` are skipped); the first word is the verb, paths are
//! paths of the uvfs tree and contain no whitespace, TEXT is the rest of the line:
//!
//! ```text
//! create PATH          create (or truncate) the file and close it
//! write PATH TEXT      open for writing (creating or truncating), write TEXT, close
//! append PATH TEXT     open for appending (creating), write TEXT, close
//! read PATH            open, read to the end, close
//! chmod MODE PATH      set the permission bits (octal)
//! mkdir PATH           make a directory
//! rmdir PATH           remove an empty directory
//! remove PATH          remove a file (unlink)
//! rename FROM TO       rename (replacing TO)
//! link FROM TO         make TO another name of the file FROM
//! symlink TARGET PATH  make PATH a symbolic link to TARGET
//! ```

use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use uvfs::fs::{EventMask, Fs, Permissions, WatchDescriptor, WatchMask};

use crate::output::BadValue;

#[derive(Args)]
pub struct WatchArgs {
    /// A host directory to copy into the uvfs tree's root first (default: an empty tree).
    #[arg(long, value_name = "DIR")]
    from: Option<PathBuf>,
    /// The events to watch for, comma-separated (default: all of them); UNMOUNT and
    /// IGNORED are reported whatever is asked.
    #[arg(
        short = 'e',
        long = "event",
        value_enum,
        value_name = "EVENT,...",
        value_delimiter = ','
    )]
    events: Vec<EventArg>,
    /// A file of operations, one a line (`-`: standard input), run before those after `--`.
    #[arg(long, value_name = "FILE")]
    ops: Option<PathBuf>,
    /// The paths of the uvfs tree to watch.
    #[arg(value_name = "PATH", required = true)]
    paths: Vec<String>,
    /// The operations to run, one per argument: `'create /a'`, `'write /a some text'`,
    /// `'rename /a /b'`.
    #[arg(value_name = "OP", last = true)]
    run: Vec<String>,
}

/// An event name of `-e`, as inotifywait spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
enum EventArg {
    Access,
    Modify,
    Attrib,
    CloseWrite,
    CloseNowrite,
    Close,
    Open,
    MovedTo,
    MovedFrom,
    Move,
    MoveSelf,
    Create,
    Delete,
    DeleteSelf,
}

impl EventArg {
    fn mask(self) -> WatchMask {
        match self {
            EventArg::Access => WatchMask::ACCESS,
            EventArg::Modify => WatchMask::MODIFY,
            EventArg::Attrib => WatchMask::ATTRIB,
            EventArg::CloseWrite => WatchMask::CLOSE_WRITE,
            EventArg::CloseNowrite => WatchMask::CLOSE_NOWRITE,
            EventArg::Close => WatchMask::CLOSE,
            EventArg::Open => WatchMask::OPEN,
            EventArg::MovedTo => WatchMask::MOVED_TO,
            EventArg::MovedFrom => WatchMask::MOVED_FROM,
            EventArg::Move => WatchMask::MOVE,
            EventArg::MoveSelf => WatchMask::MOVE_SELF,
            EventArg::Create => WatchMask::CREATE,
            EventArg::Delete => WatchMask::DELETE,
            EventArg::DeleteSelf => WatchMask::DELETE_SELF,
        }
    }
}

/// One operation of the list.
#[derive(Debug, PartialEq, Eq)]
enum Op {
    Create(String),
    Write(String, String),
    Append(String, String),
    Read(String),
    Chmod(u32, String),
    Mkdir(String),
    Rmdir(String),
    Remove(String),
    Rename(String, String),
    Link(String, String),
    Symlink(String, String),
}

/// The verbs, for the refusal of an unknown one.
const VERBS: &str =
    "create, write, append, read, chmod, mkdir, rmdir, remove, rename, link, symlink";

/// Parses one operation (see the module documentation); the error says what is wrong.
fn parse_op(line: &str) -> Result<Op, String> {
    let line = line.trim();
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim_start();
    let words: Vec<&str> = rest.split_whitespace().collect();
    let one = |make: fn(String) -> Op| match words[..] {
        [p] => Ok(make(p.to_string())),
        _ => Err(format!("'{verb}' takes one path")),
    };
    let two = |make: fn(String, String) -> Op| match words[..] {
        [a, b] => Ok(make(a.to_string(), b.to_string())),
        _ => Err(format!("'{verb}' takes two paths")),
    };
    let text = |make: fn(String, String) -> Op| {
        let (path, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if path.is_empty() {
            return Err(format!("'{verb}' takes a path and a text"));
        }
        Ok(make(path.to_string(), text.trim_start().to_string()))
    };
    match verb {
        "create" => one(Op::Create),
        "write" => text(Op::Write),
        "append" => text(Op::Append),
        "read" => one(Op::Read),
        "chmod" => match words[..] {
            [mode, p] => u32::from_str_radix(mode, 8)
                .ok()
                .filter(|m| *m <= 0o7777)
                .map(|m| Op::Chmod(m, p.to_string()))
                .ok_or_else(|| format!("'chmod' takes an octal mode up to 7777, not '{mode}'")),
            _ => Err("'chmod' takes a mode and a path".to_string()),
        },
        "mkdir" => one(Op::Mkdir),
        "rmdir" => one(Op::Rmdir),
        "remove" => one(Op::Remove),
        "rename" => two(Op::Rename),
        "link" => two(Op::Link),
        "symlink" => two(Op::Symlink),
        "" => Err("an empty operation".to_string()),
        _ => Err(format!("unknown operation '{verb}' (takes {VERBS})")),
    }
}

impl Op {
    /// Runs the operation on `fs`.
    fn run(&self, fs: &Fs) -> io::Result<()> {
        match self {
            Op::Create(p) => fs.create(p).map(drop),
            Op::Write(p, text) => fs.write(p, text),
            Op::Append(p, text) => {
                let mut f =
                    fs.open_with(p, uvfs::fs::OpenOptions::new().append(true).create(true))?;
                f.write_all(text.as_bytes())
            }
            Op::Read(p) => {
                let mut sink = Vec::new();
                fs.open(p)?.read_to_end(&mut sink).map(drop)
            }
            Op::Chmod(mode, p) => fs.set_permissions(p, Permissions::from_mode(*mode)),
            Op::Mkdir(p) => fs.create_dir(p),
            Op::Rmdir(p) => fs.remove_dir(p),
            Op::Remove(p) => fs.remove_file(p),
            Op::Rename(a, b) => fs.rename(a, b),
            Op::Link(a, b) => fs.hard_link(a, b),
            Op::Symlink(a, b) => fs.symlink(a, b),
        }
    }
}

/// inotifywait's names of the bits of `mask`, in its order, joined by commas (a close event
/// also says `CLOSE`).
fn event_names(mask: EventMask) -> String {
    const NAMES: [(EventMask, &str); 17] = [
        (EventMask::ACCESS, "ACCESS"),
        (EventMask::MODIFY, "MODIFY"),
        (EventMask::ATTRIB, "ATTRIB"),
        (EventMask::CLOSE_WRITE, "CLOSE_WRITE"),
        (EventMask::CLOSE_NOWRITE, "CLOSE_NOWRITE"),
        (EventMask::OPEN, "OPEN"),
        (EventMask::MOVED_FROM, "MOVED_FROM"),
        (EventMask::MOVED_TO, "MOVED_TO"),
        (EventMask::CREATE, "CREATE"),
        (EventMask::DELETE, "DELETE"),
        (EventMask::DELETE_SELF, "DELETE_SELF"),
        (EventMask::UNMOUNT, "UNMOUNT"),
        (EventMask::Q_OVERFLOW, "Q_OVERFLOW"),
        (EventMask::IGNORED, "IGNORED"),
        (
            EventMask::CLOSE_WRITE.union(EventMask::CLOSE_NOWRITE),
            "CLOSE",
        ),
        (EventMask::MOVE_SELF, "MOVE_SELF"),
        (EventMask::ISDIR, "ISDIR"),
    ];
    NAMES
        .iter()
        .filter(|(bits, _)| mask.intersects(*bits))
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(",")
}

fn bad(flag: &'static str, value: impl Into<String>, why: impl Into<String>) -> anyhow::Error {
    BadValue {
        flag,
        value: value.into(),
        why: why.into(),
    }
    .into()
}

/// The operations of `--ops FILE` then of the arguments, parsed; a bad one is refused
/// naming where it is.
fn operations(a: &WatchArgs) -> anyhow::Result<Vec<(String, Op)>> {
    let mut ops = Vec::new();
    if let Some(file) = &a.ops {
        let shown = file.display().to_string();
        let reader: Box<dyn BufRead> = if file.as_os_str() == "-" {
            Box::new(io::stdin().lock())
        } else {
            let f = std::fs::File::open(file)
                .map_err(|e| bad("--ops <FILE>", &shown, format!("cannot open it: {e}")))?;
            Box::new(io::BufReader::new(f))
        };
        for (n, line) in reader.lines().enumerate() {
            let line =
                line.map_err(|e| bad("--ops <FILE>", &shown, format!("cannot read it: {e}")))?;
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let op = parse_op(t)
                .map_err(|why| bad("--ops <FILE>", &shown, format!("line {}: {why}", n + 1)))?;
            ops.push((t.to_string(), op));
        }
    }
    for arg in &a.run {
        let op = parse_op(arg).map_err(|why| bad("[OP]...", arg.as_str(), why))?;
        ops.push((arg.trim().to_string(), op));
    }
    Ok(ops)
}

/// `uvfs watch [--from DIR] [-e EVENT,...] [--ops FILE] PATH... [-- OP...]`.
pub fn watch(a: WatchArgs) -> anyhow::Result<()> {
    if let Some(from) = &a.from {
        if !from.is_dir() {
            return Err(bad(
                "--from <DIR>",
                from.display().to_string(),
                "not a directory",
            ));
        }
    }
    let ops = operations(&a)?;
    let mut mask = WatchMask::empty();
    for e in &a.events {
        mask |= e.mask();
    }
    if a.events.is_empty() {
        mask = WatchMask::ALL_EVENTS;
    }

    let fs = Fs::new();
    if let Some(from) = &a.from {
        fs.import(from, "/")
            .with_context(|| format!("copying {} into the uvfs tree", from.display()))?;
    }
    let mut watcher = fs.watcher()?;
    let mut shown: HashMap<WatchDescriptor, String> = HashMap::new();
    for p in &a.paths {
        let wd = watcher.add(p, mask)?;
        let mut name = p.clone();
        if fs.metadata(p)?.is_dir() && !name.ends_with('/') {
            name.push('/');
        }
        shown.entry(wd).or_insert(name);
    }

    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut print = |watcher: &mut uvfs::fs::Watcher| -> anyhow::Result<()> {
        for e in watcher.try_read_events()? {
            let path = shown.get(&e.wd).map_or("-", String::as_str);
            write!(out, "{path} {}", event_names(e.mask))?;
            if let Some(name) = &e.name {
                write!(out, " {}", name.to_string_lossy())?;
            }
            writeln!(out)?;
        }
        out.flush()?;
        Ok(())
    };
    for (text, op) in &ops {
        let r = op.run(&fs);
        print(&mut watcher)?;
        r.with_context(|| format!("operation '{text}'"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_parse_with_their_text_kept_whole() {
        assert_eq!(
            parse_op("write /a  hello  world "),
            Ok(Op::Write("/a".into(), "hello  world".into()))
        );
        assert_eq!(
            parse_op("append /a"),
            Ok(Op::Append("/a".into(), "".into()))
        );
        assert_eq!(
            parse_op(" rename /a /b"),
            Ok(Op::Rename("/a".into(), "/b".into()))
        );
        assert_eq!(parse_op("chmod 0640 /a"), Ok(Op::Chmod(0o640, "/a".into())));
        assert!(parse_op("chmod 9 /a").unwrap_err().contains("octal"));
        assert!(parse_op("rename /a").unwrap_err().contains("two paths"));
        assert!(parse_op("create /a /b").unwrap_err().contains("one path"));
        assert!(parse_op("frobnicate /a")
            .unwrap_err()
            .contains("unknown operation 'frobnicate'"));
        assert!(parse_op("write").is_err());
        assert!(parse_op("").is_err());
    }

    #[test]
    fn close_events_also_say_close_and_directories_isdir() {
        assert_eq!(event_names(EventMask::CLOSE_WRITE), "CLOSE_WRITE,CLOSE");
        assert_eq!(
            event_names(EventMask::CLOSE_NOWRITE | EventMask::ISDIR),
            "CLOSE_NOWRITE,CLOSE,ISDIR"
        );
        assert_eq!(
            event_names(EventMask::CREATE | EventMask::ISDIR),
            "CREATE,ISDIR"
        );
        assert_eq!(event_names(EventMask::IGNORED), "IGNORED");
    }
}
