//! `fanotify(7)`: event bits, `fanotify_init(2)` and `fanotify_mark(2)` flags and
//! `struct fanotify_event_metadata` (include/uapi/linux/fanotify.h).

/// `FAN_ACCESS`: a file was read.
pub const FAN_ACCESS: u64 = 0x1;
/// `FAN_MODIFY`: a file was written.
pub const FAN_MODIFY: u64 = 0x2;
/// `FAN_ATTRIB` (needs a group reporting file ids: refused by uvfs).
pub const FAN_ATTRIB: u64 = 0x4;
/// `FAN_CLOSE_WRITE`: a file opened for writing was closed.
pub const FAN_CLOSE_WRITE: u64 = 0x8;
/// `FAN_CLOSE_NOWRITE`: a file not opened for writing was closed.
pub const FAN_CLOSE_NOWRITE: u64 = 0x10;
/// `FAN_OPEN`: a file was opened.
pub const FAN_OPEN: u64 = 0x20;
/// `FAN_MOVED_FROM` (file-id groups only).
pub const FAN_MOVED_FROM: u64 = 0x40;
/// `FAN_MOVED_TO` (file-id groups only).
pub const FAN_MOVED_TO: u64 = 0x80;
/// `FAN_CREATE` (file-id groups only).
pub const FAN_CREATE: u64 = 0x100;
/// `FAN_DELETE` (file-id groups only).
pub const FAN_DELETE: u64 = 0x200;
/// `FAN_DELETE_SELF` (file-id groups only).
pub const FAN_DELETE_SELF: u64 = 0x400;
/// `FAN_MOVE_SELF` (file-id groups only).
pub const FAN_MOVE_SELF: u64 = 0x800;
/// `FAN_OPEN_EXEC`: a file was opened to be executed (never, in uvfs: it has no exec).
pub const FAN_OPEN_EXEC: u64 = 0x1000;
/// `FAN_Q_OVERFLOW`: the queue overflowed.
pub const FAN_Q_OVERFLOW: u64 = 0x4000;
/// `FAN_FS_ERROR` (filesystem marks of file-id groups only).
pub const FAN_FS_ERROR: u64 = 0x8000;
/// `FAN_OPEN_PERM` (permission class groups only).
pub const FAN_OPEN_PERM: u64 = 0x1_0000;
/// `FAN_ACCESS_PERM` (permission class groups only).
pub const FAN_ACCESS_PERM: u64 = 0x2_0000;
/// `FAN_OPEN_EXEC_PERM` (permission class groups only).
pub const FAN_OPEN_EXEC_PERM: u64 = 0x4_0000;
/// `FAN_PRE_ACCESS` (pre-content class groups only).
pub const FAN_PRE_ACCESS: u64 = 0x10_0000;
/// `FAN_MNT_ATTACH` (mount namespace marks only).
pub const FAN_MNT_ATTACH: u64 = 0x100_0000;
/// `FAN_MNT_DETACH` (mount namespace marks only).
pub const FAN_MNT_DETACH: u64 = 0x200_0000;
/// `FAN_EVENT_ON_CHILD`: a directory's inode mark also gets its children's events.
pub const FAN_EVENT_ON_CHILD: u64 = 0x0800_0000;
/// `FAN_RENAME` (file-id groups only).
pub const FAN_RENAME: u64 = 0x1000_0000;
/// `FAN_ONDIR`: events about directories too.
pub const FAN_ONDIR: u64 = 0x4000_0000;
/// `FAN_CLOSE`: both close events.
pub const FAN_CLOSE: u64 = FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE;

/// `fanotify_init`: close the group's fd on exec.
pub const FAN_CLOEXEC: u32 = 0x1;
/// `fanotify_init`: non-blocking reads.
pub const FAN_NONBLOCK: u32 = 0x2;
/// `fanotify_init`: notification class (the default, 0).
pub const FAN_CLASS_NOTIF: u32 = 0x0;
/// `fanotify_init`: content class (permission events; refused by uvfs).
pub const FAN_CLASS_CONTENT: u32 = 0x4;
/// `fanotify_init`: pre-content class (refused by uvfs).
pub const FAN_CLASS_PRE_CONTENT: u32 = 0x8;
/// `fanotify_init`: no limit on queued events.
pub const FAN_UNLIMITED_QUEUE: u32 = 0x10;
/// `fanotify_init`: no limit on marks.
pub const FAN_UNLIMITED_MARKS: u32 = 0x20;
/// `fanotify_init`: audit permission decisions (refused by uvfs, which has no audit).
pub const FAN_ENABLE_AUDIT: u32 = 0x40;
/// `fanotify_init`: report a pidfd (refused by uvfs, which has no processes).
pub const FAN_REPORT_PIDFD: u32 = 0x80;
/// `fanotify_init`: report the thread id instead of the process id.
pub const FAN_REPORT_TID: u32 = 0x100;
/// `fanotify_init`: report file ids (refused by uvfs).
pub const FAN_REPORT_FID: u32 = 0x200;
/// `fanotify_init`: report directory file ids (refused by uvfs).
pub const FAN_REPORT_DIR_FID: u32 = 0x400;
/// `fanotify_init`: report names (refused by uvfs).
pub const FAN_REPORT_NAME: u32 = 0x800;
/// `fanotify_init`: report target file ids (refused by uvfs).
pub const FAN_REPORT_TARGET_FID: u32 = 0x1000;
/// `fanotify_init`: report fd errors in the fd field (refused by uvfs).
pub const FAN_REPORT_FD_ERROR: u32 = 0x2000;
/// `fanotify_init`: report mount ids (refused by uvfs).
pub const FAN_REPORT_MNT: u32 = 0x4000;

/// `fanotify_mark`: add to a mark's mask.
pub const FAN_MARK_ADD: u32 = 0x1;
/// `fanotify_mark`: take from a mark's mask.
pub const FAN_MARK_REMOVE: u32 = 0x2;
/// `fanotify_mark`: do not follow a final symbolic link.
pub const FAN_MARK_DONT_FOLLOW: u32 = 0x4;
/// `fanotify_mark`: the path must be a directory.
pub const FAN_MARK_ONLYDIR: u32 = 0x8;
/// `fanotify_mark`: mark the mount of the path.
pub const FAN_MARK_MOUNT: u32 = 0x10;
/// `fanotify_mark`: the mask is the mark's ignore mask.
pub const FAN_MARK_IGNORED_MASK: u32 = 0x20;
/// `fanotify_mark`: the ignore mask survives a modification of the file.
pub const FAN_MARK_IGNORED_SURV_MODIFY: u32 = 0x40;
/// `fanotify_mark`: remove every mark of the kind given.
pub const FAN_MARK_FLUSH: u32 = 0x80;
/// `fanotify_mark`: mark the filesystem of the path.
pub const FAN_MARK_FILESYSTEM: u32 = 0x100;
/// `fanotify_mark`: the mark does not pin its inode.
pub const FAN_MARK_EVICTABLE: u32 = 0x200;
/// `fanotify_mark`: the newer ignore mask (refused by uvfs).
pub const FAN_MARK_IGNORE: u32 = 0x400;
/// `fanotify_mark`: mark an inode (0).
pub const FAN_MARK_INODE: u32 = 0x0;

/// `fanotify_event_metadata::vers`.
pub const FANOTIFY_METADATA_VERSION: u8 = 3;
/// Size of `struct fanotify_event_metadata`.
pub const FAN_EVENT_METADATA_LEN: usize = 24;
/// `fd` of an event that carries none (an overflow).
pub const FAN_NOFD: i32 = -1;

/// One `struct fanotify_event_metadata`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FanotifyEvent {
    /// Bytes of this event (24: uvfs reports no extra information records).
    pub event_len: u32,
    /// `FANOTIFY_METADATA_VERSION`.
    pub vers: u8,
    /// 24.
    pub metadata_len: u16,
    /// Event bits.
    pub mask: u64,
    /// An fd open on the event's file, in the reader's table, or `FAN_NOFD`.
    pub fd: i32,
    /// Who caused the event (uvfs: 0, see docs/divergences.md).
    pub pid: i32,
}

impl FanotifyEvent {
    /// Appends the event as a read gives it.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.event_len.to_ne_bytes());
        out.push(self.vers);
        out.push(0);
        out.extend_from_slice(&self.metadata_len.to_ne_bytes());
        out.extend_from_slice(&self.mask.to_ne_bytes());
        out.extend_from_slice(&self.fd.to_ne_bytes());
        out.extend_from_slice(&self.pid.to_ne_bytes());
    }

    /// Parses what a read returned. Stops at a truncated event.
    pub fn parse_all(mut buf: &[u8]) -> Vec<FanotifyEvent> {
        let mut out = Vec::new();
        while buf.len() >= FAN_EVENT_METADATA_LEN {
            let u32_at =
                |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
            let event_len = u32_at(0);
            let mut mask = [0u8; 8];
            mask.copy_from_slice(&buf[8..16]);
            out.push(FanotifyEvent {
                event_len,
                vers: buf[4],
                metadata_len: u16::from_ne_bytes([buf[6], buf[7]]),
                mask: u64::from_ne_bytes(mask),
                fd: u32_at(16) as i32,
                pid: u32_at(20) as i32,
            });
            let len = (event_len as usize).max(FAN_EVENT_METADATA_LEN);
            if len > buf.len() {
                break;
            }
            buf = &buf[len..];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_in_24_bytes() {
        let e = FanotifyEvent {
            event_len: 24,
            vers: FANOTIFY_METADATA_VERSION,
            metadata_len: 24,
            mask: FAN_MODIFY | FAN_ONDIR,
            fd: 7,
            pid: 0,
        };
        let mut out = Vec::new();
        e.encode_into(&mut out);
        e.encode_into(&mut out);
        assert_eq!(out.len(), 48);
        assert_eq!(FanotifyEvent::parse_all(&out), vec![e, e]);
    }
}
