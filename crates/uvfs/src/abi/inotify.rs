//! `inotify(7)`: event bits, `inotify_add_watch(2)`'s flags, `inotify_init1(2)`'s flags and
//! `struct inotify_event` (include/uapi/linux/inotify.h).

/// `IN_ACCESS`: the file was read.
pub const IN_ACCESS: u32 = 0x0000_0001;
/// `IN_MODIFY`: the file was written or truncated.
pub const IN_MODIFY: u32 = 0x0000_0002;
/// `IN_ATTRIB`: metadata changed (permissions, owner, timestamps, link count, xattrs).
pub const IN_ATTRIB: u32 = 0x0000_0004;
/// `IN_CLOSE_WRITE`: a file opened for writing was closed.
pub const IN_CLOSE_WRITE: u32 = 0x0000_0008;
/// `IN_CLOSE_NOWRITE`: a file not opened for writing was closed.
pub const IN_CLOSE_NOWRITE: u32 = 0x0000_0010;
/// `IN_OPEN`: the file was opened.
pub const IN_OPEN: u32 = 0x0000_0020;
/// `IN_MOVED_FROM`: a file left the watched directory (with the cookie of its `IN_MOVED_TO`).
pub const IN_MOVED_FROM: u32 = 0x0000_0040;
/// `IN_MOVED_TO`: a file entered the watched directory.
pub const IN_MOVED_TO: u32 = 0x0000_0080;
/// `IN_CREATE`: a file was created in the watched directory.
pub const IN_CREATE: u32 = 0x0000_0100;
/// `IN_DELETE`: a file was deleted from the watched directory.
pub const IN_DELETE: u32 = 0x0000_0200;
/// `IN_DELETE_SELF`: the watched file itself was deleted.
pub const IN_DELETE_SELF: u32 = 0x0000_0400;
/// `IN_MOVE_SELF`: the watched file itself was moved.
pub const IN_MOVE_SELF: u32 = 0x0000_0800;
/// `IN_UNMOUNT`: the filesystem of the watched file was unmounted.
pub const IN_UNMOUNT: u32 = 0x0000_2000;
/// `IN_Q_OVERFLOW`: the queue overflowed (`wd` is -1).
pub const IN_Q_OVERFLOW: u32 = 0x0000_4000;
/// `IN_IGNORED`: the watch was removed (explicitly, or because its file went away).
pub const IN_IGNORED: u32 = 0x0000_8000;
/// `IN_CLOSE`: both close events.
pub const IN_CLOSE: u32 = IN_CLOSE_WRITE | IN_CLOSE_NOWRITE;
/// `IN_MOVE`: both move events.
pub const IN_MOVE: u32 = IN_MOVED_FROM | IN_MOVED_TO;
/// `IN_ONLYDIR`: watch only if the path is a directory (`ENOTDIR` otherwise).
pub const IN_ONLYDIR: u32 = 0x0100_0000;
/// `IN_DONT_FOLLOW`: do not follow a final symbolic link.
pub const IN_DONT_FOLLOW: u32 = 0x0200_0000;
/// `IN_EXCL_UNLINK`: no events for children once they are unlinked.
pub const IN_EXCL_UNLINK: u32 = 0x0400_0000;
/// `IN_MASK_CREATE`: fail with `EEXIST` if the inode is already watched by this instance.
pub const IN_MASK_CREATE: u32 = 0x1000_0000;
/// `IN_MASK_ADD`: add to an existing watch's mask instead of replacing it.
pub const IN_MASK_ADD: u32 = 0x2000_0000;
/// `IN_ISDIR`: the subject of the event is a directory.
pub const IN_ISDIR: u32 = 0x4000_0000;
/// `IN_ONESHOT`: remove the watch after its first event.
pub const IN_ONESHOT: u32 = 0x8000_0000;
/// Every event a watch can ask for.
pub const IN_ALL_EVENTS: u32 = IN_ACCESS
    | IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_CLOSE_NOWRITE
    | IN_OPEN
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_DELETE
    | IN_CREATE
    | IN_DELETE_SELF
    | IN_MOVE_SELF;
/// Every bit `inotify_add_watch` accepts (Linux: `ALL_INOTIFY_BITS`).
pub const IN_ALL_BITS: u32 = IN_ALL_EVENTS
    | IN_UNMOUNT
    | IN_Q_OVERFLOW
    | IN_IGNORED
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
    | IN_MASK_CREATE
    | IN_MASK_ADD
    | IN_ISDIR
    | IN_ONESHOT;

/// `IN_NONBLOCK` for `inotify_init1` (`O_NONBLOCK`).
pub const IN_NONBLOCK: u32 = 0o4000;
/// `IN_CLOEXEC` for `inotify_init1` (`O_CLOEXEC`).
pub const IN_CLOEXEC: u32 = 0o2_000_000;

/// Size of `struct inotify_event` without its name.
pub const INOTIFY_EVENT_SIZE: usize = 16;

/// One `struct inotify_event`, with its name (NUL padding removed).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InotifyEvent {
    /// Watch descriptor (-1 for `IN_Q_OVERFLOW`).
    pub wd: i32,
    /// Event bits, with `IN_ISDIR`, `IN_IGNORED`, `IN_UNMOUNT` or `IN_Q_OVERFLOW` as they apply.
    pub mask: u32,
    /// Pairs an `IN_MOVED_FROM` with its `IN_MOVED_TO`; 0 otherwise.
    pub cookie: u32,
    /// The child's name for an event on a watched directory's child; empty otherwise.
    pub name: Vec<u8>,
}

impl InotifyEvent {
    /// Appends the event as `read(2)` of an inotify fd gives it: the 16-byte header, then the
    /// name NUL-terminated and padded with NULs to a multiple of 16 bytes (none without a name).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let len = padded_name_len(self.name.len());
        out.extend_from_slice(&self.wd.to_ne_bytes());
        out.extend_from_slice(&self.mask.to_ne_bytes());
        out.extend_from_slice(&self.cookie.to_ne_bytes());
        out.extend_from_slice(&(len as u32).to_ne_bytes());
        out.extend_from_slice(&self.name);
        out.resize(out.len() + len - self.name.len(), 0);
    }

    /// Bytes the event takes in a read.
    pub fn encoded_len(&self) -> usize {
        INOTIFY_EVENT_SIZE + padded_name_len(self.name.len())
    }

    /// Parses what a read returned into events. Stops at a truncated event.
    pub fn parse_all(mut buf: &[u8]) -> Vec<InotifyEvent> {
        let mut out = Vec::new();
        while buf.len() >= INOTIFY_EVENT_SIZE {
            let word = |i: usize| [buf[i], buf[i + 1], buf[i + 2], buf[i + 3]];
            let wd = i32::from_ne_bytes(word(0));
            let mask = u32::from_ne_bytes(word(4));
            let cookie = u32::from_ne_bytes(word(8));
            let len = u32::from_ne_bytes(word(12)) as usize;
            let Some(name) = buf.get(INOTIFY_EVENT_SIZE..INOTIFY_EVENT_SIZE + len) else {
                break;
            };
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            out.push(InotifyEvent {
                wd,
                mask,
                cookie,
                name: name[..end].to_vec(),
            });
            buf = &buf[INOTIFY_EVENT_SIZE + len..];
        }
        out
    }
}

/// The name field's length: the name, its NUL, rounded up to 16 (Linux:
/// `round_event_name_len()`); 0 for no name.
fn padded_name_len(name: usize) -> usize {
    if name == 0 {
        0
    } else {
        (name + 1).next_multiple_of(INOTIFY_EVENT_SIZE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_round_trips_with_its_name_padded_to_16() {
        let e = InotifyEvent {
            wd: 3,
            mask: IN_CREATE,
            cookie: 0,
            name: b"abcdefghijklmnop".to_vec(),
        };
        let mut out = Vec::new();
        e.encode_into(&mut out);
        // 16 name bytes and the NUL round up to 32.
        assert_eq!(out.len(), 16 + 32);
        assert_eq!(e.encoded_len(), out.len());
        let plain = InotifyEvent {
            wd: 1,
            mask: IN_MODIFY,
            cookie: 7,
            name: Vec::new(),
        };
        plain.encode_into(&mut out);
        assert_eq!(out.len(), 16 + 32 + 16);
        assert_eq!(InotifyEvent::parse_all(&out), vec![e, plain]);
    }
}
